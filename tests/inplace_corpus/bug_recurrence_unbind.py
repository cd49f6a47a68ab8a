"""A recurrence over the rows from unbind (a multi-output op): the rows are views of state."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    state = torch.ones(4, 3) * 1.0
    rows = state.unbind(0)
    total = (rows[0] * w).sum()  # SAVES
    state[1:] = state[1:] * 0.5  # CHANGES INTENDED_BEFORE: state = state.clone()
    total.backward()
    return [w.grad]
