"""Chapter 2 exercises: views instead of copies, predicting view or copy, updating a tensor in place.

Every checker runs torch itself: the learner's function is called on fresh tensors and the result is
inspected (values, memory sharing, storage, data pointer, bytes allocated); predictions are compared with
what ``view_or_copy`` records when the expressions really run.
"""

from __future__ import annotations

import tracemalloc

import torch
from torch.overrides import TorchFunctionMode

from ..facts.memory import measure_memory
from ..facts.ops import trace_ops, view_or_copy
from ..facts.storage import same_storage, shares_memory
from ..facts.watching import WatcherMode, storage_key, tensors_in
from . import correct, exercise, prediction, wrong

# --- ch2.make_view --------------------------------------------------------------------------------------


def every_other_column_copy(x: torch.Tensor) -> torch.Tensor:
    """The function of the exercise as given: columns 0, 2, 4, ... picked with advanced indexing (a copy)."""
    return x[:, torch.arange(0, x.shape[1], 2)]


def _make_view_inputs():
    generator = torch.Generator().manual_seed(2)
    return [
        ("a 3 x 4 float32 matrix", torch.arange(12.0).reshape(3, 4)),
        ("a 2 x 5 matrix (an odd number of columns)", torch.arange(10.0).reshape(2, 5)),
        ("a transposed (non-contiguous) 3 x 5 matrix", torch.arange(15.0).reshape(5, 3).t()),
        ("a 4 x 1 int64 matrix (a single column)", torch.arange(4).reshape(4, 1)),
        ("a 6 x 7 float64 matrix of random numbers", torch.randn(6, 7, generator=generator, dtype=torch.float64)),
        # a view that starts at storage offset 5: a bridge's storage then starts at another address than x's
        ("rows 1 to 3 of a 4 x 5 matrix (a view starting at offset 5)", torch.arange(20.0).reshape(4, 5)[1:]),
    ]


#: What the learner's function ran (aten op names) -> why its result is a copy, first match wins.
_COPY_CAUSES = (
    (
        ("index", "index_select", "gather", "take", "masked_select"),
        "a list of integers, a tensor of indices with at least one dimension or a mask is advanced indexing, and "
        "index_select, gather and take pick elements the same way: all of them copy. ",
    ),
    (
        ("stack", "cat"),
        "stack and cat copy their pieces into one new tensor, even when every piece is a view of x. ",
    ),
    (
        ("_unsafe_view",),
        "reshape, flatten and reshape_as copy (aten clone, then _unsafe_view) when no strides over x's storage can "
        "describe the new shape: here they could not. ",
    ),
    (
        ("clone",),
        "clone() copies, and so does contiguous() when the tensor is not contiguous. The strided slice itself is "
        "already what you want. ",
    ),
    (
        ("_to_copy",),
        "torch.tensor(...) always copies; .to() and the dtype conversions copy when they change something. ",
    ),
)
_VIEW_HINT = "Basic slicing with a step, start:stop:step, gives a view: it only changes the offset and the strides."


def _why_a_copy(fn, x) -> str:
    """The hint for an answer whose result is a copy: named after the aten op that made the new memory."""
    with trace_ops() as ops:
        fn(x)
    ran = {op.name.removeprefix("aten::") for op in ops}
    for names, cause in _COPY_CAUSES:
        if ran.intersection(names):
            return cause + _VIEW_HINT
    return "the result must read x's own storage. " + _VIEW_HINT


@exercise("ch2.make_view", function="def every_other_column(x): ...")
def check_make_view(fn):
    for description, x in _make_view_inputs():
        before = x.clone()
        expected = every_other_column_copy(x)
        result = fn(x)
        if not isinstance(result, torch.Tensor):
            return wrong(
                f"for {description} your function returned {type(result).__name__}, not a tensor.",
                "return the selected columns.",
            )
        if not torch.equal(x, before):
            return wrong(
                f"your function changed its input ({description}).", "only select columns; do not write into x."
            )
        if result.shape != expected.shape or result.dtype != expected.dtype or not torch.equal(result, expected):
            return wrong(
                f"for {description} the result has shape {tuple(result.shape)}; columns 0, 2, 4, ... of x have shape "
                f"{tuple(expected.shape)}" + (" and other values." if result.shape == expected.shape else "."),
                "keep every row and take every second column, starting with column 0 (dimension 1 is the columns).",
            )
        if shares_memory(result, x) and result.untyped_storage()._cdata != x.untyped_storage()._cdata:
            # torch.from_numpy(x.numpy()[:, ::2]), say: x's bytes under a storage object of its own, whose
            # version counter is not x's (same_storage alone is fooled when both storages start at one address)
            return wrong(
                f"for {description} the result reads x's memory, but through a storage of its own (torch.from_numpy "
                "and other bridges make one), so it is not a view of x: x's version counter does not see writes "
                "through it.",
                "stay in torch: slice x itself. " + _VIEW_HINT,
            )
        if not shares_memory(result, x) or not same_storage(result, x):
            return wrong(
                f"the values are right, but for {description} the result is a copy: it shares no memory with x.",
                _why_a_copy(fn, x),
            )
    return correct(
        "same values as the advanced-indexing version, but a view: it reads x's own storage (the column stride "
        "doubled), for every input tried, transposed and single-column ones included."
    )


# --- ch2.predict_view_or_copy ---------------------------------------------------------------------------

#: The expressions of the prediction exercise, all on ``x = torch.arange(12.).reshape(3, 4)``, with the
#: principle each one tests (given as the hint when it is predicted wrongly).
PREDICT_EXPRESSIONS = {
    "x[:, 1:3]": "basic slicing (ints, start:stop:step, None, ...) only changes the offset, shape and strides.",
    "x[:, [1, 2]]": "a list of integers inside the brackets is advanced indexing, and advanced indexing always copies, "
    "even when the chosen elements happen to be equally spaced.",
    "x.t().reshape(12)": "reshape copies only when no strides can describe the new shape over the same storage: "
    "reading the transpose row by row jumps around in memory.",
    "x.reshape(2, 6)": "reshape copies only when it must: x is contiguous, so any new shape is a view.",
    "x.index_select(0, torch.tensor([0, 1]))": "index_select is a gather of whole slices into new memory, like "
    "indexing with a tensor of indices.",
    "x[0].expand(3, 4)": "expand repeats a size-1 dimension by giving it stride 0: no element is written anywhere.",
    "x.t().contiguous()": "contiguous() returns the tensor itself when it already is contiguous, and a copy when "
    "it is not. Is x.t() contiguous?",
    "x.diagonal()": "the diagonal elements are equally spaced in storage (every 5th cell here), so one stride "
    "reaches them all.",
    "x[x > 5]": "a boolean mask is advanced indexing: the number of elements chosen depends on the data, so the "
    "result needs new memory.",
    "x.narrow(1, 0, 2).flatten()": "narrow gives a view, but its rows now have gaps between them in storage; "
    "flatten (a reshape) cannot jump over the gaps with a single stride.",
    "x.contiguous()": "x is already contiguous, so contiguous() returns x itself: not a new view, the very same "
    "Python object (x.contiguous() is x).",
    "x[x[:, 0].argmax()]": "argmax returns a 0-dim int64 tensor, and a 0-dim integer tensor in the brackets (any "
    "integer dtype but uint8, which is read as a mask) is read as a plain int: basic indexing (a select), not "
    "advanced indexing.",
}

#: The verdicts a learner may give; "same tensor" also accepts "same_tensor", "Same-Tensor" and extra spaces.
VERDICTS = ("view", "copy", "same tensor")


def predict_inputs() -> dict[str, torch.Tensor]:
    return {"x": torch.arange(12.0).reshape(3, 4)}


def predict_truth() -> list[str]:
    """What ``view_or_copy`` records for each expression: "view", "copy" or "same tensor"."""
    report = view_or_copy(list(PREDICT_EXPRESSIONS), **predict_inputs())
    return [row.verdict for row in report]


def _verdict_word(item) -> str | None:
    """A verdict as the checker compares it: lower case, single spaces, "_" and "-" read as spaces."""
    if not isinstance(item, str):
        return None
    return " ".join(item.replace("_", " ").replace("-", " ").lower().split())


def _read_answer(answer) -> tuple[list[str] | None, str]:
    """The learner's verdicts as words, or None and what is wrong with the answer's form: which entry is not a
    verdict (the first one, and how many more), or how many entries there are."""
    expressions = list(PREDICT_EXPRESSIONS)
    if isinstance(answer, dict):
        answer = [answer.get(expression) for expression in expressions]
    if isinstance(answer, str) or not isinstance(answer, (list, tuple)):
        return None, f"Your answer is of type {type(answer).__name__}, not a list."
    if len(answer) != len(expressions):
        return None, f"Your list has {len(answer)} entries, for {len(expressions)} expressions."
    words = [_verdict_word(item) for item in answer]
    bad = [i for i, word in enumerate(words) if word not in VERDICTS]
    if not bad:
        return words, ""
    first, item, word = bad[0], answer[bad[0]], words[bad[0]]
    said = "missing" if item is None else repr(item)
    close = [verdict for verdict in VERDICTS if word and verdict.startswith(word)]
    meant = f" (did you mean {close[0]!r}?)" if close else ""
    more = f" {len(bad) - 1} more entries are not verdicts either." if len(bad) > 1 else ""
    return None, f"Entry {first + 1} (`{expressions[first]}`) is {said}, not a verdict{meant}.{more}"


@exercise("ch2.predict_view_or_copy")
def check_predict_view_or_copy(answer):
    count = len(PREDICT_EXPRESSIONS)
    words, problem = _read_answer(answer)
    if words is None:
        return wrong(
            f'{problem} The answer should be a list of {count} words, each "view", "copy" or "same tensor", in '
            "the order of the expressions.",
            'e.g. answer = ["view", "copy", "same tensor", ...] with one entry per expression.',
        )
    truth = predict_truth()
    expressions = list(PREDICT_EXPRESSIONS)
    missed = [i for i, (word, verdict) in enumerate(zip(words, truth)) if word != verdict]
    if not missed:
        return correct(
            f"all {count} right, as view_or_copy records them: slicing, indexing with a 0-dim integer tensor, expand, "
            "diagonal and a reshape of contiguous data are views; lists, masks, index_select and a reshape or "
            "contiguous() of scattered data copy; contiguous() of contiguous x is x itself."
        )
    listed = ", ".join(f"#{i + 1} `{expressions[i]}`" for i in missed)
    first = expressions[missed[0]]
    return wrong(
        f"{count - len(missed)} of {count} right. Look again at {listed}.",
        f"{first}: {PREDICT_EXPRESSIONS[first]} Run tl.view_or_copy([{first!r}], x=x) to see it.",
    )


# --- ch2.inplace_update ---------------------------------------------------------------------------------


def _update_cases():
    matrix = torch.zeros(4, 5)
    return [
        ("y of 1,000 float32 ones, x = arange(1000.)", torch.ones(1000), torch.arange(1000.0)),
        ("y = column 2 of a 4 x 5 matrix (a strided view), x = arange(4.)", matrix[:, 2], torch.arange(4.0)),
        ("y of shape (3, 4), x of shape (4,) (broadcast over the rows)", torch.full((3, 4), 2.0), torch.arange(4.0)),
    ]


def _python_peak(fn, y, x) -> int | None:
    """Peak bytes that Python's tracemalloc sees while ``fn`` runs on copies of ``y`` and ``x``.

    measure_memory counts torch's allocations only; NumPy reports its arrays' memory to tracemalloc. A second run
    on fresh copies, without measure_memory (whose own bookkeeping allocates Python objects), gives a figure in
    which Python's own objects add a few hundred bytes, so a temporary as large as y + x stands out. None when
    tracemalloc is already tracing (the learner's own measurement is left alone).
    """
    if tracemalloc.is_tracing():
        return None
    y, x = y.clone(), x.clone()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn(y, x)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


class _MemoryFromElsewhere(WatcherMode):
    """Records the ops that read a tensor of y's size or more whose memory is neither y's, x's, nor made by an op
    of the call: memory made where measure_memory cannot see it (a thread that existed before the call, NumPy).
    Also records whether an op of this thread wrote into y's storage (an argument the op's schema marks as written):
    a change of y that no such op made came from NumPy (see _HandedToNumpy) or from another thread."""

    def __init__(self, known_storages, size, written_storage):
        super().__init__()
        self.known = {s._cdata for s in known_storages}
        self.size = size
        self.written_key = written_storage._cdata
        self.foreign: list[str] = []
        self.wrote_into_y = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for tensor in tensors_in((args, kwargs)):
            storage = tensor.untyped_storage()
            if storage._cdata not in self.known and storage.nbytes() >= self.size:
                self.foreign.append(func._schema.name)
        for position, argument in enumerate(func._schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            if any(storage_key(tensor) == self.written_key for tensor in tensors_in(value)):
                self.wrote_into_y = True
        result = func(*args, **kwargs)
        self.known.update(t.untyped_storage()._cdata for t in tensors_in(result))
        return result


class _HandedToNumpy(TorchFunctionMode):
    """Records whether this thread handed a tensor over y's storage to NumPy (``.numpy()``, ``np.asarray``): the one
    way to write into y in this thread without a torch op. Like every mode, it sees the calling thread only."""

    def __init__(self, storage):
        super().__init__()
        self.key = storage._cdata
        self.handed = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("numpy", "__array__", "__dlpack__"):
            if any(storage_key(tensor) == self.key for tensor in tensors_in((args, kwargs or {}))):
                self.handed = True
        return func(*args, **(kwargs or {}))


@exercise("ch2.inplace_update", function="def accumulate(y, x): ...")
def check_inplace_update(fn):
    for description, y, x in _update_cases():
        y_before, x_before = y.clone(), x.clone()
        expected = y_before + x_before
        pointer = y.data_ptr()
        elsewhere = _MemoryFromElsewhere(
            [y.untyped_storage(), x.untyped_storage()], y.untyped_storage().nbytes(), y.untyped_storage()
        )
        to_numpy = _HandedToNumpy(y.untyped_storage())
        with measure_memory() as memory, elsewhere, to_numpy:
            fn(y, x)
        if memory.unseen:  # a thread the profiler does not record: the peak below would not be the truth
            return wrong(
                f"for {description} your function did work that measure_memory cannot count: {memory.unseen[0]}.",
                "add x into y in the calling thread, with one in-place op (`y += x`, `y.add_(x)`).",
            )
        if not torch.equal(x, x_before):
            return wrong(
                f"for {description} your function changed x.",
                "add x into y: y is the tensor to change, x only gets read.",
            )
        if torch.equal(y, y_before):
            return wrong(
                f"for {description} the caller's y still holds its old values.",
                "`y = y + x` inside a function makes a new tensor and binds the function's own name y to it; "
                "the caller's tensor never changes. Write into y's memory instead.",
            )
        if not elsewhere.wrote_into_y and not to_numpy.handed:
            # y changed, yet no op of this thread wrote into it and NumPy never got it: another thread did the work,
            # one that existed before the call (threads started in it are in memory.unseen), and its memory is uncounted
            return wrong(
                f"y changed for {description}, but no operation in your function's own thread wrote into it: "
                "another thread did (a thread pool made before the call?), and measure_memory cannot count what that "
                "thread allocated.",
                "add x into y in the calling thread, with one in-place op (`y += x`, `y.add_(x)`).",
            )
        if y.data_ptr() != pointer:
            return wrong(
                f"for {description} y now points to other memory.",
                "change the numbers y already holds; do not give y new storage (set_, .data = ...).",
            )
        if not torch.equal(y, expected):
            return wrong(
                f"for {description} y holds other values than y + x.",
                "add x to y once, elementwise (broadcasting as y + x would).",
            )
        if memory.peak:
            return wrong(
                f"y has the right values, but for {description} your function allocated {memory.peak:,} bytes on the "
                + ("way (a temporary the size of y + x)." if memory.peak >= expected.nbytes else "way."),
                "`y[:] = y + x` and `y.copy_(y + x)` compute y + x into new memory first, then copy it in. "
                "An in-place op (`y += x`, `y.add_(x)`, `torch.add(y, x, out=y)`) adds directly into y.",
            )
        numpy_peak = _python_peak(fn, y_before, x_before) if expected.nbytes >= 4000 else None
        if numpy_peak is not None and numpy_peak >= expected.nbytes:
            return wrong(
                f"y has the right values, but for {description} your function allocated about {numpy_peak:,} bytes "
                "of NumPy memory on the way (a temporary the size of y + x).",
                "`y.numpy() + x.numpy()` computes the sum into a new array first, just as `y + x` does in torch. "
                "Add in place: `y += x`, or in NumPy `np.add(y.numpy(), x.numpy(), out=y.numpy())`.",
            )
        if elsewhere.foreign:
            return wrong(
                f"for {description} your function read a tensor as large as y whose memory was made where "
                f"measure_memory cannot see it ({elsewhere.foreign[0]} read it): a thread that existed before the "
                "call, or memory PyTorch did not allocate.",
                "add x into y in the calling thread, with one in-place op (`y += x`, `y.add_(x)`).",
            )
    return correct(
        "y was updated in its own memory (same data pointer) with 0 bytes allocated, even as a strided view and "
        "with broadcasting."
    )


# --- quick predictions (one answer each, computed by torch when the check runs) ------------------------------


def _verdict(result: torch.Tensor, x: torch.Tensor) -> str:
    return "view" if shares_memory(result, x) else "copy"


def _index_truth() -> tuple[str, str]:
    x = torch.arange(12.0).reshape(3, 4)
    return _verdict(x[::2], x), _verdict(x[[0, 2]], x)


prediction(
    "ch2.q_index",
    _index_truth,
    why="x[::2] is basic slicing: a view with row stride 8. x[[0, 2]] has a list of integers inside the brackets: "
    "advanced indexing, which copies, even when the indices are evenly spaced.",
    choices=("view", "copy"),
    mistakes={
        ("view", "view"): "PyTorch does not look at whether a list of indices is evenly spaced; a list means a copy.",
        ("copy", "copy"): "a slice with a step only changes the offset and the strides: x[::2] reads x's memory.",
        ("copy", "view"): "it is the other way round: the slice views, the list copies.",
    },
)


def _chained_truth() -> float:
    x = torch.zeros(3, 4)
    x[[0, 1]][0] = 5.0
    return x[0, 0].item()


prediction(
    "ch2.q_chained",
    _chained_truth,
    why="x[[0, 1]] reads a copy of rows 0 and 1; the [0] = 5.0 then writes into that copy, which is thrown away.",
    mistakes={5.0: "the first pair of brackets made a copy, and the write landed in the copy, not in x."},
)


def _reshape_truth() -> tuple[str, str]:
    x = torch.arange(12.0).reshape(3, 4)
    return _verdict(x.reshape(6, 2), x), _verdict(x.t().reshape(6, 2), x)


prediction(
    "ch2.q_reshape",
    _reshape_truth,
    why="reshape returns a view when strides over the existing storage can describe the new shape, and a copy "
    "otherwise. x is contiguous, so x.reshape(6, 2) is a view. Reading x.t() row by row visits cells 0, 4, 8, 1, …: "
    "no strides give that order in 6 x 2, so it copies.",
    choices=("view", "copy"),
    mistakes={
        ("view", "view"): "reshape is not always a view: it copies when the layout cannot be described by strides.",
        ("copy", "copy"): "reshape of a contiguous tensor is a view: nothing needs to move.",
        ("copy", "view"): "it is the other way round: the contiguous x gives the view.",
    },
)

#: The shape and selection operations of the quick prediction ch2.q_ops, on x = torch.arange(12.).reshape(3, 4).
OPS_EXPRESSIONS = {
    "x.t()": lambda x: x.t(),
    "x[0].expand(3, 4)": lambda x: x[0].expand(3, 4),
    "x.index_select(0, torch.tensor([0, 2]))": lambda x: x.index_select(0, torch.tensor([0, 2])),
    "x.flip(0)": lambda x: x.flip(0),
}


def _ops_truth() -> tuple[str, ...]:
    x = torch.arange(12.0).reshape(3, 4)
    return tuple(_verdict(run(x), x) for run in OPS_EXPRESSIONS.values())


prediction(
    "ch2.q_ops",
    _ops_truth,
    why="t() swaps two strides and expand gives a dimension stride 0: both only change how x's memory is read. "
    "index_select gathers chosen rows into new memory, and flip would need a negative stride, which PyTorch "
    "does not have: both copy.",
    choices=("view", "copy"),
    mistakes={
        ("view", "view", "view", "view"): "index_select always gathers into new memory, even evenly spaced rows "
        "that a slice could view; flip would need a negative stride, which PyTorch does not have.",
        ("copy", "copy", "copy", "copy"): "t() and expand only change strides: they read x's memory.",
        ("view", "copy", "copy", "copy"): "expand writes nothing: it repeats row 0 by giving it stride 0.",
        ("view", "view", "view", "copy"): "index_select picks rows like indexing with a tensor of indices: a copy.",
    },
)


def _rebind(x, y):
    y = x + y  # noqa: F841 - the statement of the prediction: a new tensor, bound to the local name


def _write_through_temporary(x, y):
    y[:] = x + y


def _add_in_place(x, y):
    y += x


def _add_peak_truth() -> tuple[int, int, int]:
    """Peak bytes of ``y = x + y``, ``y[:] = x + y`` and ``y += x`` on 1,000 float32 each."""
    peaks = []
    for statement in (_rebind, _write_through_temporary, _add_in_place):
        x, y = torch.ones(1000), torch.ones(1000)
        with measure_memory() as memory:
            statement(x, y)
        peaks.append(memory.peak)
    return tuple(peaks)


prediction(
    "ch2.q_add_peak",
    _add_peak_truth,
    why="x + y computes into a new 4,000-byte tensor: y = x + y keeps it, y[:] = x + y copies it into y and "
    "frees it. y += x adds straight into y's memory.",
    mistakes={
        (4000, 0, 0): "y[:] = x + y computes x + y first, into a temporary as large as y; only then is it copied.",
        (0, 0, 0): "y = x + y makes a new tensor for the sum and moves the name y to it.",
        (4000, 4000, 4000): "y += x runs add_, which writes the sum into y's own memory.",
        (0, 4000, 0): "y = x + y makes a new tensor for the sum and moves the name y to it.",
    },
)


def _copy_truth() -> tuple[str, str]:
    import copy

    x = torch.arange(6.0)
    return tuple("yes" if shares_memory(other, x) else "no" for other in (copy.copy(x), copy.deepcopy(x)))


prediction(
    "ch2.q_copy",
    _copy_truth,
    why="copy.copy makes a new tensor object over x's storage. copy.deepcopy copies the numbers into new memory.",
    choices=("yes", "no"),
    mistakes={
        ("no", "no"): "copy.copy copies only the tensor object, not the numbers: it reads x's memory.",
        ("yes", "yes"): "copy.deepcopy copies the numbers into new memory.",
        ("no", "yes"): "it is the other way round: the shallow copy shares, the deep copy does not.",
    },
)
