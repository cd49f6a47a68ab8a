"""Ground truth computed by torch itself, shared by the layout tests."""

import torch

#: One dtype of each itemsize and kind the property tests draw from (1, 2, 4, 8 bytes; float, bfloat16, int,
#: bool, complex).
DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.complex64,
]


def truth_map(t):
    """{storage index: (row-major positions)} for every element of t: as_strided over an arange storage."""
    numel = t.untyped_storage().nbytes() // t.element_size()
    indices = torch.arange(numel).as_strided(t.shape, t.stride(), t.storage_offset()).reshape(-1).tolist()
    found = {}
    for position, index in enumerate(indices):
        found.setdefault(index, []).append(position)
    return {index: tuple(positions) for index, positions in found.items()}


def write_moves_counter(result, source: torch.Tensor) -> bool:
    """Whether writing through ``result`` (a tensor or an array over ``source``'s memory) moves ``source``'s version
    counter, as autograd's check would see it: the write is made (zeros, under no_grad), the counter read."""
    import numpy as np

    before = source._version
    if isinstance(result, np.ndarray):
        result[...] = 0
    else:
        with torch.no_grad():
            result.zero_()
    return source._version != before
