"""copy_ into a saved tensor."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(2, 3, requires_grad=True)
    b = a * 3
    p = b.pow(2)  # SAVES
    b.copy_(torch.ones(2, 3))  # CHANGES INTENDED_BEFORE: b = b.clone()
    p.sum().backward()
    return [a.grad]
