"""A recurrence written into a preallocated tensor: f[i] = ... changes f, whose earlier rows mul saved."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.tensor(0.9, requires_grad=True)
    f = torch.zeros(5)
    f[0] = 1.0
    for i in range(1, 5):
        previous = f[i - 1] * w  # SAVES
        f[i] = torch.tanh(previous)  # CHANGES INTENDED_BEFORE: f = f.clone()
    f.sum().backward()
    return [w.grad]
