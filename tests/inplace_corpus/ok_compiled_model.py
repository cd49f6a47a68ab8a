"""A torch.compile'd model (AOTAutograd) trained for two steps: the watcher must leave it compiled."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 1))
    compiled = torch.compile(model, backend="aot_eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    names = []
    for _ in range(2):
        optimizer.zero_grad()
        out = compiled(torch.randn(3, 4))
        names.append(out.grad_fn.name())
        out.pow(2).mean().backward()
        optimizer.step()
    assert names == ["CompiledFunctionBackward"] * 2, names
    return [p.grad for p in model.parameters()] + list(model.parameters())
