"""torch._foreach_mul_ over a list that names one buffer twice and two views of another: version counters move
once per entry (the watcher must move them the same way), and nothing autograd saved is touched."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    y = w.exp()
    a, b = torch.ones(4), torch.ones(4)
    torch._foreach_mul_([a, a, b[:2], b[2:]], 2.0)
    (y * a * b).sum().backward()
    return [w.grad, torch.tensor([float(a._version), float(b._version)])]
