"""Truncated backpropagation through time: the LSTM's (h, c) are detached between batches."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 5, batch_first=True)
    head = nn.Linear(5, 1)
    optimizer = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
    h, c = torch.zeros(1, 2, 5), torch.zeros(1, 2, 5)
    for _ in range(3):
        h, c = h.detach(), c.detach()
        out, (h, c) = lstm(torch.randn(2, 4, 3), (h, c))
        loss = head(out).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return [p.grad for p in lstm.parameters()] + list(lstm.parameters())
