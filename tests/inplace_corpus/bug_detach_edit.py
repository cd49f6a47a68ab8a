"""Editing through detach(): it shares the version counter, so autograd notices."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    s = torch.sigmoid(a)  # SAVES
    s.detach().clamp_(max=0.5)  # CHANGES INTENDED_BEFORE: s = s.clone()
    s.sum().backward()
    return [a.grad]
