"""clone() before the in-place change: the change goes into the copy."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(5, requires_grad=True)
    e = a.exp()
    f = e.clone()
    f.add_(1)
    (e.sum() + f.sum()).backward()
    return [a.grad]
