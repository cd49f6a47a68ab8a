"""A custom autograd.Function saves its input with ctx.save_for_backward; the input changes later."""
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def run():
    torch.manual_seed(0)
    a = torch.randn(4, requires_grad=True)
    h = a * 2
    y = Square.apply(h)  # SAVES
    h.sub_(1)  # CHANGES INTENDED: h = h - 1
    y.sum().backward()
    return [a.grad]
