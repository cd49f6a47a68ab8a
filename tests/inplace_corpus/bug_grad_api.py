"""torch.autograd.grad instead of backward(): the same error, the same explanation."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(3, requires_grad=True)
    c = torch.cos(a)
    d = c * c  # SAVES
    c.fill_(0.5)  # CHANGES INTENDED_BEFORE: c = c.clone()
    return list(torch.autograd.grad(d.sum(), [a]))
