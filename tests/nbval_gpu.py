"""pytest plugin: notebook cells tagged `gpu` are skipped, with the reason, where CUDA is not available.

Loaded with `-p nbval_gpu` (see pyproject.toml). A GPU-only cell must be self-contained, since on a
CPU machine it never runs and later cells cannot depend on it.
"""

import pytest


def _cell_tags(item):
    cell = getattr(item, "cell", None)
    if cell is None:
        return ()
    return tuple(cell.get("metadata", {}).get("tags", ()))


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="cell tagged 'gpu' and CUDA is not available on this machine")
    for item in items:
        if "gpu" in _cell_tags(item):
            item.add_marker(skip)
