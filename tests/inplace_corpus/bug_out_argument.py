"""out= writes into a tensor that sigmoid saved (the write runs under no_grad, as out= needs)."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(6, requires_grad=True)
    s = torch.sigmoid(a)  # SAVES
    with torch.no_grad():  # INTENDED_BEFORE: s = s.clone()
        torch.mul(a, 2, out=s)  # CHANGES
    s.sum().backward()
    return [a.grad]
