"""Ground truth for memory tests: the CPU allocator's own events, read through the public profiler API.

``allocator_figures(fn)`` runs ``fn`` under ``torch.profiler.profile(profile_memory=True)`` and adds up the
allocator's allocation and free events of the calling thread, in order: what is left (``allocated``) and the
highest running total (``peak``). It knows nothing of ``tutorial_lib``. Only frees of blocks allocated while
it profiled are counted, so a workload compared with it must not free memory from before the call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

os.environ.setdefault("KINETO_LOG_LEVEL", "6")


@dataclass
class AllocatorFigures:
    allocated: int
    peak: int
    allocations: int


def allocator_figures(fn) -> tuple[AllocatorFigures, object]:
    """Runs ``fn()`` under the profiler; returns the allocator's figures and what ``fn`` returned."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    events = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        event = stack.pop()
        if event.tag == torch._C._profiler._EventType.Allocation:
            fields = event.extra_fields
            events.append((event.start_time_ns, fields.ptr, fields.alloc_size))
        stack.extend(event.children)
    live, current, peak, allocations = {}, 0, 0, 0
    for _, address, size in sorted(events):
        if size > 0:
            live[address] = size
            current += size
            allocations += 1
            peak = max(peak, current)
        elif address in live:
            current -= live.pop(address)
    return AllocatorFigures(current, peak, allocations), result
