"""Chapter 6 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py.
"""

import numpy as np
import pytest
import torch
from allocator_truth import allocator_figures
from exercise_asserts import assert_correct, assert_wrong
from torch import nn

import tutorial_lib as tl

# --- ch6.predict_bytes --------------------------------------------------------------------------------------


def test_predict_bytes_block_is_measured_as_derived_by_hand():
    from tutorial_lib.exercises.chapter6 import predict_bytes_block

    mem = predict_bytes_block()
    # c: 250,000 float16 values; d: one float32. b, b * 2, the view and the in-place mul_ leave nothing.
    assert mem.allocated == 250_000 * 2 + 4
    # the peak: b, c, b * 2 and d at once, plus the CPU allocator's few bytes for the wrapped 2 and the sum's scratch
    tensors_peak = 250_000 * 4 + 250_000 * 2 + 250_000 * 4 + 4
    x = torch.ones(1000, 1000)

    def block():
        b = x[:, :250].contiguous()
        c = b.to(torch.float16)
        x.mul_(2)
        d = (b * 2).sum()
        return c, d

    truth, kept = allocator_figures(block)
    assert mem.peak == truth.peak
    assert tensors_peak <= mem.peak < tensors_peak + 64


@pytest.mark.parametrize(
    "answer",
    # plain, float, 0-d tensor; and unusual but right: a NumPy integer, a 0-d float tensor, the sum written out
    [500_004, 500004.0, torch.tensor(500_004), np.int64(500_004), torch.tensor(500_004.0), 250_000 * 2 + 4],
)
def test_predict_bytes_correct(answer):
    assert_correct("ch6.predict_bytes", answer)


@pytest.mark.parametrize(
    "answer, word",
    [
        (2_500_004, "peak"),  # the block's peak
        (1_500_004, "del b"),  # b counted
        (1_000_004, "float16"),  # c counted as float32
        (500_000, "4 bytes"),  # the sum forgotten
        (4_500_004, "view"),  # x (or the view of it) counted
        (123, "line by line"),
    ],
)
def test_predict_bytes_wrong(answer, word):
    assert word in assert_wrong("ch6.predict_bytes", answer).hint


@pytest.mark.parametrize("answer", ["500004", 0.5, True, [500_004], torch.tensor([1.0, 2.0])])
def test_predict_bytes_wrong_format(answer):
    assert_wrong("ch6.predict_bytes", answer)


# --- ch6.adam_state_bytes -----------------------------------------------------------------------------------


def adam_state_bytes(model):
    return sum(2 * p.numel() * p.element_size() + 4 for p in model.parameters() if p.grad is not None)


def adam_state_bytes_from_grads(model):
    total = 0
    for p in model.parameters():
        if p.grad is not None:
            total += 2 * p.grad.nbytes + 4
    return total


def adam_state_bytes_by_running_adam(model):
    """Unusual but right: run Adam on detached copies that carry the same gradients, and count its state."""
    copies = []
    for p in model.parameters():
        if p.grad is not None:
            copy = p.detach().clone().requires_grad_()
            copy.grad = p.grad.clone()
            copies.append(copy)
    optimizer = torch.optim.Adam(copies)
    optimizer.step()
    return sum(v.untyped_storage().nbytes() for s in optimizer.state.values() for v in s.values())


def adam_state_bytes_from_storages(model):
    """Unusual but right: storage bytes of each gradient (the moments match it), a float32 step each, as a float."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    return float(sum(2 * g.untyped_storage().nbytes() + torch.tensor(0.0).element_size() for g in grads))


@pytest.mark.parametrize(
    "solution",
    [adam_state_bytes, adam_state_bytes_from_grads, adam_state_bytes_by_running_adam, adam_state_bytes_from_storages],
)
def test_adam_state_bytes_solutions(solution):
    assert_correct("ch6.adam_state_bytes", solution)


def requires_grad_rule(model):
    """The old solution's rule: state wherever requires_grad. Wrong for a layer that forward() never uses."""
    return sum(2 * p.numel() * p.element_size() + 4 for p in model.parameters() if p.requires_grad)


def test_adam_state_bytes_rejects_the_requires_grad_rule():
    feedback = assert_wrong("ch6.adam_state_bytes", requires_grad_rule)
    assert "never uses" in feedback.message
    assert "grad is not" in feedback.hint and "None" in feedback.hint


def test_adam_skips_a_parameter_without_grad_although_it_requires_grad():
    """The fact the exercise relies on, straight from torch: no .grad at step() means no state."""
    from tutorial_lib.exercises.chapter6 import _WithUnusedLayer

    torch.manual_seed(0)
    model = _WithUnusedLayer()
    model(torch.randn(3, 32)).sum().backward()
    assert model.unused.weight.requires_grad and model.unused.weight.grad is None
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.step()
    assert set(optimizer.state) == {model.used.weight, model.used.bias}


def test_adam_state_bytes_theory_matches_a_real_optimizer_state():
    """Independent of measure_memory: the bytes of the tensors in optimizer.state after one step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 2, bias=False))
    model[0].requires_grad_(False)
    model(torch.randn(3, 8)).sum().backward()
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.step()
    state_bytes = sum(
        v.untyped_storage().nbytes() for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v)
    )
    assert state_bytes == adam_state_bytes(model) == 2 * 16 * 2 * 4 + 4


@pytest.mark.parametrize(
    "wrong_answer, word",
    [
        (lambda m: sum(2 * p.numel() * p.element_size() for p in m.parameters() if p.grad is not None), "step counter"),
        (lambda m: sum(p.numel() * p.element_size() + 4 for p in m.parameters() if p.grad is not None), "two tensors"),
        (lambda m: sum(p.numel() * p.element_size() for p in m.parameters() if p.grad is not None), "two tensors"),
        (lambda m: sum(2 * p.numel() * p.element_size() + 4 for p in m.parameters()), "frozen"),
        (lambda m: sum(2 * p.numel() * 4 + 4 for p in m.parameters() if p.grad is not None), "dtype"),
        (lambda m: 10**9, "two state tensors"),
        (lambda m: 7, "two state tensors"),
        (
            lambda m: sum(3 * p.numel() * p.element_size() + 4 for p in m.parameters() if p.grad is not None),
            "grad is not None",
        ),
    ],
)
def test_adam_state_bytes_wrong(wrong_answer, word):
    assert word in assert_wrong("ch6.adam_state_bytes", wrong_answer).hint


def skips_zero_gradients(model):
    """Counts only parameters whose gradient has a nonzero value: wrong, a gradient of zeros still gets state."""
    return sum(2 * p.numel() * p.element_size() + 4 for p in model.parameters() if p.grad is not None and p.grad.any())


def counts_named_parameters_with_duplicates(model):
    named = model.named_parameters(remove_duplicate=False)
    return sum(2 * p.numel() * p.element_size() + 4 for _, p in named if p.grad is not None)


def test_adam_state_bytes_rejects_skipping_zero_gradients():
    feedback = assert_wrong("ch6.adam_state_bytes", skips_zero_gradients)
    assert "all-zero" in feedback.message and "zeros is still a gradient" in feedback.hint


def test_adam_state_bytes_rejects_named_parameters_with_duplicates():
    assert "shared parameter" in assert_wrong("ch6.adam_state_bytes", counts_named_parameters_with_duplicates).hint


def test_adam_gives_state_to_a_parameter_whose_gradient_is_all_zeros():
    from tutorial_lib.exercises.chapter6 import _WithZeroWeightedHead

    torch.manual_seed(0)
    model = _WithZeroWeightedHead()
    model(torch.randn(3, 32)).sum().backward()
    assert model.auxiliary.weight.grad is not None and not model.auxiliary.weight.grad.any()
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.step()
    assert model.auxiliary.weight in optimizer.state


def count_tied_twice(model):
    """Walks modules instead of parameters: the tied weight is counted once per module that holds it."""
    total = 0
    for module in model.modules():
        for p in module.parameters(recurse=False):
            if p.grad is not None:
                total += 2 * p.numel() * p.element_size() + 4
    return total


def test_adam_state_bytes_rejects_counting_a_tied_weight_twice():
    feedback = assert_wrong("ch6.adam_state_bytes", count_tied_twice)
    assert "tied" in feedback.message and "shared parameter" in feedback.hint


def forgets_return(model):
    sum(2 * p.numel() * p.element_size() + 4 for p in model.parameters() if p.requires_grad)


def test_adam_state_bytes_rejects_missing_return_and_non_functions():
    assert "return" in assert_wrong("ch6.adam_state_bytes", forgets_return).hint
    assert_wrong("ch6.adam_state_bytes", 10_584_168)
    assert_wrong("ch6.adam_state_bytes", lambda m: "lots")


# --- ch6.reduce_peak ----------------------------------------------------------------------------------------


def test_standardize_rows_reference():
    from tutorial_lib.exercises.chapter6 import standardize_rows

    torch.manual_seed(0)
    x = torch.randn(50, 40, dtype=torch.float64)
    expected = (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    assert torch.allclose(standardize_rows(x), expected)


def low_peak_var_mean(x):
    var, mean = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
    result = x - mean
    result.div_(torch.sqrt(var + 1e-5))
    return result


def low_peak_layer_norm(x):
    return nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5)


def low_peak_vector_norm(x):
    centered = x - x.mean(dim=1, keepdim=True)
    var = torch.linalg.vector_norm(centered, dim=1, keepdim=True).square_() / x.shape[1]
    return centered.div_(torch.sqrt(var + 1e-5))


def low_peak_in_row_chunks(x):
    """Unusual but right: standardize 64 rows at a time into a preallocated result."""
    result = torch.empty_like(x)
    for start in range(0, x.shape[0], 64):
        rows = x[start : start + 64]
        var, mean = torch.var_mean(rows, dim=1, unbiased=False, keepdim=True)
        torch.sub(rows, mean, out=result[start : start + 64])
        result[start : start + 64].div_(torch.sqrt(var + 1e-5))
    return result


def low_peak_instance_norm(x):
    """Unusual but right: the matrix as one instance whose channels are the rows."""
    return nn.functional.instance_norm(x.unsqueeze(0), eps=1e-5).squeeze(0)


@pytest.mark.parametrize(
    "solution",
    [low_peak_var_mean, low_peak_layer_norm, low_peak_vector_norm, low_peak_in_row_chunks, low_peak_instance_norm],
)
def test_reduce_peak_solutions(solution):
    assert_correct("ch6.reduce_peak", solution)


def still_two_big(x):
    centered = x - x.mean(dim=1, keepdim=True)
    var = centered.square().mean(dim=1, keepdim=True)  # an x-sized temporary next to centered
    return centered.div_(torch.sqrt(var + 1e-5))


def in_place_on_input(x):
    var, mean = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
    return x.sub_(mean).div_(torch.sqrt(var + 1e-5))


def unbiased_variance(x):
    var, mean = torch.var_mean(x, dim=1, keepdim=True)  # unbiased by default
    return (x - mean).div_(torch.sqrt(var + 1e-5))


def the_original(x):
    from tutorial_lib.exercises.chapter6 import standardize_rows

    return standardize_rows(x)


def returns_float32(x):
    return low_peak_var_mean(x.float())


def returns_list(x):
    return low_peak_var_mean(x).tolist()


@pytest.mark.parametrize(
    "wrong_answer, word",
    [
        (still_two_big, "var_mean"),
        (the_original, "var_mean"),
        (in_place_on_input, "caller"),
        (unbiased_variance, "unbiased=False"),
        (returns_float32, "dtype"),
        (returns_list, "return"),
    ],
)
def test_reduce_peak_wrong(wrong_answer, word):
    assert word in assert_wrong("ch6.reduce_peak", wrong_answer).hint


def through_numpy(x):
    """measure_memory sees no NumPy array: without the checker's extra guards this reported a peak of 0 B."""
    a = x.numpy()
    return torch.from_numpy((a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5))


def through_numpy_then_copied(x):
    a = x.numpy()
    return torch.tensor((a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5))


def in_a_new_thread(x):
    """The original, high-peak function run in a thread: its allocations are not in the calling thread's events."""
    import threading

    from tutorial_lib.exercises.chapter6 import standardize_rows

    out = []
    worker = threading.Thread(target=lambda: out.append(standardize_rows(x)))
    worker.start()
    worker.join()
    return out[0]


def in_a_thread_pool_made_in_the_call(x):
    import concurrent.futures

    from tutorial_lib.exercises.chapter6 import standardize_rows

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(standardize_rows, x).result()


_POOL = __import__("concurrent.futures").futures.ThreadPoolExecutor(1)
_POOL.submit(lambda: None).result()  # its thread exists before any measurement


def in_a_thread_pool_made_before(x):
    """A thread that already existed cannot be detected; the result's unseen storage gives it away."""
    from tutorial_lib.exercises.chapter6 import standardize_rows

    return _POOL.submit(standardize_rows, x).result()


def through_deepcopy(x):
    """copy.deepcopy makes storage without an aten op: two x-sized tensors at once, one of them unseen."""
    import copy

    centered = copy.deepcopy(x)
    centered -= x.mean(1, keepdim=True)
    var = (centered * centered).mean(1, keepdim=True)
    return centered.div_(torch.sqrt(var + 1e-5))


@pytest.mark.parametrize(
    "wrong_answer, word",
    [
        (through_numpy, "torch operations"),
        (through_numpy_then_copied, "NumPy"),
        # counted since measure_memory reads the CPU allocator: rejected for its peak, two x-sized tensors at once
        (through_deepcopy, "peak"),
        (in_a_new_thread, "thread"),
        (in_a_thread_pool_made_in_the_call, "thread"),
        (in_a_thread_pool_made_before, "calling thread"),
    ],
)
def test_reduce_peak_rejects_memory_measure_memory_cannot_see(wrong_answer, word):
    feedback = assert_wrong("ch6.reduce_peak", wrong_answer)
    assert word in feedback.hint + feedback.message


def test_the_threaded_original_would_pass_on_its_figures_alone():
    """Why the thread guard is needed: measured in the calling thread, the threaded original's peak is tiny."""
    x = torch.randn(1000, 500)
    with tl.measure_memory() as threaded:
        in_a_new_thread(x)
    with tl.measure_memory() as direct:
        the_original(x)
    assert threaded.peak < direct.peak // 2 and threaded.unseen and not direct.unseen


def test_reduce_peak_rejects_a_non_function():
    assert_wrong("ch6.reduce_peak", torch.zeros(3))


# --- quick predictions: what torch computes is what the chapter's text says -----------------------------------


def test_prediction_truths_are_what_the_chapter_says():
    from tutorial_lib.exercises import _CHECKERS

    truths = {key: _CHECKERS[key].prediction["truth"]() for key in _CHECKERS if key.startswith("ch6.q_")}
    assert truths == {
        "ch6.q_relu_bytes": (4_000_000, 0),  # out of place: one x-sized tensor; in place: nothing
        "ch6.q_sum_peak": "peak",  # the temporary x * 2 counts in the peak only
        "ch6.q_step_parts": (1, 2),  # gradients 1 P, Adam's two moments 2 P (plus 4 B per tensor)
        "ch6.q_checkpoint": "input",  # checkpoint keeps the block's input, recomputes the hidden output
        "ch6.q_autocast": "no",  # for a batch of 512 autocast's bfloat16 copies outweigh the halved activations
    }


def test_without_checkpoint_a_block_keeps_its_input_and_its_hidden_output():
    from tutorial_lib.exercises.chapter6 import _checkpoint_keeps

    assert _checkpoint_keeps(use_checkpoint=False) == "both"


@pytest.mark.parametrize(
    "exercise_id, answer, words",
    [
        ("ch6.q_relu_bytes", (4_000_000, 4_000_000), "relu_ writes into x's own storage"),
        ("ch6.q_relu_bytes", [1_000_000, 0], "each float32 value takes 4 bytes"),
        ("ch6.q_sum_peak", "both", "only the 4-byte sum is left"),
        ("ch6.q_step_parts", (1, 1), "two tensors per parameter"),
        ("ch6.q_checkpoint", "hidden", "the other way round"),
        ("ch6.q_autocast", "yes", "copies of the weights and the input"),
    ],
)
def test_prediction_mistakes_are_diagnosed(exercise_id, answer, words):
    assert words in assert_wrong(exercise_id, answer).message


def test_predictions_name_the_wrong_entry_of_a_pair():
    assert "entry 2" in assert_wrong("ch6.q_step_parts", (1, 5)).message
    assert "not one of the answers" in assert_wrong("ch6.q_checkpoint", "output").message


# --- the reviews of issue 19 (rules-0306, learner-04050607) and issue 20 §1: old sentences stay gone ----------------

CHAPTER_6_NOTEBOOKS = [
    "notebooks/06_measure_memory_on_cpu_and_gpu.ipynb",
    "notebooks/deep_dives/what_does_measure_memory_count_and_what_does_it_miss.ipynb",
    "notebooks/deep_dives/where_does_every_byte_of_a_training_step_go.ipynb",
    "notebooks/deep_dives/how_does_the_cuda_caching_allocator_round_and_reuse_memory.ipynb",
]


def chapter_6_cells(path):
    import nbformat
    from scripts import ROOT

    return nbformat.read(ROOT / path, as_version=4).cells


def chapter_6_markdown():
    return " ".join(
        " ".join(cell.source.lower().split())
        for path in CHAPTER_6_NOTEBOOKS
        for cell in chapter_6_cells(path)
        if cell.cell_type == "markdown"
    )


@pytest.mark.parametrize(
    "old_claim",
    [
        "a training step holds four kinds",  # B13: at the peak, temporaries come on top
        "only activations grow with the batch",  # B1: a sparse embedding gradient grows with the batch too
        "runs the operations in 16 bits",  # B4: autocast casts only the operations on its lists
        "keeps its input `mat1` and its weight `mat2`",  # B5: the first layer's input needs no grad, so no mat2
        "a parameter that took no part in the forward pass gets",  # B15: also one used only under no_grad
        "every tensor an operation saves for backward is passed",  # B16: a wrapped Python number is skipped
        "peaks at 4,000,012 bytes, not 4,000,000. pytorch turns",  # B9: relu(x).sum() peaks there too, no number
        "plus the 12 bytes of the number `2`",  # B9, the predict_bytes solution
        "from a batch of 1024 up",  # learner: batch 768 already leaves less
        # issue 20 §1: the blind spots measure_memory no longer has
        "the 4,000,000 bytes are not counted",
        "can come out *below* the truth",
        "is the hard case for a profiler-based count",
        "threads are not counted either;",  # the core's box
        "allocations in **other threads** are not counted",
        "where the two differ and `unseen` is empty, the report is silently wrong",
        # final hunt: a storage resized to 0 frees its block while tensors still refer to it; cuBLAS's workspaces
        # are blocks in use that no tensor occupies; the uncached allocator raises another error
        "a block turns free only when nothing refers to its storage",
        "counts the blocks that tensors occupy",
        "when a gpu cannot give a tensor its memory",
        # last check: a held storage object keeps the block too; with MIG, nvidia-smi shows slices of the device
        "only when no view or saved tensor still refers to its storage",
        "`nvidia-smi` shows the whole device's memory",
    ],
)
def test_a_broken_claim_does_not_come_back(old_claim):
    assert old_claim not in chapter_6_markdown()


@pytest.mark.parametrize(
    "prediction, answer_sentence",
    [
        ("ch6.q_sum_peak", "freed"),  # learner-04050607: "it is freed as soon as .sum() has read it" gave it away
        ("ch6.q_checkpoint", "keeps the block's input"),
        ("ch6.q_checkpoint", "keeps its input"),
    ],
)
def test_a_predictions_answer_is_not_stated_just_before_it(prediction, answer_sentence):
    cells = chapter_6_cells(CHAPTER_6_NOTEBOOKS[0])
    at = next(i for i, cell in enumerate(cells) if f'tl.check("{prediction}"' in cell.source)
    start = max(i for i in range(at) if cells[i].cell_type == "code" or cells[i].source.startswith("## "))
    before = " ".join(" ".join(cell.source.lower().split()) for cell in cells[start:at] if cell.cell_type == "markdown")
    assert answer_sentence not in before


def test_the_core_states_382_mib_only_with_the_split_rule():
    # rules-00 B11: 191 x 2 MiB counts as allocated only because the 543 KiB left over is too small to split off.
    for cell in chapter_6_cells(CHAPTER_6_NOTEBOOKS[0]):
        if cell.cell_type == "markdown" and "191 × 2" in cell.source:
            assert "split" in cell.source


def stored_text(path):
    return "\n".join(
        output.get("text", "")
        for cell in chapter_6_cells(path)
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )


def test_the_stored_outputs_agree_with_the_prose_about_frees_of_older_memory():
    # The core says the second step leaves nothing new; the deep dive says frees of older tensors are counted.
    assert "2nd step leaves nothing new: True" in stored_text(CHAPTER_6_NOTEBOOKS[0])
    measured = stored_text(CHAPTER_6_NOTEBOOKS[1])
    assert "the report counts the free: True" in measured
    assert "the report says so: True" in measured
