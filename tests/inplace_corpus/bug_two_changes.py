"""Two in-place changes after the save: both lines are named, in order."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(4, requires_grad=True)
    e = a.exp()  # SAVES
    e.add_(1)  # CHANGES INTENDED: e = e + 1
    e.div_(2)  # CHANGES
    e.sum().backward()
    return [a.grad]
