"""A torch._foreach_exp output (its node hides what it saved from Python) changed after an unrelated write."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(4, requires_grad=True)
    ys = torch._foreach_exp([a * 1, a * 2])  # SAVES
    counts = torch.zeros(3)
    counts.add_(1)
    ys[0].mul_(2)  # CHANGES INTENDED: ys = list(ys); ys[0] = ys[0] * 2
    (ys[0] + ys[1]).sum().backward()
    return [a.grad]
