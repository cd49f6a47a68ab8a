"""unbind's outputs are views of the batch; mul saved them; the batch is then changed in place."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    batch = torch.randn(2, 3)
    first, second = batch.unbind(0)
    p = (first * w) * second  # SAVES
    batch.add_(1)  # CHANGES INTENDED: batch = batch + 1
    p.sum().backward()
    return [w.grad]
