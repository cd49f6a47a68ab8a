"""Multi-output ops (unbind, sort, split) read, never changed in place."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(3, 4, requires_grad=True)
    rows = a.unbind(0)
    values, _ = torch.sort(a, dim=1)
    left, right = a.split(2, dim=1)
    (rows[0] * rows[1]).sum().backward(retain_graph=True)
    (values.pow(2).sum() + (left * right).sum()).backward()
    return [a.grad]
