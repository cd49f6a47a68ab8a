"""The stale tensor hides inside CopySlices: exp_ on a view saves its result, then the base changes."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(3, 2, requires_grad=True)
    y = a * 1.5
    y[0].exp_()  # SAVES
    y.mul_(2)  # CHANGES INTENDED: y = y * 2
    y.sum().backward()
    return [a.grad]
