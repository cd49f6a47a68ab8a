"""Two losses share one forward pass; step() runs after the first backward (functional style)."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    h = torch.sin(w) @ torch.randn(3, 2)  # SAVES
    first = h.pow(2).mean()
    second = h.abs().mean()
    first.backward(retain_graph=True)
    optimizer.step()  # CHANGES INTENDED_AFTER: h = torch.sin(w) @ torch.randn(3, 2); second = h.abs().mean()
    second.backward()
    return [w.grad]
