"""The recurrence with a list and torch.stack instead of f[i] = ... into a preallocated tensor."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.tensor(0.9, requires_grad=True)
    values = [torch.tensor(1.0)]
    for _ in range(1, 5):
        values.append(torch.tanh(values[-1] * w))
    torch.stack(values).sum().backward()
    return [w.grad]
