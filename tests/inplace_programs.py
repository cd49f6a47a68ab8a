"""Random programs for "the watcher changes nothing": run one, and get a digest of everything it computed.

The steps are tests/test_graph.py's (ops that save inputs or outputs, views, in-place edits, checkpoints, custom
Functions, ``torch._foreach_*``) plus the ones a dispatch mode is known to disturb: ``prod`` and ``cumprod``
(their backward formulas take a subclass-safe path under any dispatch mode), and ``_foreach_*_`` writes whose
list names one tensor twice or two views of one tensor (torch moves the counter once per entry).

``digest(seed)`` runs the program and backward, and returns a text holding every pool tensor's version counter
and the bytes of its values, the gradients' bytes, and the error message if backward raised: equal texts mean
bit-identical runs. ``python tests/inplace_programs.py N`` prints the digests of seeds 0..N-1 (the explain
command's test runs it with and without the watcher).
"""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_graph import COMPUTE, CONSTANT_EDITS, INPLACE, OUT_MODES, _editable, _pick  # noqa: E402

# Ops a dispatch mode is known to disturb.
EXTRA_COMPUTE = {
    "prod": lambda y, z, c: y.prod(),
    "prod_dim": lambda y, z, c: y.prod(0),
    "cumprod": lambda y, z, c: y.cumprod(1),
    "foreach_exp": lambda y, z, c: tuple(torch._foreach_exp([y, z])),
}


def _foreach_twice(y, z):
    torch._foreach_mul_([y, y], 1.5)  # one tensor twice: its counter moves by 2


def _foreach_views(y, z):
    flat = y.view(-1)
    torch._foreach_add_([flat[:4], flat[4:]], 1.0)  # two views of one tensor: its counter moves by 2


EXTRA_INPLACE = {"foreach_twice_": _foreach_twice, "foreach_views_": _foreach_views}
ALL_COMPUTE = {**COMPUTE, **EXTRA_COMPUTE}
ALL_INPLACE = {**INPLACE, **EXTRA_INPLACE}
KINDS = (
    2 * tuple(ALL_COMPUTE)
    + 3 * tuple(EXTRA_COMPUTE)
    + 3 * tuple(ALL_INPLACE)
    + 3 * tuple(EXTRA_INPLACE)
    + tuple(CONSTANT_EDITS)
)


def _bytes(t: torch.Tensor) -> str:
    data = t.detach()
    if data.dtype.is_floating_point:
        data = data.contiguous().view(torch.uint8) if data.dim() else data.reshape(1).view(torch.uint8)
    return hashlib.sha1(data.contiguous().numpy().tobytes()).hexdigest()[:12]


def run_and_digest(rng: random.Random, max_steps: int = 10) -> str:
    """Build a random program from ``rng``, run it and backward, and return the digest of what it computed."""
    seed = rng.randrange(2**16)
    steps = [(rng.choice(KINDS), rng.randrange(41), rng.randrange(41)) for _ in range(rng.randint(2, max_steps))]
    out_mode = rng.choice(OUT_MODES)
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(3, 3, generator=gen, dtype=torch.float64).requires_grad_()
    b = torch.randn(3, 3, generator=gen, dtype=torch.float64).requires_grad_()
    c = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    pool = [a, b, c, a + b]
    recent: list[torch.Tensor] = []
    for kind, i, j in steps:
        y, z = _pick(pool, i), _pick(pool, j)
        try:
            if kind in ALL_COMPUTE:
                made = ALL_COMPUTE[kind](y, z, c)
                made = list(made) if isinstance(made, (tuple, list)) else [made]
                pool.extend(made)
                recent = [y, z, *made][-4:]
            elif kind in ALL_INPLACE:
                chosen = recent[i % 4] if i % 4 < len(recent) else None
                target = (
                    chosen if chosen is not None and _editable(chosen) else _pick([t for t in pool if _editable(t)], i)
                )
                if target.is_floating_point():
                    ALL_INPLACE[kind](target, z)
                else:
                    target.zero_()
            else:
                CONSTANT_EDITS[kind](c)
        except (RuntimeError, IndexError) as error:
            pool.append(torch.tensor(float(len(str(error)))))  # the refusal is part of what the program did
    grad_pool = [t for t in pool if t.requires_grad]
    if out_mode == "last":
        out = grad_pool[-1].sum()
    elif out_mode == "sum_all":
        out = sum(t.sum() for t in grad_pool)
    else:
        out = (grad_pool[-1] * 2).sum() + grad_pool[-2].sum()
    try:
        out.backward()
        outcome = "ok"
    except RuntimeError as error:
        outcome = str(error)
    versions = [t._version for t in pool]
    values = [_bytes(t) for t in pool]
    grads = [_bytes(t.grad) if t.grad is not None else None for t in (a, b)]
    return f"{[k for k, _, _ in steps]} {outcome} versions={versions} values={values} grads={grads}"


def digest(seed: int) -> str:
    return run_and_digest(random.Random(seed))


if __name__ == "__main__":
    for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
        print(seed, digest(seed))
