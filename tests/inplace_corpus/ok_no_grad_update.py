"""A hand-written SGD update under no_grad between two separate forward passes."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    grads = []
    for _ in range(3):
        loss = (torch.sin(w) * w).sum()
        loss.backward()
        grads.append(w.grad.clone())
        with torch.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
    return grads + [w]
