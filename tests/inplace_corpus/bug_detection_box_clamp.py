"""Detection-head style decoding: boxes from exp(deltas), then the x coordinates clamped in place through a view."""
import torch


def run():
    torch.manual_seed(0)
    deltas = torch.randn(6, 2, requires_grad=True)
    anchors = torch.rand(6, 2) + 0.5
    boxes = torch.exp(deltas) * anchors
    sizes = torch.exp(deltas)  # SAVES
    widths = sizes[:, 0]  # INTENDED_BEFORE: sizes = sizes.clone()
    widths.clamp_(max=2.0)  # CHANGES
    (boxes.sum() + sizes.sum()).backward()
    return [deltas.grad]
