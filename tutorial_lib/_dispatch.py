"""The base of the library's two aten-level watchers (``trace_ops`` and ``measure_memory`` on the CPU).

PyTorch wraps every ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in ``torch._dynamo.disable``,
so that ``torch.compile`` never traces into it. The wrapper imports ``torch._dynamo`` on its first call,
which takes more than a second: longer than anything else the first ``trace_ops`` block of a notebook
does. The watchers here only record what runs and never live under ``torch.compile`` in the course, so
they opt out of the wrapper (the hook PyTorch documents for this in ``_should_skip_dynamo``).
Consequence: code compiled with ``torch.compile`` *inside* a ``trace_ops`` or ``measure_memory`` block
would have Dynamo trace the watcher too; the course never does that.
"""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class WatcherMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` is not wrapped in ``torch._dynamo.disable``."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False
