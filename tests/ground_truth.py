"""Ground truth computed by torch itself, shared by the layout tests."""

import torch


def truth_map(t):
    """{storage index: (row-major positions)} for every element of t: as_strided over an arange storage."""
    numel = t.untyped_storage().nbytes() // t.element_size()
    indices = torch.arange(numel).as_strided(t.shape, t.stride(), t.storage_offset()).reshape(-1).tolist()
    found = {}
    for position, index in enumerate(indices):
        found.setdefault(index, []).append(position)
    return {index: tuple(positions) for index, positions in found.items()}
