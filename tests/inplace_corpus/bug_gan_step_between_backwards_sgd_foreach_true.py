"""A GAN-style step: the discriminator's optimizer steps between two backward calls through one graph."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 3))
    discriminator = nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))
    optimizer_d = torch.optim.SGD(discriminator.parameters(), lr=0.1, momentum=0.9, foreach=True)
    fake = generator(torch.randn(8, 2))
    score = discriminator(fake)  # SAVES
    loss_d = nn.functional.softplus(score).mean()
    loss_d.backward(retain_graph=True)
    optimizer_d.step()  # CHANGES INTENDED_AFTER: score = discriminator(fake)
    loss_g = nn.functional.softplus(-score).mean()
    loss_g.backward()
    return [p.grad for p in generator.parameters()]
