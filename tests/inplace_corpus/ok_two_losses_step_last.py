"""Two losses through one graph, step() after both backward calls."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1, foreach=True)
    h = torch.sin(w) @ torch.randn(3, 2)
    h.pow(2).mean().backward(retain_graph=True)
    h.abs().mean().backward()
    optimizer.step()
    return [w.grad, w]
