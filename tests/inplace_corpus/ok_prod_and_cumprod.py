"""prod and cumprod, whose backward formulas take another path under a dispatch mode: the watcher must not
change their gradients by a single bit."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(4, 5, requires_grad=True)
    (a.prod() + a.prod(1).sum() + a.cumprod(0).sum()).backward()
    return [a.grad]
