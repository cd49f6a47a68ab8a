"""A view of a view changed in place (CopySlices on the base): the saved result of tanh is stale."""
import torch


def run():
    torch.manual_seed(0)
    a = torch.randn(4, 3, requires_grad=True)
    t = torch.tanh(a)  # SAVES
    t.view(-1)[::2].zero_()  # CHANGES INTENDED_BEFORE: t = t.clone()
    t.sum().backward()
    return [a.grad]
