"""A GRUCell unrolled over time steps inside a batch loop; the hidden state is carried between batches and the
graph kept with retain_graph=True, so the next batch's backward reaches a graph whose weights were updated.
Detaching between time steps would cut backpropagation through time: the detach belongs between batches."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    cell = nn.GRUCell(2, 3)
    optimizer = torch.optim.SGD(cell.parameters(), lr=0.1)
    h = torch.zeros(1, 3)
    for batch in range(2):
        sequence = torch.randn(4, 1, 2)
        for t in range(4):
            h = cell(sequence[t], h)  # SAVES
        loss = h.pow(2).sum()
        optimizer.zero_grad()
        loss.backward(retain_graph=True)  # INTENDED_AFTER: h = h.detach()
        optimizer.step()  # CHANGES
    return [p.grad for p in cell.parameters()] + list(cell.parameters())
