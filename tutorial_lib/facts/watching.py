"""The base of the library's aten-level watchers, ``trace_ops``, ``measure_memory`` and ``watch_inplace``.

PyTorch wraps every ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in ``torch._dynamo.disable``,
so that ``torch.compile`` never traces into it. The wrapper imports ``torch._dynamo`` on its first call,
which takes more than a second: longer than anything else the first ``trace_ops`` block of a notebook
does. The watchers here opt out of the wrapper (the hook PyTorch provides for this is ``_should_skip_dynamo``).

A watcher must never change the program it watches, and ``torch.compile`` is part of the program. Dynamo
refuses to compile a frame while a dispatch mode is on the stack: it runs it eagerly instead, and marks the
code so that it stays uncompiled after the block. The watchers therefore declare
``ignore_compile_internals()``, torch's own switch for this: Dynamo and AOTAutograd compile exactly as they
would without the watcher (the mode is off while they trace), and the compiled artifact runs with the mode
on. A watcher sees the aten ops the compiled code dispatches (all of them with ``backend="eager"`` or
``"aot_eager"``; with inductor only what its generated code calls through the dispatcher, not its fused
kernels), and none of the Python lines inside it.

A mode must also leave version counters as torch would without it. The ``_foreach_*_`` ops
(``optimizer.step()`` with ``foreach=True``) bump no version when called from a dispatch mode on torch 2.13, so
a watcher that simply called ``func(*args, **kwargs)`` would hide the in-place error it is meant to explain.
Every watcher runs ops through ``call_keeping_versions``, which bumps once per list entry, as torch does (a
list that names one tensor twice, or two views of one tensor, moves that counter twice).
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

#: Ops that wrap a tensor literal (``torch.tensor([...])``, the 5 in ``x[0] = 5``) allocated just before
#: dispatch: new memory, although the op itself returns its input. Not so when the literal wraps memory torch
#: did not allocate (``torch.as_tensor(a.numpy())`` lifts a ``torch.from_numpy`` tensor): see
#: ``is_fresh_literal``.
FRESH_LITERAL_OPS = frozenset({"aten::lift_fresh", "aten::lift_fresh_copy"})


class WatcherMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` is not wrapped in ``torch._dynamo.disable``."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """Let ``torch.compile`` compile as it would without the watcher (see the module docstring)."""
        return True


def storage_key(tensor: torch.Tensor):
    """An id of the tensor's storage, equal for every tensor over it; None where there is none (sparse)."""
    try:
        return tensor.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less tensors
        return None


def tensors_in(tree) -> list[torch.Tensor]:
    """The tensors among an op's arguments or results (any nesting of lists, tuples and dicts)."""
    return [leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)]


def is_fresh_literal(name: str, output: torch.Tensor) -> bool:
    """Whether ``output`` of op ``name`` is a literal torch allocated just before dispatch.

    A literal lifted from a numpy array (``torch.as_tensor(a)``, ``torch.tensor(a)`` before its copy) is a
    ``torch.from_numpy`` tensor over the array's own memory; such storage, like any torch did not allocate
    (DLPack, ``frombuffer``), cannot be resized, which is how it is told apart.
    """
    if name not in FRESH_LITERAL_OPS:
        return False
    try:
        return output.untyped_storage().resizable()
    except (RuntimeError, NotImplementedError):
        return True


def tensor_version(tensor: torch.Tensor):
    """The tensor's version counter, or None for an inference tensor (which has none)."""
    try:
        return tensor._version
    except RuntimeError:  # inference tensors have no version counter
        return None


def written_arguments(func) -> tuple:
    """The arguments the op's schema marks as written (``Tensor(a!)``), and whether the watcher must bump.

    Returns ``(written, bump, unversioned)``, ``written`` as ``((position, name, keyword-only), ...)``. Most
    in-place ops have an ``ADInplaceOrView`` kernel, above any dispatch mode, that bumps the version counter
    after the op. The ``_foreach_*_`` ops
    (``optimizer.step()`` with ``foreach=True``) have none: without a mode their composite kernel bumps
    each tensor, but run from a dispatch mode it does not (torch 2.13: ``torch._foreach_add_([a], [b])``
    inside any ``TorchDispatchMode`` leaves ``a._version`` unchanged). ``bump`` says the watcher must then
    bump the counters itself, so that autograd still sees the change it would see without the watcher.
    It bumps only counters the op left unchanged: CUDA's fast-path foreach kernels bump their own
    (``increment_version(tensors)`` at the end of each kernel in aten/src/ATen/native/cuda/Foreach*.cu).
    """
    known = _WRITTEN_ARGUMENTS.get(func)
    if known is not None:
        return known
    written = tuple(
        (index, argument.name, argument.kwarg_only)
        for index, argument in enumerate(func._schema.arguments)
        if argument.alias_info is not None and argument.alias_info.is_write
    )
    name = func._schema.name
    overload = func._overloadname
    qualified = f"{name}.{overload}" if overload and overload != "default" else name
    try:
        has_view_kernel = torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "ADInplaceOrView")
    except RuntimeError:
        has_view_kernel = True
    bump = bool(written) and name.startswith("aten::_foreach_") and not has_view_kernel
    # Other writers without that kernel (the fused optimizers' _fused_adam_, _fused_sgd_, ...) bump no
    # version counter at all, with or without a watcher: autograd cannot see their changes.
    unversioned = bool(written) and not bump and not has_view_kernel
    known = _WRITTEN_ARGUMENTS[func] = (written, bump, unversioned)
    return known


def bump_like_torch(seen) -> list[int] | None:
    """Bump the written tensors as torch would have, when the op bumped none of them (see ``written_arguments``).

    Args:
        seen: ``(tensor, version before the op)`` for each written list entry, in the op's order.

    Returns:
        Each entry's version right after its own bump (torch bumps once per entry, in order, so ``[y, y]``
        moves ``y`` from 0 to 2, and its entries read 1 and 2), or None when the op bumped the counters itself
        (CUDA's fast-path foreach kernels) and nothing was done.
    """
    if any(tensor_version(tensor) != version for tensor, version in seen):
        return None
    after = []
    for tensor, _ in seen:
        torch.autograd.graph.increment_version(tensor)
        after.append(tensor_version(tensor))
    return after


def call_keeping_versions(func, args, kwargs):
    """Run an aten op from inside a dispatch mode, bumping version counters as torch would without the mode.

    For any ``TorchDispatchMode`` (``trace_ops`` and ``measure_memory`` too): ``func(*args, **kwargs)`` of
    a ``_foreach_*_`` op leaves the versions unbumped (see ``written_arguments``); this bumps them.
    """
    written = written_arguments(func)
    if not written[1]:
        return func(*args, **kwargs)
    seen = []
    for position, argument, keyword_only in written[0]:
        value = kwargs.get(argument) if keyword_only or position >= len(args) else args[position]
        for tensor in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(tensor, torch.Tensor):
                version = tensor_version(tensor)
                if version is not None:
                    seen.append((tensor, version))
    result = func(*args, **kwargs)
    bump_like_torch(seen)
    return result


# One answer per op overload (the schema never changes). A plain dict, not functools.cache: a compiled function
# run inside a watcher makes Dynamo trace this code, and Dynamo warns about lru_cache-wrapped functions.
_WRITTEN_ARGUMENTS: dict = {}
