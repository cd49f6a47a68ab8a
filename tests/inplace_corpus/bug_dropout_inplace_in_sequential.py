"""A classifier head whose nn.Dropout(inplace=True) overwrites the ReLU output that ReLU's backward needs."""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(6, 8),
            nn.ReLU(),
            nn.Dropout(0.5, inplace=True),  # INTENDED: nn.Dropout(0.5),
            nn.Linear(8, 2),
        )

    def forward(self, x):
        return self.main(x)  # SAVES CHANGES


def run():
    torch.manual_seed(0)
    classifier = Classifier()
    loss = classifier(torch.randn(4, 6)).pow(2).mean()
    loss.backward()
    return [p.grad for p in classifier.parameters()]
