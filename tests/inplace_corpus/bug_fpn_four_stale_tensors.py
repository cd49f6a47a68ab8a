"""A small feature pyramid whose top-down pathway adds into four lateral maps in place (c_ffm += ...): each
lateral map went through a sigmoid gate first, whose backward needs it, so four saved tensors are stale."""
import torch
import torch.nn.functional as F
from torch import nn


class TinyFPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.down = nn.ModuleList([nn.Conv2d(4, 4, 3, stride=2, padding=1) for _ in range(3)])
        self.lateral = nn.ModuleList([nn.Conv2d(4, 4, 1) for _ in range(4)])

    def forward(self, x):
        c2 = self.stem(x)
        c3 = self.down[0](c2)
        c4 = self.down[1](c3)
        c5 = self.down[2](c4)
        c5_ffm = torch.sigmoid(self.lateral[3](c5))  # SAVES
        c4_ffm = torch.sigmoid(self.lateral[2](c4))  # SAVES
        c3_ffm = torch.sigmoid(self.lateral[1](c3))  # SAVES
        c2_ffm = torch.sigmoid(self.lateral[0](c2))  # SAVES
        c5_ffm += 1.0  # CHANGES INTENDED: c5_ffm = c5_ffm + 1.0
        c4_ffm += F.interpolate(c5_ffm, scale_factor=2.0)  # CHANGES INTENDED: c4_ffm = c4_ffm + F.interpolate(c5_ffm, scale_factor=2.0)
        c3_ffm += F.interpolate(c4_ffm, scale_factor=2.0)  # CHANGES INTENDED: c3_ffm = c3_ffm + F.interpolate(c4_ffm, scale_factor=2.0)
        c2_ffm += F.interpolate(c3_ffm, scale_factor=2.0)  # CHANGES INTENDED: c2_ffm = c2_ffm + F.interpolate(c3_ffm, scale_factor=2.0)
        return [c2_ffm, c3_ffm, c4_ffm, c5_ffm]


def run():
    torch.manual_seed(0)
    fpn = TinyFPN()
    maps = fpn(torch.randn(1, 1, 16, 16))
    sum(m.pow(2).mean() for m in maps).backward()
    return [p.grad for p in fpn.parameters()]
