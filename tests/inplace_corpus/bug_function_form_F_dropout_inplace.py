"""F.dropout(..., inplace=True) on a sigmoid's output."""
import torch
import torch.nn.functional as F


def run():
    torch.manual_seed(0)
    w = torch.randn(5, 5, requires_grad=True)
    h = torch.sigmoid(torch.randn(4, 5) @ w)  # SAVES
    h = F.dropout(h, 0.5, training=True, inplace=True)  # CHANGES INTENDED: h = F.dropout(h, 0.5, training=True)
    h.sum().backward()
    return [w.grad]
