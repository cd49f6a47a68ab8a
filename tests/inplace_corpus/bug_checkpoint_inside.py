"""The stale tensor is saved inside a checkpointed block's output path, changed after the block."""
import torch
from torch.utils.checkpoint import checkpoint


def block(x, w):
    return torch.sigmoid(x * w)


def run():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    h = checkpoint(block, x, w, use_reentrant=False)
    g = h * w  # SAVES
    h.mul_(2)  # CHANGES INTENDED: h = h.mul(2)
    g.sum().backward()
    return [w.grad]
