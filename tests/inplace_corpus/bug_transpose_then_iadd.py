"""A linear-attention style block: transpose for a 1-d convolution, transpose back, then x += conv output. The
convolution saved the transposed view of x, and x += ... writes into the same memory."""
import torch
from torch import nn


class ConvMixer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv1d(width, width, 3, padding=1)

    def forward(self, x):
        x = x.transpose(1, 2)
        x_conv = self.conv(x)  # SAVES
        x = x.transpose(1, 2)
        x += x_conv.transpose(1, 2)  # CHANGES INTENDED: x = x + x_conv.transpose(1, 2)
        return x


def run():
    torch.manual_seed(0)
    embed = nn.Linear(3, 4)
    mixer = ConvMixer(4)
    mixer(embed(torch.randn(2, 5, 3))).pow(2).sum().backward()
    return [p.grad for p in mixer.parameters()] + [p.grad for p in embed.parameters()]
