"""Non-reentrant checkpointing with no in-place change."""
import torch
from torch.utils.checkpoint import checkpoint


def block(x, w):
    return torch.tanh(x @ w).exp()


def run():
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    h = checkpoint(block, torch.randn(2, 3), w, use_reentrant=False)
    h.sum().backward()
    return [w.grad]
