"""An edit through a view: h[0] += 1 changes h, which exp saved."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(3, 4, requires_grad=True)
    h = torch.exp(a)  # SAVES
    h[0] += 1  # CHANGES INTENDED_BEFORE: h = h.clone()
    h.sum().backward()
    return [a.grad]
