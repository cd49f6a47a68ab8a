"""watch_inplace: the corpus of buggy and correct programs, the explanation, and the odd cases."""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import random
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scripts import load_script
from test_graph import random_program, run_program  # noqa: E402 - the random program generator

import tutorial_lib as tl
from tutorial_lib.facts.inplace_advice import Edit, apply_edits
from tutorial_lib.facts.inplace_watch import attach_source_lines, explanation_of, is_library_frame, recent_watches

CORPUS = pathlib.Path(__file__).parent / "inplace_corpus"
BUGGY = sorted(CORPUS.glob("bug_*.py"))
CORRECT = sorted(CORPUS.glob("ok_*.py"))


def load(path: pathlib.Path):
    return load_script(path, f"inplace_corpus_{path.stem}")


def marked_lines(path: pathlib.Path, marker: str) -> tuple[int, ...]:
    """Line numbers whose comment carries the marker word (``# SAVES``, ``# CHANGES``, ``# CHAIN``)."""
    lines = path.read_text().splitlines()
    return tuple(n for n, line in enumerate(lines, start=1) if marker in line.partition("#")[2].split())


_INTENDED = re.compile(r"#.*?\b(INTENDED(?:_BEFORE|_AFTER)?): (.*)$")


def intended_edits(path: pathlib.Path) -> list[Edit]:
    """The fix a person would write, from the program's ``# INTENDED: code`` (this line becomes ``code``),
    ``# INTENDED_BEFORE: code`` and ``# INTENDED_AFTER: code`` comments."""
    edits = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = _INTENDED.search(line)
        if match:
            action = {"INTENDED": "replace", "INTENDED_BEFORE": "insert before", "INTENDED_AFTER": "insert after"}
            edits.append(Edit(str(path), number, number, action[match.group(1)], match.group(2)))
    return edits


def run_source(source: str, path: pathlib.Path, tmp_path, name: str) -> list:
    """Run the program ``source`` (a changed copy of the corpus program ``path``) and return what its run() returns."""
    copy = tmp_path / f"{name}_{path.name}"
    copy.write_text(source)
    return load_script(copy, f"inplace_corpus_{name}_{path.stem}").run()


def every_explanation(explanation) -> list:
    return [explanation, *explanation.also_stale]


def test_corpus_is_big_enough():
    assert len(BUGGY) >= 40 and len(CORRECT) >= 25


@pytest.mark.parametrize("path", BUGGY, ids=lambda p: p.stem)
def test_buggy_program_names_every_line_and_its_first_fix_gives_the_intended_gradients(path, tmp_path):
    program = load(path)
    with pytest.raises(RuntimeError) as plain:
        program.run()
    with tl.watch_inplace() as watch:
        with pytest.raises(RuntimeError) as watched:
            program.run()
    error = watched.value
    assert str(error) == str(plain.value)  # torch's own message, unchanged
    explanation = explanation_of(error)
    assert explanation is not None, f"no explanation for {path.name}: {error}"
    assert watch.explanations == [explanation]
    text = str(explanation)
    assert text in "\n".join(getattr(error, "__notes__", []))
    everyone = every_explanation(explanation)
    # every saving line and every changing line of every stale tensor, and nothing else
    assert {e.saved_line for e in everyone} == set(marked_lines(path, "SAVES")), text
    assert {n for e in everyone for n in e.changed_lines} == set(marked_lines(path, "CHANGES")), text
    assert all(pathlib.Path(e.saved_at.filename) == path for e in everyone)
    assert all(pathlib.Path(w.line.filename) == path for e in everyone for w in e.changed_at)
    assert all(e.current_version - e.saved_version == len(e.changed_at) for e in everyone), text
    # nothing unknown, except what the watcher cannot see inside torch.compile'd code (and says so)
    assert not [u for e in everyone for u in e.unknown if "torch.compile'd code" not in u], text
    assert explanation.saved_line in marked_lines(path, "SAVES")
    # the call chain names the caller that matters, and every line the real fix edits is named
    callers = {c.lineno for e in everyone for c in (*e.saved_callers, *(c for w in e.changed_at for c in w.callers))}
    assert set(marked_lines(path, "CHAIN")) <= callers, text
    for edit in intended_edits(path):
        assert f"{path.name}:{edit.first_line}" in text or f"line {edit.first_line}" in text, (edit, text)
    # the first fix, applied as written, runs and computes what the program a person would fix computes
    assert all(e.edits for e in everyone), text
    assert all(edit.text in e.fixes[0] for e in everyone for edit in e.edits), text
    source = path.read_text()
    fixed = run_source(apply_edits(source, [edit for e in everyone for edit in e.edits]), path, tmp_path, "fixed")
    intended = run_source(apply_edits(source, intended_edits(path)), path, tmp_path, "intended")
    assert len(fixed) == len(intended) > 0
    for got, want in zip(fixed, intended):
        assert got is not None and same_bits(got, want), (got, want, text)


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_correct_program_reports_nothing_and_keeps_gradients(path):
    program = load(path)
    plain = program.run()
    with tl.watch_inplace() as watch:
        watched = program.run()
    assert watch.explanations == []
    assert len(plain) == len(watched) > 0
    for before, after in zip(plain, watched):
        assert before is not None and same_bits(before, after)


# ----------------------------------------------------------------------------------------------------
# Odd situations, bad input, what the watcher keeps


def stale_exp():
    a = torch.randn(3, requires_grad=True)
    e = a.exp()
    e.add_(1)
    return a, e


def test_an_error_that_is_not_the_version_error_passes_through_unchanged():
    a = torch.randn(3, requires_grad=True)
    loss = (a * 2).sum()
    loss.backward()
    with tl.watch_inplace() as watch:
        with pytest.raises(RuntimeError, match="backward through the graph a second time") as caught:
            loss.backward()
    assert not hasattr(caught.value, "inplace_explanation")
    assert not getattr(caught.value, "__notes__", [])
    assert watch.explanations == []
    with tl.watch_inplace():
        with pytest.raises(ValueError, match="mine"):
            raise ValueError("mine")


def test_version_error_raised_outside_the_watcher_gets_no_note_and_the_graph_explains_it():
    a, e = stale_exp()
    with pytest.raises(RuntimeError) as caught:
        e.sum().backward()
    assert not getattr(caught.value, "__notes__", [])
    a, e = stale_exp()
    tl.facts.inplace_watch._LAST.clear()
    (explanation,) = tl.explain_inplace(e)
    assert explanation.node == "ExpBackward0" and explanation.saved_at is None and explanation.changed_at == ()
    assert (explanation.saved_version, explanation.current_version) == (0, 1)
    assert "saved at:     line unknown" in str(explanation)
    assert any("no watch_inplace was on" in s for s in explanation.unknown)
    assert any("tl.watch_inplace()" in fix for fix in explanation.fixes)


def test_forward_outside_backward_inside_says_the_lines_are_unknown():
    a, e = stale_exp()
    with tl.watch_inplace():
        with pytest.raises(RuntimeError) as caught:
            e.sum().backward()
    explanation = explanation_of(caught.value)
    assert explanation.saved_at is None and explanation.changed_at == ()
    assert "line unknown" in str(explanation) and explanation.unknown


def test_inplace_hazards_and_the_picture_name_the_lines_when_the_watcher_was_on():
    a = torch.randn(3, requires_grad=True)
    with tl.watch_inplace() as watch:
        e = a.exp()  # line A
        e.mul_(2)  # line B
    (hazard,) = tl.inplace_hazards(e)
    (explained,) = watch.explain(e)
    assert hazard.saved_at == explained.saved_at and hazard.saved_at.text == "e = a.exp()  # line A"
    assert [w.line.text for w in hazard.changed_at] == ["e.mul_(2)  # line B"]
    assert f"Saved at {hazard.saved_at.place}; changed at" in hazard.explanation
    import matplotlib

    matplotlib.use("Agg")
    figure = tl.draw_graph(e)
    assert f"saved at {hazard.saved_at.place}" in figure.summary and "(mul_)" in figure.summary
    import matplotlib.pyplot as plt

    plt.close(figure)


def test_the_watcher_holds_no_tensor_alive_and_caps_its_records():
    import gc
    import weakref

    with tl.watch_inplace(max_records=10) as watch:
        x = torch.zeros(100)
        alive = weakref.ref(x)
        for _ in range(50):
            x.add_(1)
        y = torch.randn(3, requires_grad=True).exp()
        del x, y
        gc.collect()
        assert alive() is None
    assert len(watch._writes) <= 10 and watch.dropped_writes >= 40
    assert watch.held_records() <= 30
    assert "InplaceWatch(finished" in repr(watch)


def test_each_kind_of_write_is_recorded_with_the_versions_torch_gives_it():
    relu = torch.nn.ReLU(inplace=True)
    with tl.watch_inplace() as watch:
        t = torch.zeros(4)
        t.add_(1)
        t += 1
        torch.add(t, 1, out=t)
        t.copy_(torch.ones(4))
        t[0] = 5
        t[1:3].mul_(2)
        relu(t)
        torch._foreach_add_([t], [torch.ones(4)])
        final = t._version
    ops = [w.op for w in watch.writes]
    assert ops == [
        "aten::add_",
        "aten::add_",
        "aten::add",
        "aten::copy_",
        "aten::copy_",
        "aten::mul_",
        "aten::relu_",
        "aten::_foreach_add_",
    ]
    assert [w.version_before for w in watch.writes] == list(range(8))
    assert all(w.version_after == w.version_before + 1 for w in watch.writes)
    assert final == 8 and watch.writes[2].argument == "out"
    assert [w.line.lineno for w in watch.writes] == sorted(w.line.lineno for w in watch.writes)


@pytest.mark.parametrize("foreach", [True, False])
def test_optimizer_steps_bump_versions_exactly_as_without_the_watcher(foreach):
    def train(watched):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1, foreach=foreach)
        context = tl.watch_inplace() if watched else torch.autograd.set_grad_enabled(True)
        with context:
            for _ in range(2):
                optimizer.zero_grad()
                model(torch.randn(4, 3)).sum().backward()
                optimizer.step()
        return [p._version for p in model.parameters()], [p.detach().clone() for p in model.parameters()]

    (plain_versions, plain_values), (watched_versions, watched_values) = train(False), train(True)
    assert plain_versions == watched_versions
    assert all(torch.equal(a, b) for a, b in zip(plain_values, watched_values))


def test_nested_watchers_and_the_patch_is_removed_afterwards():
    original = torch.autograd._engine_run_backward
    with tl.watch_inplace() as outer:
        with tl.watch_inplace() as inner:
            a, e = stale_exp()
            with pytest.raises(RuntimeError) as caught:
                e.sum().backward()
        assert explanation_of(caught.value).changed_lines
        assert inner.explanations and not outer.explanations
        assert torch.autograd._engine_run_backward is not original
    assert torch.autograd._engine_run_backward is original
    assert torch.autograd.graph._engine_run_backward is original


def test_the_retain_graph_fix_is_offered_only_when_a_retained_graph_was_reused():
    w = torch.randn(3, requires_grad=True)
    with tl.watch_inplace():
        h = torch.sin(w)
        h.sum().backward(retain_graph=True)
        with torch.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError) as caught:
            h.sum().backward()
    assert any("retain_graph=True" in fix for fix in explanation_of(caught.value).fixes)
    with tl.watch_inplace():
        a, e = stale_exp()
        with pytest.raises(RuntimeError) as caught:
            e.sum().backward()
    assert not any("retain_graph" in fix for fix in explanation_of(caught.value).fixes)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_anomaly_mode_metadata_gives_the_saving_line_without_the_watcher():
    with torch.autograd.detect_anomaly(check_nan=False):
        a = torch.randn(3, requires_grad=True)
        e = a.exp()  # the saving line
    e.add_(1)
    tl.facts.inplace_watch._LAST.clear()
    (explanation,) = tl.explain_inplace(e)
    assert explanation.saved_at is not None and explanation.saved_at.text == "e = a.exp()  # the saving line"


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: tl.watch_inplace(max_records=0).__enter__(), ValueError),
        (lambda: tl.watch_inplace(max_records="10").__enter__(), TypeError),
        (lambda: tl.watch_inplace(max_records=True).__enter__(), TypeError),
        (lambda: tl.explain_inplace(None), TypeError),
        (lambda: tl.explain_inplace([]), TypeError),
        (lambda: tl.explain_inplace([torch.ones(1), "x"]), TypeError),
        (lambda: tl.explanation_of("not an error"), TypeError),
    ],
)
def test_bad_arguments_get_a_clear_message(call, error):
    with pytest.raises(error, match="max_records|t must|error must"):
        call()


def test_is_library_frame_tells_torch_and_tutorial_lib_from_the_users_code():
    assert is_library_frame(torch.__file__)
    assert is_library_frame(tl.__file__)
    assert is_library_frame("<frozen runpy>")
    assert not is_library_frame(__file__)
    with pytest.raises(TypeError, match="filename must be a str"):
        is_library_frame(pathlib.Path(__file__))


def test_recent_watches_are_the_active_ones_else_the_last_finished():
    with tl.watch_inplace() as outer:
        assert recent_watches() == [outer]
        with tl.watch_inplace() as inner:
            assert recent_watches() == [outer, inner]
    assert recent_watches() == [outer]


def test_attach_source_lines_adds_the_lines_a_watch_recorded():
    a = torch.randn(3, requires_grad=True)
    with tl.watch_inplace():
        e = a.exp()
        e.mul_(2)
    hazards = tl.inplace_hazards(e)  # inplace_hazards attaches them itself
    plain = [dataclasses.replace(h, saved_at=None, changed_at=()) for h in hazards]
    (annotated,) = attach_source_lines(e, plain)
    assert annotated.saved_at == hazards[0].saved_at and annotated.changed_at == hazards[0].changed_at
    with pytest.raises(TypeError, match="tensor must be a torch.Tensor"):
        attach_source_lines("e", plain)
    with pytest.raises(TypeError, match="hazards must be a list"):
        attach_source_lines(e, tuple(plain))


def test_watch_explain_checks_its_argument():
    with tl.watch_inplace() as watch:
        pass
    with pytest.raises(TypeError, match="t must be a tensor"):
        watch.explain(3)
    assert watch.explain(torch.ones(2)) == []


# ----------------------------------------------------------------------------------------------------
# Random programs (the generator of tests/test_graph.py): same outcome with and without the watcher


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-identical (NaN included, which torch.equal calls unequal)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.detach().reshape(-1).view(torch.uint8), b.detach().reshape(-1).view(torch.uint8))


def _outcome(program, watched):
    context = tl.watch_inplace() if watched else torch.autograd.set_grad_enabled(True)
    with context:
        run = run_program(program)
        try:
            run.out.backward(torch.ones_like(run.out))
        except RuntimeError as error:
            return run, error
    return run, None


def check_random_program(program):
    plain_run, plain_error = _outcome(program, watched=False)
    run, error = _outcome(program, watched=True)
    assert (plain_error is None) == (error is None), program
    if error is None:
        for before, after in zip(plain_run.leaves, run.leaves):
            assert (before.grad is None) == (after.grad is None)
            assert before.grad is None or same_bits(before.grad, after.grad)
        return False
    assert str(error) == str(plain_error)
    explanation = explanation_of(error)
    if "modified by an inplace operation" not in str(error):
        assert explanation is None
        return True
    assert explanation is not None, (program, error)
    assert f"is at version {explanation.current_version}; expected version {explanation.saved_version}" in str(error)
    assert explanation.saved_at is not None and explanation.saved_at.filename.endswith("test_graph.py")
    assert len(explanation.changed_at) == explanation.current_version - explanation.saved_version, str(explanation)
    for write in explanation.changed_at:
        assert write.line.filename.endswith("test_graph.py")
        assert "_(" in write.line.text or "+=" in write.line.text or "inplace=True" in write.line.text, write.line.text
    return True


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31))
def test_random_programs_raise_alike_and_explain_every_change(seed):
    check_random_program(random_program(random.Random(seed)))


def test_random_programs_seeded_both_outcomes_common():
    rng = random.Random(11)
    raised = [check_random_program(random_program(rng)) for _ in range(80)]
    assert 15 <= sum(raised) <= 65


def test_a_fused_optimizer_step_bumps_no_version_so_torch_is_silent_and_the_watch_says_so():
    source = (CORPUS / "bug_gan_step_between_backwards_adam_foreach_true.py").read_text()
    namespace: dict = {}
    exec(compile(source.replace("foreach=True", "fused=True"), "gan_fused.py", "exec"), namespace)  # noqa: S102
    plain = namespace["run"]()  # no error: autograd never sees the fused step's change
    with tl.watch_inplace() as watch:
        watched = namespace["run"]()
    assert watch.explanations == [] and all(same_bits(a, b) for a, b in zip(plain, watched))
    fused = watch.unversioned_writes
    assert fused and {w.op for w in fused} == {"aten::_fused_adam_"}
    assert all(w.version_after == w.version_before for w in fused)


def test_call_keeping_versions_bumps_foreach_writes_inside_any_dispatch_mode():
    from tutorial_lib.facts.watching import WatcherMode, call_keeping_versions

    class Bare(WatcherMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Keeping(WatcherMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return call_keeping_versions(func, args, kwargs or {})

    def versions(mode):
        a, b = torch.zeros(3), torch.zeros(2)
        with mode:
            torch._foreach_add_([a, b], 1.0)
            torch._foreach_mul_([a], [torch.ones(3)])
            a.add_(1)
        return a._version, b._version

    plain = versions(torch.autograd.set_grad_enabled(True))
    assert plain == (3, 1)
    assert versions(Keeping()) == plain
    assert versions(Bare()) == (1, 0)  # the torch 2.13 behaviour the helper corrects


def test_watch_notes_name_where_each_stale_tensor_was_saved_and_changed():
    from tutorial_lib.facts.inplace_watch import watch_notes

    a = torch.randn(3, requires_grad=True)
    with tl.watch_inplace():
        e = a.exp()
        e.mul_(2)
        e.add_(1)
    (hazard,) = tl.inplace_hazards(e)
    notes = watch_notes(e)
    assert list(notes) == [hazard.node_id]
    saved, *changed = notes[hazard.node_id]
    assert saved == f"saved at {hazard.saved_at.place}"
    assert [c.rsplit(" (", 1)[1] for c in changed] == ["mul_)", "add_)"]
    assert watch_notes(torch.ones(2)) == {}  # no graph, nothing stale
    with pytest.raises(TypeError, match="tensor must be a torch.Tensor"):
        watch_notes([1.0])


def test_watch_notes_leave_out_stale_tensors_a_finished_watch_never_saw():
    from tutorial_lib.facts.inplace_watch import watch_notes

    with tl.watch_inplace():
        torch.ones(2).mul_(2)  # a watch that finished, about other tensors
    a = torch.randn(3, requires_grad=True)
    e = a.exp()
    e.mul_(2)  # made stale after the watch ended: no line is known for it
    assert tl.inplace_hazards(e) and watch_notes(e) == {}


def _run_script(tmp_path, name: str, lines: list[str]) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\n" + "\n".join(lines) + "\n")
    exec(compile(path.read_text(), str(path), "exec"), {"__name__": name})


def _fixes(tmp_path, name: str, lines: list[str]):
    """The explanation the watch gives for the script (line numbers count the 'import torch' line)."""
    with tl.watch_inplace():
        with pytest.raises(RuntimeError) as raised:
            _run_script(tmp_path, name, lines)
    return explanation_of(raised.value)


@pytest.mark.parametrize(
    "lines, view_line, change_line",
    [
        (["y = x.exp()", "v = y.view(2, 2)", "v.relu_()"], 4, 5),  # a view taken on an earlier line
        (["y = x.exp()", "y[0:2].mul_(2)"], 4, 4),  # a view taken on the changing line itself
    ],
)
def test_the_clone_advice_for_a_write_through_a_view_makes_backward_work(tmp_path, lines, view_line, change_line):
    lines = ["x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)", *lines, "y.sum().backward()"]
    explanation = _fixes(tmp_path, "through_view", lines)
    first = explanation.fixes[0]
    if view_line < change_line:
        assert first.startswith(f"Clone before the view is taken: y = y.clone() just before line {view_line}")
        assert f"line {change_line} writes through that view" in first
    else:
        assert first.startswith(f"Clone before the change: y = y.clone() just before line {change_line}")
    (edit,) = explanation.edits
    assert (edit.action, edit.first_line, edit.text) == ("insert before", view_line, "y = y.clone()")
    followed = [*lines[: view_line - 2], "y = y.clone()", *lines[view_line - 2 :]]
    _run_script(tmp_path, "followed", followed)
    if view_line < change_line:  # y = y.clone() just before the change still raises: v views the old y
        old = [*lines[: change_line - 2], "y = y.clone()", *lines[change_line - 2 :]]
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _run_script(tmp_path, "old_advice", old)


@pytest.mark.parametrize(
    "lines, written",
    [
        (["y = x.exp()", "y.add_(1)", "y.sum().backward()"], "y"),  # the saved tensor itself
        (["a = x.exp()", "y = a[:2]", "b = y.sin()", "y.mul_(2)", "b.sum().backward()"], "y"),  # the saved view
        (["y = x.exp()", "v = y[:2]", "b = v.sin()", "y.mul_(2)", "b.sum().backward()"], "y"),  # the view's base
    ],
)
def test_the_clone_advice_before_the_change_makes_backward_work_when_no_other_view_writes(tmp_path, lines, written):
    lines = ["x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)", *lines]
    change_line = len(lines)  # the line before backward (counting 'import torch')
    explanation = _fixes(tmp_path, "direct", lines)
    clone = f"clone before the change: {written} = {written}.clone() just before line {change_line} "
    assert any(fix.lower().removeprefix("or ").startswith(clone) for fix in explanation.fixes), explanation.fixes
    _run_script(tmp_path, "followed", [*lines[:-2], f"{written} = {written}.clone()", *lines[-2:]])
    source = "import torch\n" + "\n".join(lines) + "\n"  # the first fix, applied as written, runs as well
    path = tmp_path / "direct.py"
    edits = [dataclasses.replace(e, filename=str(path)) for e in explanation.edits]
    exec(compile(apply_edits(source, edits), str(path), "exec"), {"__name__": "applied"})


def test_forward_under_an_earlier_watch_is_not_called_unwatched():
    a = torch.ones(3, requires_grad=True)
    with tl.watch_inplace():
        b = a.sigmoid()
        b.mul_(2)
    with tl.watch_inplace():
        with pytest.raises(RuntimeError) as caught:
            b.sum().backward()
    (sentence,) = explanation_of(caught.value).unknown
    assert "no watch_inplace was on" not in sentence
    assert "ran outside this watch_inplace block: in an earlier block or cell, or with none on" in sentence
    assert any("backward() in one tl.watch_inplace() block" in fix for fix in explanation_of(caught.value).fixes)


def test_watch_repr_says_one_write_and_one_node_line():
    with tl.watch_inplace() as watch:
        torch.ones(2).mul_(2)
        torch.ones(2, requires_grad=True).exp()
    assert "1 write, 1 node line, 0 explanations" in repr(watch)


@pytest.mark.parametrize(
    "change, fix",
    [
        ("b.mul_(2)", "Use the out-of-place form: b = b.mul(2) instead of b.mul_(2)."),
        ("b *= 2 + 1", "Use the out-of-place form: b = b * (2 + 1) instead of b *= 2 + 1."),
        ("b.zero_()", "Clone before the change: b = b.clone() just before line 4 sends the change into a copy"),
        ("b.fill_(3)", "Clone before the change: b = b.clone() just before line 4 sends the change into a copy"),
        ("b.clamp_(min=0)", "Use the out-of-place form: b = b.clamp(min=0) instead of b.clamp_(min=0)."),
        ("b.masked_fill_(b > 1, 0)", "Use the out-of-place form: b = b.masked_fill(b > 1, 0) instead of"),
        ("b[0] = 5", "Clone before the assignment: b = b.clone() just before line 4 sends the change into a copy"),
    ],
)
def test_the_fix_names_the_scripts_tensor_and_fits_the_op(tmp_path, change, fix):
    lines = ["a = torch.ones(3, requires_grad=True)", "b = a.sigmoid()", change, "b.sum().backward()"]
    with tl.watch_inplace():
        with pytest.raises(RuntimeError) as raised:
            _run_script(tmp_path, "names", lines)
    fixes = explanation_of(raised.value).fixes
    assert fixes[0].startswith(fix), fixes
    assert not any("y = y" in f or "other" in f for f in fixes), fixes


# ----------------------------------------------------------------------------------------------------
# The watcher changes nothing: values, version counters, gradients bit for bit, compiled code


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31))
def test_random_programs_compute_the_same_bits_and_versions_under_the_watcher(seed):
    # prod, cumprod and _foreach_*_ over one tensor twice or two views of one tensor included
    from inplace_programs import digest

    plain = digest(seed)
    with tl.watch_inplace():
        watched = digest(seed)
    assert watched == plain


@pytest.mark.parametrize("watcher", ["watch_inplace", "trace_ops", "measure_memory"])
def test_foreach_writes_over_one_tensor_twice_move_its_counter_twice_under_every_watcher(watcher):
    def versions(context):
        x = torch.randn(4, requires_grad=True)
        y, z = x.exp(), torch.ones(6)
        with context:
            torch._foreach_mul_([y, y], 2)
            torch._foreach_add_([z[:3], z[3:]], 1.0)
        try:
            y.sum().backward()
        except RuntimeError as error:
            return y._version, z._version, str(error)
        return y._version, z._version, None

    plain = versions(contextlib.nullcontext())
    assert plain[:2] == (2, 2) and "is at version 2; expected version 0" in plain[2]
    assert versions(getattr(tl, watcher)()) == plain


def test_prod_gradients_are_bit_identical_under_the_watcher():
    def grad(watched):
        a = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
        with tl.watch_inplace() if watched else contextlib.nullcontext():
            (a.prod() + a.prod(0).sum()).backward()
        return a.grad

    assert same_bits(grad(True), grad(False))


def _compiled_pair():
    @torch.compile(backend="aot_eager")
    def f(t, u):
        return (t * u).sin() * t

    a = torch.randn(4, 4, generator=torch.Generator().manual_seed(1), requires_grad=True)
    b = torch.randn(4, 4, generator=torch.Generator().manual_seed(2), requires_grad=True)
    return f, a, b


@pytest.mark.slow
def test_compiled_code_stays_compiled_inside_and_after_every_watcher():
    f, a, b = _compiled_pair()
    plain = f(a, b)
    plain.sum().backward()
    plain_grads = (a.grad.clone(), b.grad.clone())
    assert plain.grad_fn.name() == "CompiledFunctionBackward"
    for watcher in (tl.watch_inplace, tl.trace_ops, tl.measure_memory):
        a.grad = b.grad = None
        with watcher():
            inside = f(a, b)
            inside.sum().backward()
        assert inside.grad_fn.name() == "CompiledFunctionBackward", watcher  # compiled, not run eagerly
        assert same_bits(inside, plain) and same_bits(a.grad, plain_grads[0]) and same_bits(b.grad, plain_grads[1])
        assert f(a, b).grad_fn.name() == "CompiledFunctionBackward", watcher  # and still compiled afterwards


@pytest.mark.filterwarnings("ignore:Error detected in ReluBackward0")  # torch's own, with or without the watcher
@pytest.mark.slow
def test_torch_compile_refusing_a_model_raises_the_same_error_and_the_note_says_what_the_watcher_cannot_see():
    def compiled_model():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.ReLU(inplace=True))
        return torch.compile(model, backend="aot_eager")

    x = torch.randn(5, 3)
    with pytest.raises(Exception) as plain:
        compiled_model()(x)  # AOTAutograd traces the backward when it compiles: the version error, at once
    with pytest.raises(Exception) as watched:
        with tl.watch_inplace():
            compiled_model()(x)
    assert type(watched.value) is type(plain.value) and str(watched.value) == str(plain.value)
    assert "is at version 1; expected version 0" in str(plain.value)
    from tutorial_lib.facts.inplace_watch import COMPILED_NOTE

    assert COMPILED_NOTE in watched.value.__notes__ and not hasattr(watched.value, "inplace_explanation")


@pytest.mark.slow
def test_a_tensor_saved_inside_compiled_code_is_named_by_the_line_that_called_it():
    @torch.compile(backend="aot_eager")
    def squash(t):
        return torch.exp(t)

    a = torch.randn(5, requires_grad=True)
    with tl.watch_inplace() as watch:
        s = squash(a)  # the calling line
        s.add_(1)
        with pytest.raises(RuntimeError) as raised:
            s.sum().backward()
    explanation = explanation_of(raised.value)
    assert explanation.node == "CompiledFunctionBackward"
    assert explanation.saved_at.text == "s = squash(a)  # the calling line"
    assert [w.line.text for w in explanation.changed_at] == ["s.add_(1)"]
    assert any("saved inside torch.compile'd code (squash)" in u for u in explanation.unknown)
    assert [line.text for line in watch.compiled_lines] == ["s = squash(a)  # the calling line"]


# ----------------------------------------------------------------------------------------------------
# What the explanation says about real programs, item by item


def explained(name: str):
    with tl.watch_inplace():
        with pytest.raises(RuntimeError) as raised:
            load(CORPUS / f"{name}.py").run()
    return explanation_of(raised.value)


def test_an_inplace_module_is_named_by_its_path_and_the_line_that_built_it():
    (write,) = explained("bug_dropout_inplace_in_sequential").changed_at
    assert write.module == "classifier.main[2]: Dropout(p=0.5, inplace=True)"
    assert write.built_at.lineno == 12 and write.built_at.text == "nn.Dropout(0.5, inplace=True),"
    explanation = explained("bug_relu_inplace_module")
    assert explanation.changed_at[0].module == "net.act: ReLU(inplace=True)"
    assert explanation.fixes[0].startswith("Build net.act (ReLU(inplace=True)) without inplace=True:")


def test_a_parameter_is_named_by_its_path_in_the_model():
    explanation = explained("bug_actor_critic_step_between_backwards")
    assert explanation.what == "critic.fc2.weight (input 'mat2' of addmm)"
    assert explanation.also_stale == ()  # fc1's addmm saved no weight: its input, the state, needs no gradient


def test_the_update_between_two_backward_calls_gets_the_fresh_forward_pass_first_and_the_leak_named():
    explanation = explained("bug_gan_step_between_backwards_sgd_default")
    first, second = explanation.fixes[:2]
    assert (
        first.startswith("retain_graph=True kept this graph") and "Run the forward pass again after the update" in first
    )
    assert "repeat line 12 (score = discriminator(fake)) right after line 15 (optimizer_d.step())" in first
    assert "Calling optimizer_d.step() only after every backward() would also remove the error, but then" in first
    assert second.startswith("Or update in the other order")
    # the ground truth of that sentence: with step() after both backward calls, the discriminator's gradient at the
    # step holds loss_g's gradient too
    torch.manual_seed(0)
    generator = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    discriminator = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LeakyReLU(0.2), torch.nn.Linear(4, 1))
    score = discriminator(generator(torch.randn(8, 2)))
    torch.nn.functional.softplus(score).mean().backward(retain_graph=True)
    own = [p.grad.clone() for p in discriminator.parameters()]
    torch.nn.functional.softplus(-score).mean().backward()
    assert all(not torch.allclose(a, p.grad) for a, p in zip(own, discriminator.parameters()))


def test_state_carried_across_batches_and_a_tensor_saved_in_an_earlier_iteration_are_named():
    explanation = explained("bug_lstm_state_carried_across_batches")
    (note,) = explanation.notes
    assert note.startswith("saved in an earlier batch: before the backward() at bug_lstm_state_carried_across_batches")
    assert explanation.fixes[0].startswith("Detach the state carried from one batch to the next: h, c = h.detach()")
    gru = explained("bug_gru_cell_state_carried")
    assert "h = h.detach() right after line 19 (loss.backward(retain_graph=True))" in gru.fixes[0]  # between batches
    explanation = explained("bug_saved_in_earlier_iteration")
    assert explanation.notes == (
        "saved in an earlier iteration: line 13 ran 1 more time after saving it, before line 15 changed it",
    )
    assert not explained("bug_two_changes").notes  # saved and changed in one pass: nothing to say


def test_a_helper_called_from_many_places_is_shown_with_its_call_chain():
    explanation = explained("bug_shared_helper_called_from_many_places")
    assert explanation.saved_at.function == "forward" and explanation.saved_at.lineno == 13
    assert [c.lineno for c in explanation.saved_callers][:2] == [24, 32]  # the third block's call, then the model's
    assert "called from bug_shared_helper_called_from_many_places.py:24  c = self.blocks[2](b)" in str(explanation)


def test_each_later_changing_line_gets_its_own_first_fix_named_by_its_line():
    explanation = explained("bug_two_changes")
    assert list(explanation.fixes) == [
        "Use the out-of-place form: e = e.add(1) instead of e.add_(1).",
        "Or clone before the change: e = e.clone() just before line 9 sends the change into a copy, so the saved "
        "tensor stays at version 0 (saved at line 8).",
        "Line 10 changes it too: use the out-of-place form: e = e.div(2) instead of e.div_(2).",
    ]


def test_a_write_into_a_stale_view_under_no_grad_makes_no_autograd_node():
    """Asking a view whose base changed for its grad_fn (``is_leaf`` does) rebuilds it: a node, and a sequence
    number, plain torch does not make there."""

    def program():
        a = torch.randn(4, requires_grad=True)
        b = a * 2
        v = b[:2]
        b.mul_(3)  # v's grad_fn is out of date now
        with torch.no_grad():
            v.zero_()  # autograd does not look at v's grad_fn here
        c = b.exp()
        return c.grad_fn._sequence_nr() - b.grad_fn._sequence_nr()

    plain = program()
    with tl.watch_inplace():
        watched = program()
    assert plain == watched == 1


# ---------------------------------------------------------------------------------------------------------
# places: a line of a notebook cell is named by its cell, a line of a file by the file
# ---------------------------------------------------------------------------------------------------------


def test_a_line_of_a_cell_is_named_by_the_cell_and_a_line_of_a_file_by_its_path(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    first = "import inspect\nfrom tutorial_lib.facts.inplace_watch import SourceLine\n"
    first += "here = SourceLine(inspect.currentframe().f_code.co_filename, 3, '', '')\nprint(here.place)"
    capsys.readouterr()
    made = shell.run_cell(first, store_history=True)
    assert made.success
    assert "ipykernel" in shell.user_ns["here"].filename or "ipython-input" in shell.user_ns["here"].filename
    assert capsys.readouterr().out.strip() == "line 3 of this cell"  # not "<ipython-input-…>:3"
    assert shell.run_cell("print(here.place)", store_history=True).success
    assert capsys.readouterr().out.strip() == f"line 3 of cell [{made.execution_count}]"  # by its prompt's number
    # the body of a cell magic: lines counted under the magic's line, as the fixes count them
    shell.run_cell("%load_ext tutorial_lib", store_history=True)
    magic = shell.run_cell(
        "%%watch_inplace\nimport torch\na = torch.randn(3, requires_grad=True)\ne = a.exp()\ne.add_(1)\n"
        "e.sum().backward()\n",
        store_history=True,
    )
    out = capsys.readouterr().out
    assert "saved at:     line 3 under %%watch_inplace  e = a.exp()" in out
    assert "changed at:   line 4 under %%watch_inplace  e.add_(1)" in out and "just before line 4 " in out
    shell.run_cell("import tutorial_lib as tl\nprint(tl.explain_inplace(e)[0])", store_history=True)
    assert f"saved at:     line 3 under %%watch_inplace in cell [{magic.execution_count}]" in capsys.readouterr().out
    # a kernel's cell file IPython did not compile here, and real files
    assert tl.SourceLine("/tmp/ipykernel_4242/1023890166.py", 7, "", "").place == "line 7 of a notebook cell"
    assert tl.SourceLine("/home/me/train.py", 7, "", "").place == "train.py:7"
    assert tl.SourceLine("train.py", 12, "f", "x += 1").place == "train.py:12"


def test_the_html_explanation_breaks_its_lines_between_words_only():
    # Review 3: in JupyterLab the explanation's <pre> broke lines inside words ("[torch.Flo / atTensor").
    from xml.etree import ElementTree

    a, e = stale_exp()
    (explanation,) = tl.explain_inplace(e)
    pre = ElementTree.fromstring(explanation._repr_html_())
    style = dict(part.split(":", 1) for part in pre.get("style").split(";") if part)
    assert (style["white-space"], style["word-break"], style["overflow-wrap"]) == ("pre-wrap", "normal", "break-word")
    assert "".join(pre.itertext()) == str(explanation)  # the same text, only its wrapping styled
