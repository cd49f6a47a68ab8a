"""A custom Function saves its own output; the output is then changed in place."""
import torch


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


def run():
    torch.manual_seed(0)
    a = torch.randn(3, requires_grad=True)
    y = Exp.apply(a)  # SAVES
    y.mul_(2)  # CHANGES INTENDED: y = y * 2
    y.sum().backward()
    return [a.grad]
