"""torch.relu_(h) on a sigmoid's output: the function form of an in-place op."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, 4, requires_grad=True)
    h = torch.sigmoid(torch.randn(2, 3) @ w)  # SAVES
    torch.relu_(h)  # CHANGES INTENDED: h = torch.relu(h)
    h.sum().backward()
    return [w.grad]
