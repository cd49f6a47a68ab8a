"""A small CNN with BatchNorm (its running statistics change in place) and three SGD steps."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(4 * 4 * 4, 3),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(2, 1, 8, 8)), torch.tensor([0, 2])).backward()
        optimizer.step()
    return [p.grad for p in model.parameters()] + list(model.parameters()) + [model[1].running_mean]
