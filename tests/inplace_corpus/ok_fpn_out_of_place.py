"""The feature pyramid with its top-down additions out of place."""
import torch
import torch.nn.functional as F
from torch import nn


def run():
    torch.manual_seed(0)
    stem = nn.Conv2d(1, 4, 3, padding=1)
    down = nn.Conv2d(4, 4, 3, stride=2, padding=1)
    lateral = nn.ModuleList([nn.Conv2d(4, 4, 1) for _ in range(2)])
    c2 = stem(torch.randn(1, 1, 8, 8))
    c3 = down(c2)
    c3_ffm = torch.sigmoid(lateral[1](c3))
    c2_ffm = torch.sigmoid(lateral[0](c2))
    c2_ffm = c2_ffm + F.interpolate(c3_ffm, scale_factor=2.0)
    (c2_ffm.pow(2).mean() + c3_ffm.pow(2).mean()).backward()
    return [p.grad for p in [*stem.parameters(), *down.parameters(), *lateral.parameters()]]
