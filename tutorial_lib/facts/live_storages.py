"""Which CPU storages are alive at a moment: what ``measure_memory`` watches so that it can count their frees.

PyTorch's profiler reports the free of a CPU block only when the CPU allocator recorded the block's size, which it
does only while a profiler runs in the allocating thread. So a block of code that frees memory made before it
(``optimizer.zero_grad()`` dropping the old gradients, ``out = model(x)`` letting the previous output go,
``y = x * 3`` over an older ``y``) looks, to the profiler, like it freed nothing. ``measure_memory`` therefore
lists, when a block starts, every CPU storage Python can reach, and watches each one for its free:

- every tensor and storage object the garbage collector tracks (``gc.get_objects()``; tensors are tracked
  wherever they are held: variables, lists, dicts, modules, optimizer state, a ``DataLoader``'s batch, a
  reference cycle not yet collected); a sparse tensor (COO, CSR, CSC, BSR, BSC) by its indices' and values'
  storages, which hold its memory;
- the ``.grad`` of each of those tensors (autograd keeps it in C++ and makes its Python object only when read);
- the tensors saved in every autograd graph those tensors lead to (``grad_fn._raw_saved_*``), read without
  unpacking them, so no saved-tensor hook runs.

What this does not reach: a storage that only C++ holds in another way (a ``torch.jit`` module's attributes, a
compiled function's constants). The profiler still reports its free when the allocator recorded its size (it
was made while an earlier profiler ran, a ``measure_memory`` block included) or when it is a file or shared-memory
mapping (those report both ends themselves); ``measure_memory`` counts those events.

Finding the tensors the first time costs one pass over every object the garbage collector tracks, and a list of
them all, 8 bytes an object, which ``tracemalloc`` sees (its peak is put back when that loses none of the peak it
had before the look). The tensors found are then held weakly (``_Inventory``): the next look visits only the
collector's young generations, where every object made since sits, unless a collection of an older generation
ran in between (``benchmarks/bench_measure_memory.py`` times both). ``made_since`` looks again at the end of a
block, only at the objects made since its start where the collector's generations allow it. The young garbage
is collected when a block starts (``gc.collect(1)``): a cycle of objects holding tensors would otherwise be
freed inside the block whenever a collection happened to run there.
"""

from __future__ import annotations

import gc
import itertools
import threading
import tracemalloc
import weakref

import torch
from torch.utils._python_dispatch import _disable_current_modes

#: At most this many autograd nodes are walked for saved tensors per look; past it, ``LiveStorages.capped``.
MAX_GRAPH_NODES = 100_000


class LiveStorages:
    """The CPU storages found alive, by key (``storage._cdata``, one per storage whatever tensor shows it).

    Attributes:
        storages: key -> the ``torch.UntypedStorage`` (strong references: keep this object no longer than needed).
        capped: True when the autograd graphs held more than ``MAX_GRAPH_NODES`` nodes and the rest was not walked.
    """

    def __init__(self):
        self.storages: dict[int, torch.UntypedStorage] = {}
        self.capped = False

    def add(self, storage) -> None:
        """Adds a CPU storage that holds memory (other devices, meta, fake and empty storages are left out)."""
        try:
            if storage.device.type != "cpu" or storage.nbytes() == 0:
                return
            storage.data_ptr()  # raises for a fake tensor's storage (one a failed torch.compile left alive)
            self.storages.setdefault(storage._cdata, storage)
        except (RuntimeError, NotImplementedError, AttributeError):  # a storage-less wrapper subclass, a fake one
            return


def _subclasses(root: type) -> set[type]:
    found, todo = set(), [root]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return found


def _tensors_and_storages(generations) -> tuple[list, list]:
    """The tensor and storage objects the collector tracks in ``generations``. Types are compared with
    ``type(obj)``, which calls nothing on an object (some module objects warn when touched)."""
    tensor_types = _subclasses(torch.Tensor)
    wanted = tensor_types | _storage_types()
    found = []
    for generation in generations:
        objects = gc.get_objects(generation)
        try:
            found.extend(itertools.compress(objects, map(wanted.__contains__, map(type, objects))))
        finally:
            # The list holds every object of the generation, so any cycle through it (a frame that holds it)
            # would keep them all alive, tensors included, until the next collection: empty it now.
            objects.clear()
    tensors = [obj for obj in found if type(obj) in tensor_types]
    storages = [obj for obj in found if type(obj) not in tensor_types]
    return tensors, storages


class _Inventory:
    """The tensor and storage objects found at the last full look, held weakly from one block to the next.

    An object made since then sits in the collector's young generations (0 and 1) until a collection of
    generation 1 or 2 moves it into the oldest one. So while the collector's count of those collections is
    unchanged, a look at the young generations and at the objects listed here finds every tensor: a few
    thousand objects instead of every one the process holds. ``.grad`` and saved tensors are read again each
    time from the tensors themselves.
    """

    def __init__(self):
        self.objects: dict[int, weakref.ref] = {}  # id -> a weak reference to the tensor or storage object
        self.collections: tuple[int, int] | None = None  # of generations 1 and 2, when last brought up to date
        self.lock = threading.Lock()  # blocks may start in several threads at once

    @staticmethod
    def older_collections() -> tuple[int, int]:
        stats = gc.get_stats()
        return stats[1]["collections"], stats[2]["collections"]

    def look(self, collect_young_garbage: bool) -> tuple[list, list]:
        """Every tensor and storage object alive now (see the class docstring).

        With ``collect_young_garbage``, the young generations are collected (``gc.collect(1)``) after the objects
        there are listed (weakly: garbage stays garbage) and before the living ones are returned, so that
        garbage from before a block is not freed inside it by chance, and the collection does not make the next
        look a full one.
        """
        with self.lock:
            return self._look(collect_young_garbage)

    def _look(self, collect_young_garbage: bool) -> tuple[list, list]:
        if self.collections == self.older_collections():
            tensors, storages = _tensors_and_storages((0, 1))
        else:
            self.objects.clear()
            tensors, storages = _tensors_and_storages((0, 1, 2))
        for obj in itertools.chain(tensors, storages):
            known = self.objects.get(id(obj))
            if known is None or known() is not obj:  # new, or a dead object's id used again
                self.objects[id(obj)] = weakref.ref(obj)
        tensors = storages = obj = None  # weakly held only, during the collection below
        if collect_young_garbage:
            gc.collect(1)
        tensors, storages, storage_types = [], [], _storage_types()
        for key, reference in list(self.objects.items()):
            obj = reference()
            if obj is None:
                del self.objects[key]
            elif type(obj) in storage_types:
                storages.append(obj)
            else:
                tensors.append(obj)
        self.collections = self.older_collections()
        return tensors, storages


def _storage_types() -> set[type]:
    return _subclasses(torch.UntypedStorage) | _subclasses(torch.storage.TypedStorage)


_inventory = _Inventory()


def _saved_tensors(node, names_of: dict) -> list:
    """The tensors an autograd node saved, read without unpacking (no hook runs; freed ones are skipped)."""
    names = names_of.get(type(node))
    if names is None:
        names = names_of[type(node)] = [name for name in dir(type(node)) if name.startswith("_raw_saved_")]
    tensors = []
    for name in names:
        try:
            saved = getattr(node, name)
        except (RuntimeError, AttributeError):  # already freed by a backward pass
            continue
        for item in saved if isinstance(saved, (list, tuple)) else (saved,):
            try:
                data = item.data
            except (RuntimeError, AttributeError):
                continue
            if isinstance(data, torch.Tensor):  # with a saved-tensor hook: the packed object, found by gc
                tensors.append(data)
    return tensors


def _parts(tensor) -> tuple:
    """The strided tensors that hold a sparse tensor's memory (its indices and values); () for other layouts."""
    layout = tensor.layout
    if layout == torch.sparse_coo:
        return (tensor._indices(), tensor._values())
    if layout in (torch.sparse_csr, torch.sparse_bsr):
        return (tensor.crow_indices(), tensor.col_indices(), tensor.values())
    if layout in (torch.sparse_csc, torch.sparse_bsc):
        return (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
    return ()


def _add_tensor(found: LiveStorages, tensor) -> None:
    if tensor.layout != torch.strided:
        try:
            parts = _parts(tensor)  # a sparse tensor's memory is its indices' and values' storages
        except (RuntimeError, NotImplementedError, TypeError):
            return
        for part in parts:
            _add_tensor(found, part)
        return
    try:
        found.add(tensor.untyped_storage())
    except (RuntimeError, NotImplementedError, TypeError):
        pass


def live_storages(generations=None, collect_young_garbage: bool = False) -> LiveStorages:
    """The CPU storages reachable now from the tensors and storages Python holds (see the module docstring).

    Args:
        generations: None to look at every object the garbage collector tracks (through ``_Inventory``), or the
            collector's generations to look in (``made_since``).
        collect_young_garbage: with ``generations`` None, run ``gc.collect(1)`` first (see ``_Inventory.look``).

    Returns:
        A ``LiveStorages``.
    """
    with _disable_current_modes():  # a dispatch mode the user runs must not see this look (a nested tensor's .layout)
        return _live_storages(generations, collect_young_garbage)


def _live_storages(generations, collect_young_garbage: bool) -> LiveStorages:
    found = LiveStorages()
    tracing = tracemalloc.is_tracing()
    peak_before = tracemalloc.get_traced_memory()[1] if tracing else 0
    if generations is None:
        tensors, storages = _inventory.look(collect_young_garbage)
    else:
        tensors, storages = _tensors_and_storages(generations)
    if tracing and tracemalloc.get_traced_memory()[0] >= peak_before:
        # The lists of objects raised tracemalloc's peak; forgetting that loses none of the user's peak.
        tracemalloc.reset_peak()
    for storage in storages:
        found.add(getattr(storage, "_untyped_storage", storage))  # a TypedStorage wraps an untyped one
    nodes = []
    for tensor in tensors:
        _add_tensor(found, tensor)
        if tensor.is_leaf or tensor.retains_grad:  # reading .grad of another non-leaf warns
            grad = tensor.grad
            if grad is not None:
                _add_tensor(found, grad)
        node = tensor.grad_fn
        if node is not None:
            nodes.append(node)
    _add_saved_tensors(found, nodes)
    tensors.clear()
    storages.clear()
    return found


def _add_saved_tensors(found: LiveStorages, nodes: list) -> None:
    """Adds the tensors saved in every autograd node reachable from ``nodes`` (at most ``MAX_GRAPH_NODES``).

    A node is known by ``id()``, so every node seen is held until the walk ends. Torch 2.11 keeps a node's Python
    object only while Python holds it (2.13 keeps it as long as the node lives): one dropped during the walk
    freed its ``id()`` for the next node's object, and that node was skipped with all it saved.
    """
    seen_nodes: dict[int, object] = {}  # id -> the node, held so that no other node's object gets its id
    names_of: dict = {}
    while nodes:
        node = nodes.pop()
        if node is None or id(node) in seen_nodes:
            continue
        if len(seen_nodes) >= MAX_GRAPH_NODES:
            found.capped = True
            break
        seen_nodes[id(node)] = node
        for tensor in _saved_tensors(node, names_of):
            _add_tensor(found, tensor)
        nodes.extend(next_node for next_node, _ in node.next_functions)


class GenerationsWatch:
    """Notes which generations the garbage collector collects while it is open (``gc.callbacks``).

    An object made while it is open sits in generation 0, or in generation 1 after a collection of generation 0
    (survivors move up one generation); only a collection of generation 1 or 2 can take it further. So when none
    ran, ``made_since`` needs to look in generations 0 and 1 only: far fewer objects than all of them.
    """

    def __init__(self):
        self.oldest_collected = -1

    def _note(self, phase, info) -> None:
        if phase == "start":
            self.oldest_collected = max(self.oldest_collected, info.get("generation", 2))

    def __enter__(self):
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *exc_info):
        try:
            gc.callbacks.remove(self._note)
        except ValueError:  # someone cleared gc.callbacks meanwhile
            pass

    def made_since(self) -> LiveStorages:
        """The CPU storages reachable from objects that may have been made since ``__enter__`` (a superset)."""
        return live_storages(None if self.oldest_collected >= 1 else (0, 1))
