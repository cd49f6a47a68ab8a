"""view_or_copy and trace_ops on odd inputs (issue 13, sections 2 and 4): each answer against torch or numpy.

The ground truth is what torch or numpy does with the same expression on an independently built input:
the result's storage address and size (``untyped_storage()``), ``numpy.shares_memory``, whether values or
``_version`` changed, and the error torch itself raises.
"""

import copy
import itertools
import re

import numpy as np
import pytest
import torch
from allocator_truth import allocator_figures
from ground_truth import write_moves_counter
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib import op_table, trace_ops, view_or_copy


def only_row(expression, **inputs):
    return view_or_copy([expression], **inputs)[0]


def captured_input(expression_function, **inputs):
    """Run one callable through view_or_copy and return (row, the input copy it received)."""
    seen = {}

    def run(**kwargs):
        seen.update(kwargs)
        return expression_function(**kwargs)

    row = view_or_copy({"f": run}, **inputs)[0]
    return row, seen


def torch_truth(result, x, version_before, values_before):
    """The verdict and held bytes from torch's own facts about ``result`` of an expression on ``x``."""
    if x._version != version_before or not torch.equal(x.detach().resolve_conj().resolve_neg(), values_before):
        return "in-place", None
    if isinstance(result, np.ndarray):  # x.numpy(): over x's storage, with no version counter: an alias
        owner = result
        while isinstance(owner, np.ndarray) and owner.base is not None:
            owner = owner.base
        over_x = isinstance(owner, torch.Tensor) and owner.untyped_storage()._cdata == x.untyped_storage()._cdata
        return (_view_or_alias(result, x), 0) if over_x else ("copy", result.nbytes)
    if not isinstance(result, torch.Tensor):
        return "not a tensor", 0
    if result is x:
        return "same tensor", 0
    mine, theirs = result.untyped_storage(), x.untyped_storage()
    if mine._cdata == theirs._cdata or mine.data_ptr() != 0 and mine.data_ptr() == theirs.data_ptr():
        return _view_or_alias(result, x), 0
    return "copy", result.untyped_storage().nbytes()


def _view_or_alias(result, x) -> str:
    """A result over x's memory: a view when a write through it moves x's version counter, else an alias (an
    inference tensor has no counter: a view). Writes through ``result``: call it last."""
    if x.is_inference():
        return "view"
    return "view" if write_moves_counter(result, x) else "alias"


# ------------------------------------------------------------------------------------- conj and neg bits
def complex_pair():
    return torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128)


@pytest.mark.parametrize(
    "make",
    [lambda z: z.conj(), lambda z: torch._neg_view(z), lambda z: z.conj().imag],
    ids=["conj", "neg", "conj_imag"],
)
@pytest.mark.parametrize("expression", ["x.resolve_conj()", "x.resolve_neg()", "x.clone()", "x.conj()"])
def test_conj_and_neg_bits_survive_the_fresh_copy(make, expression):
    original = make(complex_pair())
    truth_input = make(complex_pair())
    result = eval(expression, {"torch": torch}, {"x": truth_input})
    verdict, held = torch_truth(result, truth_input, truth_input._version, truth_input.resolve_conj().resolve_neg())
    row, seen = captured_input(lambda x: eval(expression, {"torch": torch}, {"x": x}), x=original)
    assert row.verdict == verdict
    if verdict == "copy":
        assert row.new_bytes == held
    # the expression saw the values the caller's tensor has, bits included
    assert seen["x"].is_conj() == original.is_conj() and seen["x"].is_neg() == original.is_neg()
    assert torch.equal(seen["x"].resolve_conj().resolve_neg(), original.resolve_conj().resolve_neg())


def test_resolve_conj_of_a_conj_view_is_a_copy_of_its_bytes():
    z = complex_pair().conj()
    truth = z.resolve_conj()
    row = only_row("x.resolve_conj()", x=z)
    assert truth.untyped_storage().data_ptr() != z.untyped_storage().data_ptr()
    assert (row.verdict, row.new_bytes, row.shares_memory) == ("copy", truth.untyped_storage().nbytes(), False)


# ------------------------------------------------------------------------------------------ numpy inputs
def sliced_array():
    return np.arange(10.0)[::2]


@pytest.mark.parametrize(
    "expression",
    [
        "np.ascontiguousarray(x)",
        "x.ravel()",
        "x.reshape(-1)",
        "x.copy()",
        "x[1:]",
        "x.T.reshape(-1)",
        "x[::-1]",
        "x.view()",
        "x[:0]",
    ],
)
@pytest.mark.parametrize(
    "make",
    [
        sliced_array,
        lambda: np.arange(12.0).reshape(3, 4),
        lambda: np.arange(12.0).reshape(3, 4)[:, ::2],
        lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        lambda: np.empty((0, 3)),
        lambda: np.array(3.0),
        lambda: np.broadcast_to(np.arange(3.0), (2, 3)),
    ],
    ids=["sliced", "matrix", "gaps", "fortran", "empty", "zero_dim", "broadcast"],
)
def test_numpy_inputs_keep_their_layout(expression, make):
    truth_input = make()
    try:
        result = eval(expression, {"np": np}, {"x": truth_input})
    except Exception as error:  # noqa: BLE001 - numpy's own refusal is the truth
        with pytest.raises(type(error)):
            only_row(expression, x=make())
        return
    row = only_row(expression, x=make())
    if result is truth_input:
        assert row.verdict == "same tensor"
    elif np.shares_memory(result, truth_input) or (result.size == 0 and result.base is not None):
        assert row.verdict == "view"
    else:
        root = result if result.base is None else result.base
        assert (row.verdict, row.new_bytes) == ("copy", root.nbytes)
    assert row.shares_memory == bool(np.shares_memory(result, truth_input))


def test_numpy_out_argument_is_in_place():
    a = np.arange(4.0)
    result = np.add(a, 1, out=a)
    assert result is a  # numpy hands back the same array, after writing it
    assert only_row("np.add(x, 1, out=x)", x=np.arange(4.0)).verdict == "in-place"


def test_a_write_through_numpy_into_a_tensor_input_is_in_place():
    t = torch.arange(4.0)
    np.add(t.numpy(), 1, out=t.numpy())
    assert torch.equal(t, torch.arange(4.0) + 1) and t._version == 0  # torch's counter did not move
    assert only_row("np.add(x.numpy(), 1, out=x.numpy())", x=torch.arange(4.0)).verdict == "in-place"


# --------------------------------------------------------------------------- aliasing between the inputs
def test_inputs_that_overlap_still_overlap():
    a = torch.arange(6.0)
    with pytest.raises(RuntimeError) as truth:
        a[:4].add_(a[2:])
    b = torch.arange(6.0)
    with pytest.raises(type(truth.value), match="single memory location"):
        view_or_copy(["x.add_(y)"], x=b[:4], y=b[2:])
    assert torch.equal(b, torch.arange(6.0))  # the caller's tensor is untouched


def test_a_tensor_and_its_numpy_view_stay_one_memory():
    t = torch.arange(4.0)
    row, seen = captured_input(lambda x, y: x.add_(1), x=t, y=t.numpy())
    assert np.shares_memory(seen["x"].numpy(), seen["y"])
    assert row.verdict == "in-place"
    assert torch.equal(t, torch.arange(4.0))


def test_two_from_numpy_tensors_over_one_array_stay_aliased():
    array = np.arange(8.0)
    x, y = torch.from_numpy(array), torch.from_numpy(array[2:])
    _, seen = captured_input(lambda x, y: x, x=x, y=y)
    assert seen["x"].data_ptr() + 2 * 8 == seen["y"].data_ptr()
    assert seen["y"].untyped_storage().nbytes() == y.untyped_storage().nbytes()


# ------------------------------------------------------------------------------------- autograd leafness
def test_a_non_leaf_input_stays_a_non_leaf():
    w = torch.ones(3, requires_grad=True)
    truth = w * 2
    truth.add_(1)  # torch allows it: not a leaf
    row, seen = captured_input(lambda x: x.add_(1), x=w * 2)
    assert row.verdict == "in-place"
    assert not seen["x"].is_leaf and seen["x"].requires_grad


def test_a_leaf_that_requires_grad_still_refuses_in_place():
    with pytest.raises(RuntimeError) as truth:
        torch.ones(3, requires_grad=True).add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        view_or_copy(["x.add_(1)"], x=torch.ones(3, requires_grad=True))
    assert "leaf Variable" in str(truth.value)


def test_a_view_of_a_leaf_still_refuses_in_place():
    with pytest.raises(RuntimeError) as truth:
        torch.ones(4, requires_grad=True)[:2].add_(1)
    with pytest.raises(RuntimeError) as ours:
        view_or_copy(["x.add_(1)"], x=torch.ones(4, requires_grad=True)[:2])
    assert str(ours.value).split(".")[0] == str(truth.value).split(".")[0]


# ------------------------------------------------------------------------- writes and reallocations
def test_a_write_through_x_data_is_in_place():
    x = torch.arange(4.0)
    version = x._version
    x.data.mul_(1)  # same values, and x's own counter does not move
    assert x._version == version
    assert only_row("x.data.mul_(1)", x=torch.arange(4.0)).verdict == "in-place"
    assert only_row("x.data.add_(1)", x=torch.arange(4.0)).verdict == "in-place"


def test_to_sparse_counts_its_index_and_value_storages():
    x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    truth = x.to_sparse()
    held = truth._indices().untyped_storage().nbytes() + truth._values().untyped_storage().nbytes()
    with trace_ops() as ops:
        x.to_sparse()
    assert sum(op.new_bytes for op in ops) == held
    row = only_row("x.to_sparse()", x=x)
    assert row.new_bytes == held and row.total_new_bytes == held


def test_an_out_tensor_that_must_grow_counts_the_new_storage():
    x = torch.arange(6.0)
    out = torch.empty(0)
    with trace_ops() as ops:
        torch.add(x, 1, out=out)
    assert ops[-1].kind == "inplace"
    assert ops[-1].new_bytes == out.untyped_storage().nbytes() == x.numel() * x.element_size()
    big_enough = torch.empty(6)
    with trace_ops() as ops:
        torch.add(x, 1, out=big_enough)
    assert ops[-1].new_bytes == 0


def test_resize_past_the_storage_counts_the_reallocation():
    x = torch.arange(3.0)
    address = x.untyped_storage().data_ptr()
    with trace_ops() as ops:
        x.resize_(100)
    assert x.untyped_storage().data_ptr() != address
    assert ops[-1].new_bytes == x.untyped_storage().nbytes()
    with trace_ops() as ops:
        x.resize_(2)  # shrinking keeps the storage
    assert ops[-1].new_bytes == 0
    row = only_row("x.resize_(100)", x=torch.arange(3.0))
    assert (row.verdict, row.new_bytes) == ("in-place", torch.arange(3.0).resize_(100).untyped_storage().nbytes())


def test_set_onto_an_existing_storage_allocates_nothing():
    x, y = torch.arange(3.0), torch.arange(10.0)
    with trace_ops() as ops:
        x.set_(y.untyped_storage())
    assert ops[-1].new_bytes == 0


def test_deepcopy_total_includes_the_storage_it_holds():
    x = torch.arange(6.0)
    held = copy.deepcopy(x).untyped_storage().nbytes()
    row = only_row("copy.deepcopy(x)", x=x)
    assert row.new_bytes == held
    assert row.total_new_bytes >= row.new_bytes


# ------------------------------------------------------------------------------------- not tensors
@pytest.mark.parametrize(
    ("expression", "shares"),
    [
        ("x.untyped_storage()", True),
        ("x.shape", False),
        ("x.numel()", False),
        ("x[0].item()", False),
        ("x.tolist()", False),
    ],
)
def test_results_that_are_not_tensors_say_so(expression, shares):
    x = torch.arange(6.0)
    result = eval(expression, {}, {"x": x})
    assert not isinstance(result, torch.Tensor)
    if isinstance(result, torch.UntypedStorage):
        assert (result.data_ptr() == x.data_ptr()) is shares
    row = only_row(expression, x=x)
    assert (row.verdict, row.new_bytes, row.shares_memory) == ("not a tensor", 0, shares)
    assert "not a tensor" in op_table([expression], x=x)._repr_html_()


# ------------------------------------------------------------------------------ unusual inputs, errors
@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_quantized_input_gets_a_clear_error_or_runs_on_itself():
    q = torch.quantize_per_tensor(torch.arange(4.0), 0.1, 0, torch.quint8)
    with pytest.raises(ValueError, match="x is a quantized tensor.*fresh_inputs=False"):
        view_or_copy(["x[1:]"], x=q)
    truth = q[1:]
    row = view_or_copy(["x[1:]"], fresh_inputs=False, x=q)[0]
    assert truth.untyped_storage().data_ptr() == q.untyped_storage().data_ptr()
    assert row.verdict == "view"


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_nested_input_gets_a_clear_error():
    nested = torch.nested.nested_tensor([torch.arange(3.0), torch.arange(2.0)])
    with pytest.raises(ValueError, match="nt is a nested tensor"):
        view_or_copy(["nt"], nt=nested)


def test_meta_input_error_names_the_input():
    with pytest.raises(ValueError, match="^m is a meta tensor"):
        view_or_copy(["m.t()"], m=torch.empty(2, 3, device="meta"))


@pytest.mark.parametrize("value", ["no", 0, None, 1.0])
def test_fresh_inputs_must_be_a_bool(value):
    with pytest.raises(TypeError, match="fresh_inputs must be True or False"):
        view_or_copy(["x.t()"], fresh_inputs=value, x=torch.ones(2, 2))


# ====================================================================================== property tests
ODD_KINDS = (
    "plain",
    "zero_dim",
    "empty",
    "expanded",
    "conj",
    "neg",
    "dtype_view",
    "numpy_backed",
    "channels_last",
    "many_dims",
    "non_leaf",
    "leaf_grad",
    "transposed",
    "offset",
)


def odd_tensor(kind: str, size: int) -> torch.Tensor:
    """A tensor of an odd kind, built the same way every time (so ground truth can build its own)."""
    base = torch.arange(float(max(size, 1)) * 4)
    if kind == "zero_dim":
        return torch.tensor(float(size))
    if kind == "empty":
        return torch.empty(0, size)
    if kind == "expanded":
        return base[:size].view(size, 1).expand(size, 3)
    if kind == "conj":
        return torch.complex(base[:size], base[:size] + 1).conj()
    if kind == "neg":
        return torch._neg_view(torch.complex(base[:size], -base[:size]))
    if kind == "dtype_view":
        return base[: 2 * size].view(torch.int16)
    if kind == "numpy_backed":
        return torch.from_numpy(np.arange(4.0 * size)[1::2])
    if kind == "channels_last":
        return base[: 2 * size * 2].reshape(1, 2, size, 2).to(memory_format=torch.channels_last)
    if kind == "many_dims":
        return base[:size].reshape([1] * 70 + [size])
    if kind == "non_leaf":
        return torch.ones(size, 2, requires_grad=True) * 2
    if kind == "leaf_grad":
        return torch.ones(size, 2, requires_grad=True)
    if kind == "transposed":
        return base[: 2 * size].reshape(2, size).t()
    if kind == "offset":
        return base[2 : 2 + size]
    return base[:size].clone()


EXPRESSIONS = (
    "x.reshape(-1)",
    "x.contiguous()",
    "x.clone()",
    "x[..., :1]",
    "x.flatten()",
    "x.resolve_conj()",
    "x.resolve_neg()",
    "x.add_(1)",
    "x.mul_(1)",
    "x.detach()",
    "x.data.mul_(1)",
    "x.sum()",
    "x.to(torch.float64)",
    "x.shape",
    "x.unsqueeze(0)",
    "x.expand_as(x)",
    "x * 1",
    "x.view(-1)",
    "x.numpy()",
    "x.untyped_storage()",
    "x.zero_()",
)


def truth_of(expression: str, x: torch.Tensor):
    """(verdict, held bytes or None, shares memory) from torch itself, or the exception torch raises."""
    values_before = x.detach().clone().resolve_conj().resolve_neg()
    version = x._version
    try:
        result = eval(expression, {"torch": torch, "np": np}, {"x": x})
    except Exception as error:  # noqa: BLE001 - the error itself is the truth to match
        return error
    verdict, held = torch_truth(result, x, version, values_before)
    if verdict in ("view", "alias") and expression.split("(")[0].endswith("_"):
        verdict = "in-place"  # an in-place method (x.data.mul_(1)) that returned x's memory wrote into it
    if isinstance(result, torch.UntypedStorage):
        shares = (
            result.nbytes() > 0
            and x.numel() > 0
            and result.data_ptr() <= x.data_ptr() < (result.data_ptr() + result.nbytes())
        )
    elif isinstance(result, np.ndarray):
        shares = x.numel() > 0 and result.size > 0 and np.shares_memory(result, x.detach().numpy())
    elif isinstance(result, torch.Tensor) and result.numel() and x.numel():
        shares = bool(set(element_addresses(result)) & set(element_addresses(x)))
    else:
        shares = False
    return verdict, held, shares


def element_addresses(t: torch.Tensor) -> list[int]:
    """Every byte address any element of ``t`` covers, from torch's per-element data pointers."""
    size = t.element_size()
    return [t[index].data_ptr() + b for index in itertools.product(*map(range, t.shape)) for b in range(size)]


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@settings(max_examples=60)
@given(st.sampled_from(ODD_KINDS), st.integers(1, 4), st.sampled_from(EXPRESSIONS))
def test_view_or_copy_matches_torch_on_odd_inputs(kind, size, expression):
    truth = truth_of(expression, odd_tensor(kind, size))
    if isinstance(truth, Exception):
        with pytest.raises(type(truth)):
            view_or_copy([expression], x=odd_tensor(kind, size))
        return
    verdict, held, shares = truth
    original = odd_tensor(kind, size)
    snapshot = original.detach().clone().resolve_conj().resolve_neg()
    row = only_row(expression, x=original)
    assert row.verdict == verdict
    if verdict == "copy":
        assert row.new_bytes == held
    assert row.shares_memory == shares
    assert torch.equal(original.detach().resolve_conj().resolve_neg(), snapshot)  # the caller's tensor untouched


PAIR_EXPRESSIONS = ("x.add_(y)", "x.copy_(y)", "x + y", "torch.add(x, y, out=x)", "x.mul_(y)")


@settings(max_examples=40)
@given(st.integers(0, 5), st.integers(1, 6), st.integers(0, 5), st.integers(1, 6), st.sampled_from(PAIR_EXPRESSIONS))
def test_overlapping_inputs_behave_as_torch_says(x_start, x_len, y_start, y_len, expression):
    length = min(x_len, y_len)

    def pair():
        base = torch.arange(12.0)
        return base[x_start : x_start + length], base[y_start : y_start + length]

    x, y = pair()
    try:
        eval(expression, {"torch": torch}, {"x": x, "y": y})
        raised = None
    except RuntimeError as error:
        raised = error
    x2, y2 = pair()
    if raised is not None:
        with pytest.raises(RuntimeError, match="memory location"):
            view_or_copy([expression], x=x2, y=y2)
        return
    row = view_or_copy([expression], x=x2, y=y2)[0]
    assert row.verdict == ("copy" if expression == "x + y" else "in-place")
    assert torch.equal(x2, pair()[0])


NUMPY_EXPRESSIONS = (
    "np.ascontiguousarray(x)",
    "x.ravel()",
    "x.reshape(-1)",
    "x.copy()",
    "x.T.copy()",
    "x[::2]",
    "np.add(x, 1, out=x)",
    "x.view()",
    "np.asfortranarray(x)",
    "x.flatten()",
)


@st.composite
def numpy_arrays(draw):
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    array = np.arange(float(rows * cols * 4)).reshape(rows * 2, cols * 2)
    step_r, step_c = draw(st.sampled_from([1, 2, -1])), draw(st.sampled_from([1, 2, -2]))
    array = array[::step_r, ::step_c][:rows, :cols]
    twist = draw(st.sampled_from(["none", "transposed", "empty", "zero_dim", "broadcast"]))
    if twist == "transposed":
        return array.T
    if twist == "empty":
        return array[:0]
    if twist == "zero_dim":
        return array[0, 0, ...]
    if twist == "broadcast":
        return np.broadcast_to(array[:1], (2, *array.shape[1:]))
    return array


@settings(max_examples=40)
@given(numpy_arrays(), st.sampled_from(NUMPY_EXPRESSIONS))
def test_view_or_copy_matches_numpy_on_strided_arrays(array, expression):
    original = np.array(array)  # keep the values to compare
    mine = array  # view_or_copy copies it
    fresh_truth = _rebuild_like(array)
    try:
        result = eval(expression, {"np": np}, {"x": fresh_truth})
    except Exception as error:  # noqa: BLE001 - numpy's own refusal (a read-only broadcast) is the truth
        with pytest.raises(type(error)):
            only_row(expression, x=mine)
        return
    row = only_row(expression, x=mine)
    read_only = _rebuild_like(array)
    read_only.flags.writeable = False
    try:
        eval(expression, {"np": np}, {"x": read_only})
        numpy_writes = False
    except ValueError as error:  # numpy refuses every write into a read-only array, even of no element
        numpy_writes = "read-only" in str(error)
    changed = not np.array_equal(fresh_truth, original) or numpy_writes
    if changed:
        assert row.verdict == "in-place"
    elif result is fresh_truth:
        assert row.verdict == "same tensor"
    elif np.shares_memory(result, fresh_truth) or (result.size == 0 and result.base is not None):
        assert row.verdict == "view"
    else:
        assert (row.verdict, row.new_bytes) == ("copy", (result if result.base is None else result.base).nbytes)
    assert np.array_equal(mine, original)


def _rebuild_like(array: np.ndarray) -> np.ndarray:
    """An independent array with the same strides over an equally laid-out copy of its buffer."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    buffer = root.copy(order="K")
    offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    rebuilt = np.ndarray(array.shape, array.dtype, buffer=buffer, offset=offset, strides=array.strides)
    rebuilt.flags.writeable = array.flags.writeable
    return rebuilt


@settings(max_examples=25)
@given(st.sampled_from(ODD_KINDS), st.integers(1, 3))
def test_op_table_agrees_with_view_or_copy_on_odd_inputs(kind, size):
    expressions = ["x.clone()", "x.reshape(-1)", "x.shape"]
    table = op_table(expressions, x=odd_tensor(kind, size))
    report = view_or_copy(expressions, x=odd_tensor(kind, size))
    assert str(table) == str(report)
    assert len(re.findall(r"<tr[ >]", table._repr_html_())) == len(expressions) + 1


# ------------------------------------------------------------------- more state the copy must keep
def test_a_numpy_write_that_changes_no_byte_is_still_in_place():
    a = np.arange(4.0)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):  # numpy itself calls it a write
        np.multiply(a, 1, out=a)
    assert only_row("np.multiply(x, 1, out=x)", x=np.arange(4.0)).verdict == "in-place"
    assert only_row("x.fill(0.0)", x=np.zeros(3)).verdict == "in-place"


def test_the_trial_run_shows_no_warning_and_the_real_one_does(recwarn):
    row = only_row("torch.from_numpy(x)", x=np.arange(4.0))
    assert row.verdict == "view"
    assert not [w for w in recwarn if "not writable" in str(w.message)]


def test_an_inference_tensor_stays_one():
    with torch.inference_mode():
        truth = torch.arange(3.0)
    with pytest.raises(RuntimeError) as refused:
        truth.add_(1)
    with torch.inference_mode():
        made = torch.arange(3.0)
    with pytest.raises(RuntimeError, match="inference tensor"):
        view_or_copy(["x.add_(1)"], x=made)
    assert "inference tensor" in str(refused.value)


def test_inputs_over_one_empty_storage_stay_on_one_storage():
    base = torch.empty(0)
    x, y = base[:0], base.view(0, 1)
    assert x.untyped_storage()._cdata == y.untyped_storage()._cdata
    _, seen = captured_input(lambda x, y: x, x=x, y=y)
    assert seen["x"].untyped_storage()._cdata == seen["y"].untyped_storage()._cdata


def test_separate_empty_inputs_stay_separate():
    x, y = torch.empty(0), torch.empty(0, 2)
    assert x.untyped_storage()._cdata != y.untyped_storage()._cdata
    _, seen = captured_input(lambda x, y: x, x=x, y=y)
    assert seen["x"].untyped_storage()._cdata != seen["y"].untyped_storage()._cdata


def _inference_leaf():
    with torch.inference_mode():
        return torch.arange(12.0)


def _view_made_in_no_grad():
    leaf = torch.arange(12.0, requires_grad=True)
    with torch.no_grad():
        return leaf[:6]


def _view_made_in_inference_mode():
    plain = torch.arange(12.0)
    with torch.inference_mode():
        return plain[2:]


MADE_AS = {
    "a view (arange(12.).reshape(3, 4))": lambda: torch.arange(12.0).reshape(3, 4),
    "an integer view": lambda: torch.arange(12).reshape(3, 4),
    "a view of a detached tensor": lambda: torch.arange(12.0, requires_grad=True).detach()[:4],
    "a view of a non-leaf": lambda: (torch.arange(12.0, requires_grad=True) * 2)[:6],
    "an output of unbind": lambda: (torch.arange(12.0, requires_grad=True) * 2).unbind(0)[1],
    "an output of split": lambda: (torch.arange(12.0, requires_grad=True) * 2).split(4)[1],
    "a slice of an output of unbind": lambda: (torch.arange(12.0, requires_grad=True) * 2).view(3, 4).unbind(0)[1][1:],
    "an unbind output needing no grad": lambda: torch.arange(12.0).unbind(0)[1],
    "a view made in no_grad": _view_made_in_no_grad,
    "a view made in inference_mode": _view_made_in_inference_mode,
    "an inference tensor": _inference_leaf,
    "a view with another dtype": lambda: torch.arange(4.0).view(torch.uint8)[2:],
}


@pytest.mark.parametrize("made_as", list(MADE_AS))
@pytest.mark.parametrize(
    "expression", ["x.detach_()", "x.add_(1)", "x.t_()", "x.unsqueeze_(0)", "x.requires_grad_()", "x.view(-1)"]
)
def test_the_verdict_is_what_torch_does_with_that_very_input(made_as, expression):
    # The fresh copy keeps being a view, and how the view was made: torch refuses detach_ on any view and
    # in-place ops on some (made in no_grad, an output of unbind/split), with a message naming them. The old
    # copy was no view: "same tensor" for arange(12.).reshape(3, 4).detach_(), "in-place" for the unbind
    # output's add_, "a view of a leaf Variable ..." for the no_grad view; detach_ of an inference tensor
    # (which writes no memory) was "in-place".
    x = MADE_AS[made_as]()
    try:
        result = eval(expression, {"x": x})
    except RuntimeError as error:
        with pytest.raises(RuntimeError) as raised:
            only_row(expression, x=MADE_AS[made_as]())
        assert str(raised.value) == str(error)
        return
    row = only_row(expression, x=MADE_AS[made_as]())
    if result is x:
        writes = expression not in ("x.detach_()", "x.requires_grad_()")
        assert row.verdict == ("in-place" if writes else "same tensor")
    else:
        assert row.verdict == "view"


# --------------------------------------------------------------------- aliases: memory without the counter
# Issue 20, section 3 (fact-check #4, fuzz W5, W6). A result in x's memory is a view only when it shares x's
# version counter; x.data, copy.copy(x), x.numpy() and torch.from_numpy(x.numpy()) share the memory but not the
# counter (the silent wrong gradient chapter 2 warns about): an alias. Ground truth: write through the result and
# read x's counter.

ALIAS_EXPRESSIONS = (
    "x.data",
    "copy.copy(x)",
    "x.numpy()",
    "torch.from_numpy(x.numpy())",
    "torch.as_tensor(x.numpy())",
    "torch.utils.dlpack.from_dlpack(x)",
    "torch.empty(0).set_(x)",
    "torch.empty(0).set_(x.untyped_storage(), x.storage_offset(), x.shape, x.stride())",
    "torch.autograd.Variable(x)",
    "x.detach()",
    "x[1:]",
    "x.view(torch.int32)",
    "x.unsqueeze(0).expand(2, -1)",
    "x.as_strided((2,), (2,))",
    "torch.as_tensor(x)",
    "x.unbind()",
    "x.data[1:]",
    "x.detach().numpy()[::2]",
    "torch.from_numpy(x.numpy()[1:])",
)


def alias_inputs():
    """x made five ways: contiguous, a slice starting inside its storage (W5), a non-leaf, a transposed matrix
    flattened by a view, a tensor over a NumPy array."""
    return {
        "plain": lambda: torch.arange(6.0),
        "slice": lambda: torch.arange(8.0)[2:],
        "non-leaf": lambda: torch.arange(6.0, requires_grad=True) * 1,
        "from numpy": lambda: torch.from_numpy(np.arange(6.0)),
        "float64 view": lambda: torch.arange(12.0).view(2, 6)[1],
    }


def alias_truth(expression: str, x: torch.Tensor):
    """ "view" when a write through every output moves ``x``'s version counter, else "alias" (each expression's
    outputs all lie in x's memory)."""
    result = eval(expression, {"torch": torch, "np": np, "copy": copy}, {"x": x})
    if result is x:
        return "same tensor"
    parts = list(result) if isinstance(result, tuple) else [result]
    return "view" if all(write_moves_counter(part, x) for part in parts) else "alias"


@pytest.mark.parametrize("kind", list(alias_inputs()))
@pytest.mark.parametrize("expression", ALIAS_EXPRESSIONS)
@pytest.mark.parametrize("fresh_inputs", [True, False])
def test_results_in_x_memory_are_views_exactly_when_they_share_its_version_counter(kind, expression, fresh_inputs):
    make = alias_inputs()[kind]
    try:
        truth = alias_truth(expression, make().detach() if kind != "non-leaf" else make())
    except (RuntimeError, TypeError, ValueError, BufferError) as error:  # torch refuses it for this x: so does the tool
        with pytest.raises(type(error)):
            view_or_copy([expression], fresh_inputs=fresh_inputs, x=make())
        return
    x = make()
    version, values = x._version, x.detach().clone()
    (row,) = view_or_copy([expression], fresh_inputs=fresh_inputs, x=x)
    assert row.verdict == truth, (expression, kind)
    assert row.new_bytes == 0 and row.shares_memory  # in x's memory either way: nothing new kept
    assert x._version == version and torch.equal(x.detach(), values)  # the instrument changed no counter


def test_from_numpy_of_a_slice_is_a_zero_byte_alias():
    """fuzz W5: the result's storage object starts 8 bytes into x's; it was called 'copy, 16 bytes'."""
    for expression in (
        "torch.from_numpy(x.numpy())",
        "torch.as_tensor(x.numpy())",
        "torch.utils.dlpack.from_dlpack(x)",
    ):
        x = torch.arange(6.0)[2:]
        figures, result = allocator_figures(lambda: eval(expression, {"torch": torch}, {"x": x}))
        assert figures.allocated == 0 and result.data_ptr() == x.data_ptr()  # the allocator's truth: no copy
        for fresh in (True, False):
            (row,) = view_or_copy([expression], fresh_inputs=fresh, x=torch.arange(6.0)[2:])
            assert (row.verdict, row.new_bytes, row.total_new_bytes, row.shares_memory) == ("alias", 0, 0, True)


# fuzz W6: the fresh copies keep what an expression reads; each row is compared with the same expression run on
# the input itself (fresh_inputs=False), and with NumPy's or torch's own answer.


def owning_array():
    return np.arange(6.0)


def masked():
    return np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0])


def record_array():
    return np.rec.fromarrays([np.arange(3), np.arange(3.0)], names="a,b")


def with_grad():
    w = torch.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    return w


@pytest.mark.parametrize(
    "expression, make, verdict, new_bytes",
    [
        ("x.base", owning_array, "not a tensor", 0),  # it owns its data: x.base is None
        ("x.resize(3, refcheck=False)", owning_array, "in-place", 0),  # only an owner can resize
        ("x.flags.owndata", owning_array, "not a tensor", 0),
        ("x.data", masked, "view", 0),
        ("x.mask", masked, "existing memory", 0),  # the mask existed before: nothing allocated
        ("x.filled(0)", masked, "copy", 32),
        ("x.a", record_array, "view", 0),
        ("x.grad", with_grad, "existing memory", 0),  # the allocator sees 0 bytes
        ("x.grad.zero_()", with_grad, "in-place", 0),  # writes memory x holds
        ("x.grad * 2", with_grad, "copy", 12),
    ],
)
def test_fresh_copies_keep_ownership_subclasses_and_grad(expression, make, verdict, new_bytes):
    rows = [view_or_copy([expression], fresh_inputs=fresh, x=make())[0] for fresh in (True, False)]
    assert [(r.verdict, r.new_bytes) for r in rows] == [(verdict, new_bytes)] * 2
    truth = eval(expression, {"np": np, "torch": torch}, {"x": make()})
    if expression == "x.flags.owndata":
        assert truth is True
    if verdict == "existing memory" and isinstance(truth, torch.Tensor):
        x = make()
        figures, _ = allocator_figures(lambda: eval(expression, {}, {"x": x}))
        assert figures.peak == 0  # the allocator's truth: returning it allocates nothing


def test_fresh_copy_of_an_owning_array_owns_its_data_and_its_subclass_keeps_its_mask():
    seen = {}

    def look(x):
        seen["x"] = x
        return x

    view_or_copy({"look": look}, x=owning_array())
    assert seen["x"].base is None and seen["x"].flags.owndata  # as np.arange(6.0) itself
    view_or_copy({"look": look}, x=masked())
    assert isinstance(seen["x"], np.ma.MaskedArray) and seen["x"].mask.tolist() == [False, True, False, False]
    view_or_copy({"look": look}, x=record_array())
    assert isinstance(seen["x"], np.recarray) and seen["x"].b.tolist() == [0.0, 1.0, 2.0]


def test_fresh_copy_of_a_parameter_is_a_parameter_and_torch_says_so():
    for expression in ("np.copyto(x, 0)", "type(x).__name__"):
        truth = None
        try:
            truth = eval(expression, {"np": np}, {"x": torch.nn.Parameter(torch.ones(3))})
        except TypeError as error:
            with pytest.raises(TypeError, match=re.escape(str(error))):  # "... not Parameter", torch's own words
                view_or_copy([expression], x=torch.nn.Parameter(torch.ones(3)))
            continue
        assert truth == "Parameter"
    seen = {}
    view_or_copy({"look": lambda x: seen.setdefault("x", x)}, x=torch.nn.Parameter(torch.ones(3)))
    assert type(seen["x"]) is torch.nn.Parameter and seen["x"].requires_grad and seen["x"].is_leaf


def test_fresh_copy_keeps_the_grad_and_its_layout():
    w = torch.ones(2, 3, requires_grad=True)
    w.grad = torch.arange(6.0).view(3, 2).t()  # a transposed gradient
    seen = {}
    view_or_copy({"look": lambda x: seen.setdefault("x", x)}, x=w)
    grad = seen["x"].grad
    assert torch.equal(grad, w.grad) and grad.stride() == w.grad.stride()
    assert grad.untyped_storage().data_ptr() != w.grad.untyped_storage().data_ptr()  # a copy: w.grad untouched
