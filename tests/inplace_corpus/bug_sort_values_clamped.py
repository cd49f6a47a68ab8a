"""sort returns new tensors (values, indices); pow saved values; values are clamped in place."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(7, requires_grad=True)
    values, indices = torch.sort(a)
    out = values.pow(3)  # SAVES
    values.clamp_(min=0)  # CHANGES INTENDED: values = values.clamp(min=0)
    out.sum().backward()
    return [a.grad]
