"""live_storages: every CPU storage Python can reach, what measure_memory watches for frees (issue 20, section 1).

Ground truth: torch's own objects (``untyped_storage()._cdata`` names a storage whatever tensor shows it) and
weak references, which say when a storage is really gone.
"""

import gc
import types
import warnings
import weakref

import pytest
import torch
from torch import nn

import tutorial_lib.facts.live_storages as live_module
from tutorial_lib.facts.live_storages import GenerationsWatch, live_storages


def key(tensor):
    return tensor.untyped_storage()._cdata


def test_tensors_wherever_python_holds_them_are_found():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(5, 3)).sum().backward()
    optimizer.step()
    plain, in_list, in_dict = torch.ones(3), [torch.ones(4)], {"t": torch.ones(5)}
    storage = torch.UntypedStorage(64)
    found = live_storages().storages
    state = [tensor for values in optimizer.state.values() for tensor in values.values()]
    expected = [plain, in_list[0], in_dict["t"], *model.parameters(), *model.buffers(), *state]
    assert all(key(tensor) in found for tensor in expected)
    assert storage._cdata in found


def test_a_gradient_without_a_python_object_is_found():
    weight = nn.Parameter(torch.randn(1000))
    (weight * 2).sum().backward()  # autograd made weight.grad in C++; nothing has read it yet
    found = live_storages().storages
    assert key(weight.grad) in found and key(weight.grad) != key(weight)


def test_saved_tensors_only_a_graph_holds_are_found_without_running_hooks():
    x = torch.randn(100, requires_grad=True)
    out = (x * 2).exp().sum()  # exp saves its result; no Python tensor holds it
    unpacked = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(1) or t):
        hooked = (x * 3).sin()
    found = live_storages().storages
    saved_result = out.grad_fn.next_functions[0][0]._saved_result
    assert key(saved_result) in found
    assert unpacked == [] and hooked.grad_fn is not None  # reading the hooked graph ran no unpack hook


class _NodeObject:
    """A Python object for an autograd node as torch 2.11 makes it: made when read, gone when Python drops it
    (torch 2.13 keeps it while the node lives). ``_raw_saved_result`` and ``next_functions`` as autograd's."""

    __slots__ = ("node", "__weakref__")

    def __init__(self, node):
        self.node = node

    @property
    def _raw_saved_result(self):
        return types.SimpleNamespace(data=self.node["saved"])

    @property
    def next_functions(self):
        return tuple((_object_of(next_node), 0) for next_node in self.node["next"])


def _object_of(node):
    """The node's live Python object, or a new one (torch 2.11's ``functionToPyObject``)."""
    known = node["object"]() if node["object"] is not None else None
    if known is None:
        known = _NodeObject(node)
        node["object"] = weakref.ref(known)
    return known


def test_saved_tensors_are_found_when_node_objects_die_during_the_walk():
    """torch 2.11 frees a node's Python object once the walk drops it, and the next node's object may get its
    id(): the walk must not take that node for one it has seen (it skipped ExpBackward0 there)."""
    saved = [torch.full((10,), float(i)) for i in range(40)]
    chains = []
    for tensor in saved:  # 40 graphs out -> saves tensor -> leaf, as (x * 2).exp().sum() over 40 leaves
        leaf = {"saved": torch.empty(0), "next": [], "object": None}
        middle = {"saved": tensor, "next": [leaf], "object": None}
        chains.append({"saved": torch.empty(0), "next": [middle], "object": None})
    roots = [_object_of(chain) for chain in chains]
    found = live_module.LiveStorages()
    live_module._add_saved_tensors(found, roots)
    del roots
    missing = [i for i, tensor in enumerate(saved) if key(tensor) not in found.storages]
    assert missing == []


def test_only_cpu_storages_that_hold_memory_are_kept():
    meta, empty = torch.empty(100, device="meta"), torch.empty(0)
    found = live_storages().storages
    assert key(meta) not in found and key(empty) not in found
    assert all(storage.device.type == "cpu" and storage.nbytes() > 0 for storage in found.values())


def test_looking_warns_about_nothing():
    x = torch.randn(3, requires_grad=True)
    non_leaf = x * 2  # reading .grad of a non-leaf warns: live_storages must not
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = live_storages().storages
    assert key(non_leaf) in found


def test_looking_keeps_nothing_alive():
    """The list of every object must not outlive the look: a cycle through it kept every tensor alive."""
    gc.disable()
    try:
        tensor = torch.randn(1000)
        gone = weakref.ref(tensor)
        live_storages()
        del tensor
        assert gone() is None
    finally:
        gc.enable()


def test_a_huge_graph_is_walked_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(live_module, "MAX_GRAPH_NODES", 3)
    x = torch.randn(4, requires_grad=True)
    chain = x
    for _ in range(10):
        chain = chain.exp()
    assert live_storages().capped
    # The cap counts the nodes of every graph alive in the process: earlier tests' graphs too (compiled ones are big).
    monkeypatch.setattr(live_module, "MAX_GRAPH_NODES", 10**9)
    assert not live_storages().capped


def test_what_a_block_made_is_found_in_the_young_generations_or_everywhere():
    gc.collect()
    with GenerationsWatch() as watch:
        made = torch.ones(10)
    assert watch.oldest_collected < 1 and key(made) in watch.made_since().storages
    with GenerationsWatch() as watch:
        made_too = torch.ones(20)
        gc.collect()  # moves it to the oldest generation: only a look at everything finds it
    assert watch.oldest_collected == 2 and key(made_too) in watch.made_since().storages
    assert gc.callbacks.count(watch._note) == 0


def test_blocks_in_a_row_look_at_the_young_generations_only(monkeypatch):
    """Every tensor is found whether the look is full or young; a collection of generation 1 or 2 since the last
    look makes the next one full."""
    looked_at = []
    original = live_module._tensors_and_storages
    monkeypatch.setattr(
        live_module, "_tensors_and_storages", lambda generations: looked_at.append(generations) or original(generations)
    )
    live_storages(collect_young_garbage=True)
    made_after = torch.ones(7)
    assert key(made_after) in live_storages(collect_young_garbage=True).storages
    promoted = torch.ones(9)
    gc.collect()  # moves it into the oldest generation
    found = live_storages().storages
    assert key(promoted) in found and key(made_after) in found
    assert looked_at[1:] == [(0, 1), (0, 1, 2)]


def test_an_object_known_from_an_earlier_look_is_found_after_it_grew_old():
    live_storages()
    old = torch.ones(11)
    live_storages()  # a young look lists it
    gc.collect(1)  # it moves into the oldest generation; the count of collections changes: a full look next
    assert key(old) in live_storages().storages
    gc.disable()
    try:
        older = torch.ones(13)
        live_storages()
        gone = weakref.ref(older)
        del older
        assert gone() is None  # the inventory holds its objects weakly
    finally:
        gc.enable()


def test_a_failed_compile_left_alive_does_not_break_the_next_block():
    """torch.compile failing inside its backend leaves storages whose data pointer Python may not read; the
    exception (kept by pytest.raises, or by a notebook as sys.last_value) keeps them alive. measure_memory crashed
    with "invalid python storage" on every later block (issue 21's helper found it)."""
    import tutorial_lib as tl

    model = torch.compile(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.ReLU(inplace=True)), backend="aot_eager")
    with pytest.raises(Exception) as kept:
        model(torch.randn(5, 3, requires_grad=True))
    with tl.measure_memory() as mem:
        y = torch.ones(3) * 2
    assert mem.allocated == y.untyped_storage().nbytes()
    del kept
    gc.collect()  # the exception's traceback and the compiled graph are in cycles: free them for the next tests
