"""A torch.compile'd block (AOTAutograd, so its backward is one compiled node) whose output, which that node saved,
is then changed in place: the watcher cannot see inside the compiled code, and names the line that called it."""
import torch


@torch.compile(backend="aot_eager")
def gate(t):
    return torch.exp(t)


def run():
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    g = gate(w * 0.5)  # SAVES
    g.add_(1)  # CHANGES INTENDED: g = g + 1
    g.sum().backward()
    return [w.grad]
