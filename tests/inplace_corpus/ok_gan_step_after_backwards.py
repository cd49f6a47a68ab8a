"""The GAN step done right: the discriminator sees fake.detach(), the generator a fresh forward."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 3))
    discriminator = nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.2), nn.Linear(4, 1))
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=0.01, foreach=True)
    optimizer_g = torch.optim.Adam(generator.parameters(), lr=0.01, foreach=False)
    for _ in range(2):
        fake = generator(torch.randn(8, 2))
        loss_d = nn.functional.softplus(discriminator(fake.detach())).mean()
        optimizer_d.zero_grad()
        loss_d.backward()
        optimizer_d.step()
        loss_g = nn.functional.softplus(-discriminator(fake)).mean()
        optimizer_g.zero_grad()
        loss_g.backward()
        optimizer_g.step()
    return [p.grad for p in generator.parameters()] + list(generator.parameters())
