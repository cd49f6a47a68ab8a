"""Changing a detached copy (clone) never touches what autograd saved."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    s = torch.sigmoid(a)
    shown = s.detach().clone()
    shown.clamp_(max=0.5)
    s.sum().backward()
    return [a.grad, shown]
