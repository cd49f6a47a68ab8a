"""torch.autograd.grad, and out= into a fresh buffer nothing saved."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(3, requires_grad=True)
    buffer = torch.empty(3)
    torch.mul(a.detach(), 2, out=buffer)
    d = torch.cos(a) * buffer
    return list(torch.autograd.grad(d.sum(), [a]))
