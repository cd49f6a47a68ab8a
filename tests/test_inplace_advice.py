"""inplace_advice: the fixes written with the program's own names, and the edits that apply them.

Each fix is checked the way a user would use it: the edits are applied to the program, and the program then runs
(its backward no longer raises) and computes what the out-of-place program computes.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
import torch

from tutorial_lib.facts.inplace_advice import (
    Change,
    Edit,
    apply_edits,
    carried_names,
    change_fixes,
    clone_root,
    detach_state_fix,
    fresh_forward_fix,
    statement_at,
)

SAVED = "the saved tensor stays at version 0."


def write(tmp_path, source: str, name: str = "program.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return str(path)


def line_of(path: str, text: str) -> int:
    return next(n for n, line in enumerate(open(path).read().splitlines(), start=1) if text in line)


def run(source: str, filename: str) -> dict:
    namespace: dict = {"__name__": "advised"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace


PROGRAM = """
import torch
import torch.nn.functional as F
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.sigmoid(x * 2)
{change}
h.sum().backward()
grad = x.grad
"""


@pytest.mark.parametrize(
    "change, op, argument, first, intended",
    [
        ("h += 1", "aten::add_", "self", "Use the out-of-place form: h = h + 1 instead of h += 1.", "h = h + 1"),
        ("h *= x + 1", "aten::mul_", "self", "Use the out-of-place form: h = h * (x + 1)", "h = h * (x + 1)"),
        (
            "h.mul_(2)",
            "aten::mul_",
            "self",
            "Use the out-of-place form: h = h.mul(2) instead of h.mul_(2).",
            "h = h * 2",
        ),
        ("torch.relu_(h)", "aten::relu_", "self", "Use the out-of-place form: h = torch.relu(h)", "h = torch.relu(h)"),
        (
            "F.relu_(h)",
            "aten::relu_",
            "self",
            "Use the out-of-place form: h = F.relu(h) instead of F.relu_(h).",
            "h = F.relu(h)",
        ),
        (
            "h = F.relu(h, inplace=True)",
            "aten::relu_",
            "self",
            "Drop inplace=True: h = F.relu(h, inplace=False)",
            "h = F.relu(h)",
        ),
        (
            "h.zero_()",
            "aten::zero_",
            "self",
            "Clone before the change: h = h.clone()",
            "h = h.clone(); h.zero_()",
        ),
        (
            "h.fill_(3)",
            "aten::fill_",
            "self",
            "Clone before the change: h = h.clone()",
            "h = h.clone(); h.fill_(3)",
        ),
        (
            "h[0] = 5",
            "aten::copy_",
            "self",
            "Clone before the assignment: h = h.clone() just before line 5",
            "h = h.clone(); h[0] = 5",
        ),
        (
            "h[1:] += 1",
            "aten::add_",
            "self",
            "Clone before the change: h = h.clone() just before line 5",
            "h = h.clone(); h[1:] += 1",
        ),
        (
            "h.detach().clamp_(max=0.6)",
            "aten::clamp_",
            "self",
            "Clone before the change: h = h.clone()",
            "h = h.clone(); h.detach().clamp_(max=0.6)",
        ),
        ("h.copy_(x)", "aten::copy_", "self", "Clone before the change: h = h.clone()", "h = h.clone(); h.copy_(x)"),
        (
            "torch.nn.init.zeros_(h)",
            "aten::zero_",
            "self",
            "Clone before the change: h = h.clone()",
            "h = h.clone(); torch.nn.init.zeros_(h)",
        ),
    ],
)
def test_each_form_of_write_gets_a_first_fix_that_runs_and_computes_the_intended_gradient(
    tmp_path, change, op, argument, first, intended
):
    path = write(tmp_path, PROGRAM.format(change=change))
    source = open(path).read()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(source, path)
    through_view = "[" in change.split("=")[0] and "+=" in change or change.startswith("h[")
    fixes = change_fixes(Change(op, argument, path, 5, through_view=through_view), SAVED)
    assert fixes and fixes[0].text.startswith(first), [f.text for f in fixes]
    assert fixes[0].edits and all(edit.text in fixes[0].text for edit in fixes[0].edits)
    assert all(not f.text.startswith("Or ") for f in fixes[:1]) and all(f.text.startswith("Or ") for f in fixes[1:])
    fixed = run(apply_edits(source, fixes[0].edits), path)["grad"]
    wanted = run(PROGRAM.format(change=intended), path)["grad"]
    assert torch.equal(fixed, wanted)


def test_out_is_dropped_where_grad_is_on_and_cloned_before_a_no_grad_block(tmp_path):
    path = write(tmp_path, PROGRAM.format(change="torch.mul(x, 2, out=h)"))
    (fix, *_) = change_fixes(Change("aten::mul", "out", path, 5), SAVED)
    assert fix.text.startswith("Drop out=...: h = torch.mul(x, 2) instead of torch.mul(x, 2, out=h)")
    guarded = PROGRAM.format(change="with torch.no_grad():\n    torch.mul(x, 2, out=h)")
    path = write(tmp_path, guarded, "guarded.py")
    (fix, *_) = change_fixes(Change("aten::mul", "out", path, 6), SAVED)
    assert fix.text.startswith("Clone before the change: h = h.clone() just before line 5 (before the torch.no_grad()")
    assert fix.edits == (Edit(path, 5, 5, "insert before", "h = h.clone()"),)
    assert "grad" in run(apply_edits(guarded.lstrip("\n"), fix.edits), path)  # runs


def test_a_write_through_a_view_taken_earlier_clones_before_the_view_unless_it_is_the_saved_tensor(tmp_path):
    source = PROGRAM.format(change="v = h[:2]\nv.relu_()")
    path = write(tmp_path, source)
    fixes = change_fixes(Change("aten::relu_", "self", path, 6, True, path, 5), SAVED)
    assert fixes[0].text.startswith("Clone before the view is taken: h = h.clone() just before line 5 (v = h[:2])")
    assert "grad" in run(apply_edits(open(path).read(), fixes[0].edits), path)
    mine = change_fixes(Change("aten::relu_", "self", path, 6, True, path, 5, writes_saved_tensor=True), SAVED)
    assert not mine[0].text.startswith("Clone before the view")  # cloning h would leave v, the saved one, written


def test_an_item_of_a_tuple_is_made_a_list_before_it_is_assigned(tmp_path):
    source = PROGRAM.format(change="ys = torch._foreach_exp([h, h])\nys[0].mul_(2)")
    path = write(tmp_path, source)
    (fix, *_) = change_fixes(Change("aten::mul_", "self", path, 6), SAVED)
    assert fix.text.startswith("Use the out-of-place form: ys = list(ys); ys[0] = ys[0].mul(2) instead of")
    listed = write(tmp_path, PROGRAM.format(change="ys = [h * 1, h * 2]\nys[0].mul_(2)"), "listed.py")
    (fix, *_) = change_fixes(Change("aten::mul_", "self", listed, 6), SAVED)
    assert fix.text.startswith("Use the out-of-place form: ys[0] = ys[0].mul(2) instead of")


def test_a_module_built_with_inplace_true_is_rebuilt_with_inplace_false(tmp_path):
    from tutorial_lib.facts.module_names import BuildSite

    path = write(
        tmp_path,
        "import torch\nmodel = torch.nn.Sequential(torch.nn.ReLU(True), torch.nn.Dropout(0.5, inplace=True))\n",
    )
    keyword = BuildSite(path, 2, "torch.nn.Dropout(0.5, inplace=True)", open(path).read().splitlines()[1])
    (fix,) = change_fixes(
        Change("aten::mul_", "self", None, None, module_path="model[1]", module_inplace=True, build=keyword), SAVED
    )
    assert fix.text.startswith("Build model[1] without inplace=True:") and "Dropout(0.5, inplace=False)" in fix.text
    assert fix.edits[0].first_line == 2 and "inplace=False" in fix.edits[0].text
    nowhere = change_fixes(Change("aten::relu_", "self", None, None, module_path="net.act", module_inplace=True), SAVED)
    assert (
        nowhere[0].text.startswith("Turn off net.act's in-place mode: set net.act.inplace = False")
        and not nowhere[0].edits
    )


def test_statement_at_finds_the_innermost_statement_and_its_no_grad_block(tmp_path):
    path = write(
        tmp_path,
        """
        import torch
        def f(h):
            with torch.no_grad():
                for i in range(2):
                    h[i] = (
                        i
                    )
            return h
        """,
    )
    statement = statement_at(path, line_of(path, "i\n") if False else 6)
    assert isinstance(statement.node, ast.Assign) and (statement.first_line, statement.last_line) == (5, 7)
    assert [type(a).__name__ for a in statement.ancestors] == ["FunctionDef", "With", "For"]
    assert statement_at(path, 4).node.__class__.__name__ == "For"  # a header is its own statement
    assert statement_at(path, 99) is None and statement_at(None, 3) is None
    assert statement_at(str(tmp_path / "missing.py"), 1) is None
    with pytest.raises(TypeError, match="filename must be a str or None"):
        statement_at(3, 1)


@pytest.mark.parametrize(
    "expression, element, root",
    [
        ("t.view(-1)[::2]", False, "t"),
        ("s.detach()", False, "s"),
        ("x.data", False, "x"),
        ("self.h[0]", False, "self.h"),
        ("ys[0]", True, "ys[0]"),
        ("f(x)[0]", False, None),
        ("torch.relu(x)", False, None),
    ],
)
def test_clone_root_names_the_variable_whose_memory_is_written(expression, element, root):
    assert clone_root(ast.parse(expression, mode="eval").body, element) == root


def test_carried_names_and_the_detach_fix(tmp_path):
    path = write(
        tmp_path,
        """
        out, (h, c) = lstm(x, (h, c))
        h = cell(x, h)
        y = layer(x)
        loss.backward(retain_graph=True)
        """,
    )
    assert carried_names(path, 1) == ["h", "c"] and carried_names(path, 2) == ["h"] and carried_names(path, 3) == []
    fix = detach_state_fix(["h", "c"], (path, 4), 1)
    assert fix.text.startswith("Detach the state carried from one batch to the next: h, c = h.detach(), c.detach()")
    assert fix.edits == (Edit(path, 4, 4, "insert after", "h, c = h.detach(), c.detach()"),)
    assert detach_state_fix([], (path, 4), 1) is None


def test_fresh_forward_fix_repeats_the_statements_after_the_update_in_order(tmp_path):
    path = write(
        tmp_path,
        """
        value = critic(state)
        advantage = ret - value
        loss = -(logp * advantage).mean()
        opt.step()
        loss.backward()
        """,
    )
    fix = fresh_forward_fix((path, 4), [(path, 3), (path, 1), (path, 2), (path, 1)], 5, "Lead.", "(Leak.)")
    assert fix.text.startswith("Lead. Run the forward pass again after the update: repeat lines 1, 2, 3")
    assert "right after line 4 (opt.step()), so that the backward() at line 5" in fix.text and fix.text.endswith(
        "(Leak.)"
    )
    applied = apply_edits(open(path).read(), fix.edits).splitlines()
    assert applied[4:7] == ["value = critic(state)", "advantage = ret - value", "loss = -(logp * advantage).mean()"]
    assert fresh_forward_fix((path, 4), [], 5) is None


def test_apply_edits_keeps_indentation_and_refuses_bad_edits(tmp_path):
    source = "def f():\n    a = 1\n    b = 2\n"
    edits = [
        Edit("f.py", 2, 2, "insert before", "z = 0"),
        Edit("f.py", 3, 3, "replace", "b = 3"),
        Edit("f.py", 3, 3, "insert after", "c = 4"),
    ]
    assert apply_edits(source, edits) == "def f():\n    z = 0\n    a = 1\n    b = 3\n    c = 4\n"
    with pytest.raises(ValueError, match="outside the source"):
        apply_edits(source, [Edit("f.py", 9, 9, "replace", "x")])
    with pytest.raises(ValueError, match="unknown edit action"):
        apply_edits(source, [Edit("f.py", 1, 1, "delete", "x")])
    with pytest.raises(TypeError, match="source must be a str"):
        apply_edits(b"x", [])
    with pytest.raises(TypeError, match="change must be a Change"):
        change_fixes("h += 1", SAVED)
