"""Two running buffers used on alternate iterations: the even buffer, saved by mul in iteration 0, is halved in
place in iteration 1, after the saving line ran again (for the odd buffer)."""
import torch


def run():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    even, odd = torch.ones(3), torch.full((3,), 2.0)
    products = []
    for i in range(3):
        row = even if i % 2 == 0 else odd
        products.append(row * w)  # SAVES
        if i == 1:
            even.div_(2.0)  # CHANGES INTENDED: even = even / 2.0
    sum(p.sum() for p in products).backward()
    return [w.grad]
