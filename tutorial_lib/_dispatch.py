"""The base of the library's two aten-level watchers, ``trace_ops`` and ``measure_memory``.

PyTorch wraps every ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in ``torch._dynamo.disable``,
so that ``torch.compile`` never traces into it. The wrapper imports ``torch._dynamo`` on its first call,
which takes more than a second: longer than anything else the first ``trace_ops`` block of a notebook
does. The watchers here opt out of the wrapper (the hook PyTorch provides for this is ``_should_skip_dynamo``).
That only matters under ``torch.compile``: a function compiled inside a ``trace_ops`` or ``measure_memory``
block still runs and is recorded op by op (``tests/test_ops.py`` checks it with the eager backend).
"""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class WatcherMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` is not wrapped in ``torch._dynamo.disable``."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False
