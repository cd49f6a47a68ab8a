"""Record the CUDA caching allocator's own snapshots that chapter 6's pictures draw (needs a GPU).

    python .ci/record_allocator_snapshots.py notebooks/data/h100_allocator_snapshots.json

Two scenes: one tensor of 100,000,000 float32 after `empty_cache()` (one segment, one block, the tensor in it), and
chapter 6's MLP (256-1024-1024-10, batch 512) for two Adam training steps, each recorded with
`torch.cuda.memory._record_memory_history` (no stacks) and followed by `torch.cuda.memory._snapshot()`. Only the
fields the pictures use are kept (segments: address, total size, type, stream, blocks: size, requested size, state;
the trace: action, address, size), with the device, torch version and date under "recorded".
"""

import datetime
import json
import sys

import torch
import torch.nn.functional as F
from torch import nn

out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}


def segs(snapshot):
    return [
        {
            "address": s["address"],
            "total_size": s["total_size"],
            "segment_type": s["segment_type"],
            "stream": s["stream"],
            "blocks": [
                {"size": b["size"], "requested_size": b.get("requested_size", 0), "state": b["state"]}
                for b in s["blocks"]
            ],
        }
        for s in snapshot["segments"]
    ]


def trace(snapshot):
    ev = []
    for e in snapshot["device_traces"][0]:
        ev.append({"action": e["action"], "addr": e["addr"], "size": e["size"]})
    return ev


# 1. one tensor of 100,000,000 float32
torch.cuda.empty_cache()
torch.cuda.synchronize()
free0, total = torch.cuda.mem_get_info()
a0, r0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
torch.cuda.memory._record_memory_history(max_entries=100_000, context=None, stacks="python")
x = torch.empty(100_000_000, device="cuda")
torch.cuda.synchronize()
free1, _ = torch.cuda.mem_get_info()
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
out["one_tensor"] = {
    "nbytes": x.untyped_storage().nbytes(),
    "allocated": torch.cuda.memory_allocated() - a0,
    "reserved": torch.cuda.memory_reserved() - r0,
    "driver": free0 - free1,
    "total": total,
    "segments": segs(snap),
    "trace": trace(snap),
}
del x
torch.cuda.empty_cache()


# 2. chapter 6's MLP: two training steps with Adam, history recorded
def make_mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


model = make_mlp().cuda()
torch.manual_seed(1)
inputs = torch.randn(512, 256).cuda()
targets = torch.randint(0, 10, (512,)).cuda()
adam = torch.optim.Adam(model.parameters(), lr=1e-3)


def train_step():
    adam.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    adam.step()


# step_1 is the first step: it makes the cuBLAS workspaces, the gradients and Adam state; step_2 reuses them
torch.cuda.synchronize()
steps = {}
for name in ("step_1", "step_2"):
    torch.cuda.synchronize()
    a0 = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=100_000, context=None, stacks="python")
    train_step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    steps[name] = {
        "allocated_before": a0,
        "allocated_after": torch.cuda.memory_allocated(),
        "peak": torch.cuda.max_memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
        "segments": segs(snap),
        "trace": trace(snap),
    }
out["mlp"] = steps
out["mlp_parts"] = {
    "parameters": sum(p.nbytes for p in model.parameters()),
    "gradients": sum(p.grad.nbytes for p in model.parameters()),
    "adam": sum(s.nbytes for st in adam.state.values() for s in st.values() if torch.is_tensor(s)),
}
out = {"recorded": f"{out['device']}, torch {out['torch']}, {datetime.date.today()}", **out}
with open(sys.argv[1], "w") as file:
    json.dump(out, file, indent=1)
print(
    "snapshots:",
    {k: len(v["segments"]) for k, v in steps.items()},
    "one tensor:",
    {k: v for k, v in out["one_tensor"].items() if k not in ("segments", "trace")},
)
