"""Chapter 7 exercises: what torch.save writes, what a module's .to() converts, when .to() returns its input.

Every checker runs torch itself: the learner's function is applied to slices of a big tensor and the result
is really saved to an in-memory file (its size measured, its values loaded back); the learner's module class
is built and converted with ``.to(torch.float64)``; predictions are compared with what ``.to()`` returns on a
fresh tensor. The quick predictions of the core chapter (``ch7.q_*``) compute their answers the same way.
"""

from __future__ import annotations

import io

import torch
from torch import nn

from . import correct, exercise, not_attempted, prediction, wrong


def saved_size(obj) -> int:
    """How many bytes ``torch.save(obj, ...)`` writes (into memory, no file is created)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getbuffer().nbytes


def _same_storage(a, b) -> bool:
    """Whether two tensors read one storage (a view, or the tensor itself), rather than two storages."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _load(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer)


# --- ch7.save_small -------------------------------------------------------------------------------------------

#: Saving a tensor costs this much beyond its elements' bytes (archive headers, pickled metadata); an answer
#: may differ from ``piece.clone()`` by this much without being judged as saving extra data.
_SIZE_SLACK = 512


def _save_small_cases():
    big = torch.arange(100_000, dtype=torch.float32)
    matrix = torch.arange(60_000, dtype=torch.float64).view(600, 100)
    return [
        ("a contiguous slice big[1000:1010]", big[1000:1010]),
        ("every 1000th element, big[::1000]", big[::1000]),
        ("a column of a matrix, matrix[:, 7]", matrix[:, 7]),
        ("a row of a float64 matrix, matrix[3]", matrix[3]),
    ]


@exercise("ch7.save_small", function="def what_to_save(piece): ...")
def check_save_small(fn):
    for description, piece in _save_small_cases():
        before, version_before = piece.clone(), piece._version
        result = fn(piece)
        if not isinstance(result, torch.Tensor):
            return wrong(
                f"for {description} your function returned {type(result).__name__}, not a tensor.",
                "return a tensor that holds the slice's values.",
            )
        if piece._version != version_before or not torch.equal(piece, before):
            return wrong(
                f"your function changed its input ({description}).", "make a new tensor; do not write into the slice."
            )
        if result.dtype != piece.dtype or result.shape != piece.shape:
            return wrong(
                f"for {description} you return shape {tuple(result.shape)} and dtype {result.dtype}; "
                f"the slice has {tuple(piece.shape)} and {piece.dtype}.",
                "keep the slice's shape and dtype: only its memory should change.",
            )
        loaded = _load(result)
        if not torch.equal(loaded, before):
            return wrong(
                f"for {description} the values loaded back differ from the slice's.",
                "save the same numbers the slice holds.",
            )
        written = saved_size(result)
        needed = saved_size(before.clone())
        whole = piece.untyped_storage().nbytes()
        if written > needed + _SIZE_SLACK:
            if written >= whole and not _same_storage(result, piece):
                return wrong(
                    f"for {description} ({piece.numel()} elements) torch.save wrote {written:,} bytes: your copy "
                    f"duplicated the whole {whole:,}-byte storage of the big tensor, as copy.deepcopy of a view does.",
                    "copy only the slice's elements into new memory: piece.clone().",
                )
            if written >= whole:
                hint = "the tensor you save still uses the big tensor's storage, and torch.save writes whole storages."
                if piece.is_contiguous():
                    hint += (
                        " contiguous() returns the tensor itself when it is already contiguous."
                        " Copy the elements into new memory."
                    )
                else:
                    hint += " Copy the elements into new memory of their own."
                return wrong(
                    f"for {description} ({piece.numel()} elements) torch.save wrote {written:,} bytes: "
                    f"the whole {whole:,}-byte storage of the big tensor.",
                    hint,
                )
            return wrong(
                f"for {description} torch.save wrote {written:,} bytes; the slice's elements need only about "
                f"{needed:,}.",
                "the saved tensor should own a storage exactly as big as its elements.",
            )
    return correct(
        "for every slice tried, torch.save wrote only the slice's own bytes (plus a small header), and the values "
        "loaded back are the slice's."
    )


# --- ch7.module_to --------------------------------------------------------------------------------------------


@exercise("ch7.module_to")
def check_module_to(cls):
    if isinstance(cls, nn.Module):
        return wrong(
            "you passed a module object; the checker needs the class, to build fresh ones.",
            "pass the class itself: tl.check('ch7.module_to', FixedNormalizer).",
        )
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        return wrong(
            "the answer should be your nn.Module subclass, FixedNormalizer.", "define the class, then pass its name."
        )
    mean = torch.tensor([1.0, 2.0, 3.0])
    std = torch.tensor([2.0, 4.0, 8.0])
    module = cls(mean.clone(), std.clone())
    stored = {name: getattr(module, name, None) for name in ("mean", "std")}
    if all(value is None for value in stored.values()):
        return not_attempted("store mean and std in __init__ (replace the ...), then run the check again.")
    for name, value in stored.items():
        if not isinstance(value, torch.Tensor):
            return wrong(
                f"module.{name} is {type(value).__name__}, not a tensor.",
                f"keep {name} as a tensor attribute of the module: forward() reads self.{name}.",
            )
        if value.dtype != torch.float32:
            return wrong(
                f"the checker passed a float32 {name}, and the new module holds it as {value.dtype}: converting it "
                "yourself in __init__ decides the dtype once, instead of letting .to() decide it later.",
                f"store {name} as it is given; module.to(...) is what should convert it.",
            )
    parameters = dict(module.named_parameters())
    for name in ("mean", "std"):
        if name in parameters:
            requires = (
                "" if parameters[name].requires_grad else " (requires_grad=False keeps an optimizer from moving it)"
            )
            return wrong(
                f"{name} is an nn.Parameter: .to() converts it, but it now counts among the module's parameters: "
                f"module.parameters(), the optimizer's param groups and what anyone who trains the module hands "
                f"over{requires}.",
                "a tensor that should move with the module but not be trained is a buffer: self.register_buffer(...).",
            )
    returned = module.to(torch.float64)
    if returned is not module:
        return wrong(
            "module.to(...) did not return the module itself.", "do not override .to(); register the tensors instead."
        )
    buffers = dict(module.named_buffers())
    for name in ("mean", "std"):
        value = getattr(module, name)
        if value.dtype != torch.float64:
            return wrong(
                f"after module.to(torch.float64), module.{name} is still {value.dtype}: "
                "a tensor kept as a plain attribute is invisible to .to().",
                f"register it: self.register_buffer('{name}', {name}). Buffers move with .to() and .cuda() like "
                "parameters.",
            )
        if name not in buffers:
            return wrong(
                f"module.{name} became float64, but it is not a registered buffer.",
                f"self.register_buffer('{name}', {name}) makes .to(), .cuda() and state_dict() know about it.",
            )
    x = torch.tensor([[3.0, 6.0, 11.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    output = module(x)
    expected = (x - mean.double()) / std.double()
    if not isinstance(output, torch.Tensor) or output.dtype != torch.float64 or not torch.allclose(output, expected):
        return wrong(
            "the converted module does not compute (x - mean) / std in float64.", "keep forward() as it was given."
        )
    saved = set(module.state_dict())
    missing = [name for name in ("mean", "std") if name not in saved]
    if missing:
        return wrong(
            f"{' and '.join(missing)} moved with .to(), but state_dict() leaves {'them' if len(missing) > 1 else 'it'} "
            "out: torch.save(module.state_dict(), ...) would not save the statistics.",
            "register_buffer(..., persistent=False) keeps a buffer out of state_dict(); the exercise asks for buffers "
            "that are saved, so leave persistent at its default (True).",
        )
    return correct(
        "mean and std are buffers: module.to(torch.float64) converted them with the weights, state_dict() saves "
        "them, and the module computes in float64 throughout."
    )


# --- ch7.predict_same_object ----------------------------------------------------------------------------------

#: The calls of the exercise, each applied to ``x = torch.arange(6.0)`` (float32, on the CPU).
SAME_OBJECT_CALLS = (
    "x.to(torch.float32)",
    "x.to(torch.float64)",
    "x.to('cpu')",
    "x.to(torch.float32, copy=True)",
    "x.to(torch.ones(2))",
    "x.to(torch.int64)",
    "x.to('cpu', non_blocking=True)",
)


def same_object_truth() -> tuple[bool, ...]:
    """For each call in ``SAME_OBJECT_CALLS``, whether torch returns the very tensor it was called on."""
    answers = []
    for call in SAME_OBJECT_CALLS:
        x = torch.arange(6.0)
        result = eval(call, {"torch": torch}, {"x": x})  # noqa: S307 - fixed expressions defined above
        answers.append(result is x)
    return tuple(answers)


@exercise("ch7.predict_same_object")
def check_predict_same_object(answer):
    count = len(SAME_OBJECT_CALLS)
    if isinstance(answer, dict):
        answer = [answer.get(call) for call in SAME_OBJECT_CALLS]
    if not isinstance(answer, (list, tuple)) or len(answer) != count or not all(isinstance(a, bool) for a in answer):
        return wrong(
            f"the answer should be a list of {count} True/False values, one per call, in order.",
            "e.g. answer = [True, False, ...]: True where the call returns x itself.",
        )
    truth = same_object_truth()
    mistakes = [i for i in range(count) if answer[i] != truth[i]]
    if not mistakes:
        return correct(
            "`.to()` hands back the very same tensor when dtype and device already match (whatever non_blocking says), "
            "and makes new memory when the dtype changes or copy=True asks for it."
        )
    listed = ", ".join(f"{SAME_OBJECT_CALLS[i]} (you said {answer[i]})" for i in mistakes)
    hints = []
    for i in mistakes:
        if "copy=True" in SAME_OBJECT_CALLS[i]:
            hint = "copy=True forces a new tensor even when nothing would change."
        elif truth[i]:
            hint = (
                "When the requested dtype and device are the ones x already has, .to() returns x itself: no new "
                "object, no copy. Passing a tensor means 'the dtype and device of that tensor'; non_blocking changes "
                "nothing on the CPU."
            )
        else:
            hint = "A different dtype needs new memory: each element is converted and written into a fresh storage."
        if hint not in hints:
            hints.append(hint)
    return wrong(f"{len(mistakes)} of {count} wrong: {listed}.", " ".join(hints))


# --- ch7.load_without_copy ------------------------------------------------------------------------------------

#: In-place operations that write values into a tensor. Any of them on a tensor with real memory, while the
#: learner's function builds and loads the model, means values were written that the file already holds: a random
#: initialisation (``uniform_``, ``normal_``, ...) or ``load_state_dict`` copying into existing parameters (``copy_``).
_WRITING_OPS = frozenset(
    {
        "uniform_",
        "normal_",
        "copy_",
        "fill_",
        "zero_",
        "random_",
        "bernoulli_",
        "exponential_",
        "geometric_",
        "log_normal_",
        "cauchy_",
    }
)


#: Ops that only allocate (no values). Any other op that makes a storage with bytes while the learner's function
#: runs copies values into it (``clone``, ``_to_copy``, ...).
_EMPTY_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


def _values_written_during(fn, *args):
    """Run ``fn(*args)``; return its result, the names of writing ops that ran on non-meta tensors, and the
    ``(op name, bytes)`` of every non-meta storage with bytes that an op made (not one of its inputs' storages).

    Loading with ``mmap=True`` makes only empty tensors (``aten::empty`` of 0 bytes, then ``set_`` onto the mapped
    storage), so any allocation with bytes means the model got memory of its own before the file's tensors
    replaced it (``nn.utils.skip_init`` and ``to_empty`` do, through ``aten::empty_like``).
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    written = []
    allocated = []

    def real_storage(value):
        return isinstance(value, torch.Tensor) and value.device.type != "meta"

    class WatchWrites(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            target = args[0] if args else None
            if name in _WRITING_OPS and real_storage(target):
                written.append(name)
            result = func(*args, **(kwargs or {}))
            inputs = {arg.untyped_storage().data_ptr() for arg in args if real_storage(arg)}
            for output in result if isinstance(result, (tuple, list)) else (result,):
                if real_storage(output) and output.untyped_storage().nbytes() > 0:
                    if output.untyped_storage().data_ptr() not in inputs:
                        allocated.append((name, output.untyped_storage().nbytes()))
            return result

    with WatchWrites():
        result = fn(*args)
    return result, written, allocated


def _mapped_path(tensor):
    """The file behind ``tensor``'s memory in this process's memory map, or None (Linux only; None elsewhere)."""
    try:
        with open("/proc/self/maps") as memory_map:
            lines = memory_map.readlines()
    except OSError:
        return None
    address = tensor.untyped_storage().data_ptr()
    for line in lines:
        fields = line.split(maxsplit=5)
        low, high = (int(value, 16) for value in fields[0].split("-"))
        if low <= address < high:
            return fields[5].strip() if len(fields) == 6 else ""
    return ""


@exercise("ch7.load_without_copy", function="def load_linear(path, in_features, out_features): ...")
def check_load_without_copy(fn):
    import os
    import tempfile

    generator = torch.Generator().manual_seed(7)
    saved = {"weight": torch.randn(20, 30, generator=generator), "bias": torch.randn(20, generator=generator)}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save(saved, path)
        model, written, allocated = _values_written_during(fn, path, 30, 20)
        if not isinstance(model, nn.Module):
            return wrong(
                f"your function returned {type(model).__name__}, not the model.",
                "return the nn.Linear after loading the weights into it.",
            )
        parameters = dict(model.named_parameters())
        if set(parameters) != {"weight", "bias"}:
            return wrong(
                f"the returned model's parameters are {sorted(parameters)}, not ['bias', 'weight'].",
                "build nn.Linear(in_features, out_features) and return it; the weight and bias must be Parameters.",
            )
        on_meta = [name for name, parameter in parameters.items() if parameter.device.type == "meta"]
        if on_meta:
            return wrong(
                f"{' and '.join(on_meta)} {'are' if len(on_meta) > 1 else 'is'} still on the meta device: "
                "load_state_dict copied into meta parameters, which does nothing (PyTorch warned).",
                "pass assign=True to load_state_dict, so that the loaded tensors are put into the model instead of "
                "copied.",
            )
        for name, parameter in parameters.items():
            if not torch.equal(parameter.detach().cpu(), saved[name]):
                return wrong(f"model.{name} does not hold the values saved in the file.", "load the file at `path`.")
            if not parameter.requires_grad:
                return wrong(
                    f"model.{name} does not require grad, so it could not be trained.",
                    "keep the parameters trainable: load_state_dict(..., assign=True) keeps requires_grad as it was.",
                )
        if "uniform_" in written or "normal_" in written:
            return wrong(
                "the model was built with real memory, so its random initialisation ran, on values the file "
                "replaces at once.",
                'build it on the meta device: with torch.device("meta"): model = nn.Linear(...), or device="meta".',
            )
        if written:
            return wrong(
                f"values were written into tensors that already had memory ({', '.join(sorted(set(written)))}): "
                "load_state_dict copied the checkpoint into the model's parameters.",
                "build the model on the meta device and load with assign=True, so nothing is copied.",
            )
        emptied = [(name, nbytes) for name, nbytes in allocated if name in _EMPTY_OPS]
        copied = sorted({f"aten::{name}" for name, _ in allocated if name not in _EMPTY_OPS})
        if emptied:
            allocated = emptied
            ops = ", ".join(sorted({f"aten::{name}" for name, _ in allocated}))
            return wrong(
                f"the model's parameters got {sum(nbytes for _, nbytes in allocated):,} bytes of memory of their own "
                f"({ops}) before the file's tensors replaced them: no random numbers, but memory allocated for "
                "nothing (nn.utils.skip_init and to_empty() do this).",
                'build the model on the meta device (with torch.device("meta"): ...), so that its parameters get '
                "no memory until assign=True puts the file's tensors in their place.",
            )
        if copied:
            return wrong(
                f"the loaded values were copied into new memory ({', '.join(copied)}), so the model's parameters "
                "are not the file's mapped bytes.",
                "keep the tensors torch.load(path, mmap=True) returns as they are (no clone(), no conversion); "
                "assign=True puts them into the model.",
            )
        mapped = _mapped_path(model.weight)
        if mapped is not None and not mapped.startswith(os.path.realpath(path)) and not mapped.startswith(path):
            return wrong(
                "the model's weight is in ordinary memory, not in the file: torch.load read the whole file into RAM.",
                "load with torch.load(path, mmap=True), so that the storages are mapped from the file.",
            )
        note = (
            "" if mapped is not None else " (this system has no /proc/self/maps, so the mapping itself was not checked)"
        )
    return correct(
        "built without memory or random numbers, loaded without a copy: the model's parameters are the file's mapped "
        f"bytes{note}."
    )


# --- quick predictions of the core chapter ----------------------------------------------------------------------


def same_or_new() -> tuple[str, ...]:
    """For ``x = torch.arange(6.0)``: whether ``x.to(torch.float32)``, ``x.to(torch.float64)`` and
    ``x.to(torch.float32, copy=True)`` return x itself ("same") or a new tensor ("new")."""
    x = torch.arange(6.0)
    calls = (lambda: x.to(torch.float32), lambda: x.to(torch.float64), lambda: x.to(torch.float32, copy=True))
    return tuple("same" if call() is x else "new" for call in calls)


prediction(
    "ch7.q_same_object",
    same_or_new,
    why="x is already float32 on the CPU, so x.to(torch.float32) has nothing to convert and returns x itself. "
    "A new dtype needs new memory for the converted values, and copy=True asks for a new tensor even when nothing "
    "changes.",
    choices=("same", "new"),
    mistakes={
        ("new", "new", "new"): ".to() returns its input when the dtype and device already match: nothing is "
        "converted and nothing is allocated.",
        ("same", "same", "same"): "float64 values need new memory: each element is converted and written into a "
        "storage of its own.",
        ("same", "new", "same"): "copy=True forces a new tensor even when nothing would change.",
    },
)


class ShiftModule(nn.Module):
    """The chapter's module: one parameter, one buffer, one plain tensor attribute."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))
        self.register_buffer("running_shift", torch.zeros(3))
        self.offset = torch.full((3,), 0.1)


def dtypes_after_module_to() -> tuple[str, ...]:
    """The dtypes of (weight, running_shift, offset) after ``ShiftModule().to(torch.float64)``."""
    module = ShiftModule().to(torch.float64)
    names = ("weight", "running_shift", "offset")
    return tuple(str(getattr(module, name).dtype).replace("torch.", "") for name in names)


prediction(
    "ch7.q_plain_attribute",
    dtypes_after_module_to,
    why="module.to(torch.float64) converts the floating-point tensors the module knows about: its parameters and "
    "its registered buffers. A tensor kept as a plain attribute is invisible to it and keeps its dtype.",
    choices=("float32", "float64"),
    mistakes={
        ("float64", "float64", "float64"): "offset is a plain attribute, not a parameter or a buffer, so "
        "module.to() does not see it.",
        ("float64", "float32", "float32"): "a registered buffer is converted like a parameter.",
        ("float32", "float32", "float32"): "module.to() converts the module's own parameters and buffers, in place.",
    },
)


def child_write_reaches_parent() -> str:
    """Whether a tensor sent through torch.multiprocessing is shared with the receiver ("changed": the receiver's
    in-place write reaches the sender) or copied ("unchanged")."""
    from multiprocessing.reduction import ForkingPickler

    message = torch.arange(4.0)
    ForkingPickler.dumps(message)  # what a queue's put() does with the tensor before anything is sent
    return "changed" if message.is_shared() else "unchanged"


prediction(
    "ch7.q_child_write",
    child_write_reaches_parent,
    why="put() moves the tensor's storage into shared memory before it sends a handle. The child maps the same "
    "memory, so its in-place write lands in the parent's tensor.",
    choices=("changed", "unchanged"),
    mistakes={
        "unchanged": "torch.multiprocessing does not copy a CPU tensor's bytes to the child: both processes "
        "read and write one block of shared memory.",
    },
)


def loaded_pair_after_a_write() -> tuple[str, str]:
    """Save ``{"base": base, "window": base[2:5]}`` in one call, load it, write into the loaded window: whether the
    loaded base and the original base "changed" or stayed "unchanged"."""
    base = torch.arange(10.0, 16.0)
    original = base.clone()
    loaded = _load({"base": base, "window": base[2:5]})
    loaded_before = loaded["base"].clone()
    loaded["window"][0] = 100.0
    return tuple(
        "unchanged" if torch.equal(now, before) else "changed"
        for now, before in ((loaded["base"], loaded_before), (base, original))
    )


prediction(
    "ch7.q_saved_together",
    loaded_pair_after_a_write,
    why="base and window share one storage, and the file holds it once. Loading gives back one new storage with both "
    "tensors over it, so the write through the loaded window changes the loaded base. The original base lives in "
    "other memory and stays as it was.",
    choices=("changed", "unchanged"),
    mistakes={
        ("unchanged", "unchanged"): "saved in one call, the two tensors come back over one storage, as they were "
        "saved: a write through one reaches the other.",
        ("changed", "changed"): "torch.load puts the values into new memory: nothing links the loaded tensors to the "
        "original base.",
        ("unchanged", "changed"): "it is the other way round: the loaded pair share a new storage, and the original "
        "is separate from it.",
    },
)
