"""A language-model loop that carries the LSTM's (h, c) from one batch to the next without detaching it, and keeps
each batch's graph with retain_graph=True: the second batch's backward reaches the first batch's graph, whose
saved weights the optimizer has changed since."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 5, batch_first=True)
    head = nn.Linear(5, 1)
    optimizer = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
    h, c = torch.zeros(1, 2, 5), torch.zeros(1, 2, 5)
    batches = [torch.randn(2, 4, 3) for _ in range(3)]
    for x in batches:
        out, (h, c) = lstm(x, (h, c))  # SAVES INTENDED_BEFORE: h, c = h.detach(), c.detach()
        loss = head(out).pow(2).mean()
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()  # CHANGES
    return [p.grad for p in lstm.parameters()] + list(lstm.parameters())
