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


def allocator_figures_of_block(setup, block) -> tuple[AllocatorFigures, object, object]:
    """Runs ``state = setup()`` and then ``block(state)`` under one profiler started before both, and adds up the
    allocator's events inside ``block`` only: what it left (``allocated``) and the highest running total in it
    (``peak``), both counted from the block's start. The profiler saw everything ``setup`` allocated, so the
    block's frees of that memory (``optimizer.zero_grad()``, a rebound name) are counted from its own events.

    Returns the figures, ``state`` and what ``block`` returned. Memory from before ``setup`` freed in the block is
    not counted (the profiler cannot report it): collect Python's garbage before calling this.
    """
    marker = "##tutorial_lib-truth-block##"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        state = setup()
        with torch.profiler.record_function(marker):
            result = block(state)
    events, span = [], None
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        event = stack.pop()
        if event.tag == torch._C._profiler._EventType.Allocation:
            fields = event.extra_fields
            if fields.device.type == "cpu":
                events.append((event.start_time_ns, fields.ptr, fields.alloc_size))
        elif event.name == marker:
            span = (event.start_time_ns, event.end_time_ns)
        stack.extend(event.children)
    live, current, start, peak, allocations = {}, 0, 0, 0, 0
    for moment, address, size in sorted(events):
        if moment > span[1]:
            break
        if size > 0:
            live[address] = size
            current += size
        elif address in live:
            current -= live.pop(address)
        if moment < span[0]:
            start = peak = current
        else:
            allocations += size > 0
            peak = max(peak, current)
    return AllocatorFigures(current - start, peak - start, allocations), state, result
