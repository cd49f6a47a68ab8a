"""A checkpointed block (use_reentrant=False), then exp on its output, then an in-place change."""
import torch
from torch.utils.checkpoint import checkpoint


def block(x, w):
    return torch.tanh(x @ w)


def run():
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    h = checkpoint(block, torch.randn(2, 3), w, use_reentrant=False)
    e = h.exp()  # SAVES
    e.add_(0.5)  # CHANGES INTENDED: e = e.add(0.5)
    e.sum().backward()
    return [w.grad]
