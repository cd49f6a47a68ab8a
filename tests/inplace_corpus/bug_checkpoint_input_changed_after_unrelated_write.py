"""A checkpointed function's input changed after the checkpoint, with an unrelated write in between: the
explanation must name the write into the input, not the first write after the checkpoint."""
import torch
from torch.utils.checkpoint import checkpoint


def run():
    torch.manual_seed(0)
    x = torch.randn(4, requires_grad=True)
    h = x * 2
    y = checkpoint(lambda t: t.exp() * t, h, use_reentrant=False)  # SAVES
    counts = torch.zeros(3)
    counts.add_(1)
    h.add_(1)  # CHANGES INTENDED: h = h + 1
    y.sum().backward()
    return [x.grad]
