"""split's pieces are views of the data; mul saved one piece; the data is scaled in place."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(2, requires_grad=True)
    data = torch.randn(6)
    pieces = data.split(2)
    q = pieces[0] * w  # SAVES
    data.mul_(3)  # CHANGES INTENDED: data = data * 3
    q.sum().backward()
    return [w.grad]
