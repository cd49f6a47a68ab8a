"""How to fix an in-place change that broke backward, written with the program's own names and lines.

``watch_inplace`` knows which aten op changed a saved tensor and on which line. This module reads that line
(with ``ast``, through ``linecache`` so IPython cells work too) and writes the fix as code the user can paste:
``x = x + out`` for ``x += out``, ``h = torch.relu(h)`` for ``torch.relu_(h)``, ``inplace=False`` on the line
that built an ``nn.ReLU(inplace=True)``, ``f = f.clone()`` before ``f[i] = ...``. Each fix carries the
``Edit``s that apply it, so a test (or a user) can apply the first fix as written and run the program.

The rules, in the order they are tried for one write:

* a write inside a torch module's ``forward`` whose module has ``inplace=True``: build it with
  ``inplace=False`` (the line that built it is found by ``module_names.find_build_site``);
* ``inplace=True`` passed to a function on the changing line (``F.dropout(h, 0.5, inplace=True)``):
  ``inplace=False``;
* ``out=t``: drop it and assign the result (unless grad is off there: then clone first);
* ``x += v`` on a name: ``x = x + (v)``; the in-place method alone on a name (``b.mul_(2)``): ``b = b.mul(2)``;
  the function form (``torch.relu_(h)``, ``F.relu_(h)``): ``h = torch.relu(h)``;
* anything else that writes through an expression (``h[0] += 1``, ``f[i] = v``, ``s.detach().clamp_()``,
  ``t.view(-1)[::2].zero_()``): clone the variable first, outside any ``torch.no_grad()`` block;
* a write through a view taken on an earlier line: clone the viewed variable before that line.

The out-of-place forms keep the program's meaning for the changed variable; other names for the same memory
(views taken earlier) no longer see the change, which is what a clone before the view gives too.
"""

from __future__ import annotations

import ast
import linecache
import re
from dataclasses import dataclass

import torch

from ..common.checks import require_type
from .cell_lines import shown_lineno
from .module_names import BuildSite, parse_source

#: Names that stand for a module of functions, not a tensor, before ``.relu_(``: ``torch.relu_(h)``.
FUNCTION_NAMESPACES = frozenset(
    {"torch", "F", "nn", "functional", "torch.nn.functional", "nn.functional", "torch.special", "torch._C._nn"}
)
#: Grad-mode blocks: a clone made inside one has no history, so a clone goes before the block.
_NO_GRAD_CALLS = frozenset({"no_grad", "inference_mode", "set_grad_enabled"})
#: Tensor attributes that are the same memory under another name: cloning ``x.data`` means cloning ``x``.
_ALIAS_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})
_AUGMENTED = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Pow: "**"}
_AUGMENTED_OP = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_"}


@dataclass(frozen=True)
class Edit:
    """One change to a source file: replace lines ``first_line``..``last_line``, or insert a line before/after them.

    ``text`` is the new code without its indentation (the indentation of ``first_line`` is used);
    ``action`` is ``"replace"``, ``"insert before"`` or ``"insert after"``.
    """

    filename: str
    first_line: int
    last_line: int
    action: str
    text: str


@dataclass(frozen=True)
class Fix:
    """A fix in words and the edits that apply it (empty when it cannot be applied mechanically)."""

    text: str
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Change:
    """What the advice needs to know about one recorded write (``inplace_watch`` fills it in).

    Attributes:
        op: the aten op (``"aten::mul_"``).
        argument: the written argument (``"self"``, ``"out"``, ``"self[1]"``).
        filename, lineno: the user's line that made the write (None when unknown).
        through_view: the written tensor was a view.
        view_filename, view_lineno: the line that took that view, when known.
        module_path: ``"classifier.main[2]"`` when a torch module's ``forward`` made the write.
        module_summary: ``"Dropout(p=0.5, inplace=True)"``.
        module_inplace: that module has ``inplace=True``.
        build: where that module was built, when found.
        writes_saved_tensor: the written view is the saved tensor itself (same place in the same storage), so a
            clone before the view is taken would not help.
    """

    op: str
    argument: str
    filename: str | None
    lineno: int | None
    through_view: bool = False
    view_filename: str | None = None
    view_lineno: int | None = None
    module_path: str | None = None
    module_summary: str | None = None
    module_inplace: bool = False
    build: BuildSite | None = None
    writes_saved_tensor: bool = False


# ----------------------------------------------------------------------------------------------------
# Reading the program


@dataclass(frozen=True)
class Statement:
    """The statement on a line: its node, the nodes around it (outermost first) and its source text."""

    filename: str
    node: ast.stmt
    ancestors: tuple
    text: str  # the statement's source, as written (several lines for a multi-line statement)

    @property
    def first_line(self) -> int:
        return self.node.lineno

    @property
    def last_line(self) -> int:
        return self.node.end_lineno or self.node.lineno


def statement_at(filename: str | None, lineno: int | None) -> Statement | None:
    """The innermost statement that holds line ``lineno`` of ``filename`` (a compound statement's header counts
    as that statement), or None when the source cannot be read or parsed.

    Raises:
        TypeError: ``filename`` is not a str or None.
    """
    require_type(filename, (str, type(None)), "filename", "a str or None")
    if filename is None or lineno is None:
        return None
    tree = parse_source(filename)
    if tree is None:
        return None
    ancestors: list = []
    body = tree.body
    found = None
    while True:
        inner = next((s for s in body if s.lineno <= lineno <= (s.end_lineno or s.lineno)), None)
        if inner is None:
            break
        found = inner
        children = [
            child
            for field in ("body", "orelse", "finalbody", "handlers")
            for child in getattr(inner, field, None) or ()
            if isinstance(child, (ast.stmt, ast.excepthandler))
        ]
        header_end = min((c.lineno for c in children), default=lineno + 1)
        if not children or lineno < header_end:
            break
        ancestors.append(inner)
        body = [s for c in children for s in ([c] if isinstance(c, ast.stmt) else c.body)]
    if found is None:
        return None
    source = "".join(linecache.getlines(filename))
    text = ast.get_source_segment(source, found) or linecache.getline(filename, lineno).strip()
    return Statement(filename, found, tuple(ancestors), text)


def _is_namespace(node) -> bool:
    """Whether ``node`` (the part before ``.relu_(``) names a module of functions rather than a tensor."""
    try:
        return ast.unparse(node) in FUNCTION_NAMESPACES
    except (AttributeError, ValueError):
        return False


def _is_plain_name(node) -> bool:
    """``x``, ``self.h``: a name a statement can assign to (no call, no index)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def clone_root(node, element: bool = False) -> str | None:
    """The variable an expression reads its memory from: ``t`` for ``t.view(-1)[::2]``, ``s`` for
    ``s.detach()``, ``x`` for ``x.data``, ``self.h`` for ``self.h[0]``; None when there is none (``f(x)[0]``).

    ``element``: the expression is an item of a Python list or dict (``ys[0]`` not a view of a tensor ``ys``),
    which is then the variable itself.
    """
    if element and isinstance(node, ast.Subscript) and _is_plain_name(node.value):
        return ast.unparse(node)
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not _is_namespace(node.func.value):
            node = node.func.value  # a method call on a tensor: its receiver
        elif isinstance(node, ast.Attribute) and node.attr in _ALIAS_ATTRIBUTES:
            node = node.value
        else:
            break
    return ast.unparse(node) if _is_plain_name(node) else None


def _grad_off_block(statement: Statement):
    """The outermost ``with torch.no_grad():`` (or ``inference_mode``, ``set_grad_enabled``) around the statement."""
    for ancestor in statement.ancestors:
        if isinstance(ancestor, ast.With):
            for item in ancestor.items:
                call = item.context_expr
                name = call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                    name = call.func.id
                if name in _NO_GRAD_CALLS:
                    return ancestor
    return None


def _calls(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _method_name(op: str) -> str:
    """``mul_`` for ``aten::mul_`` or ``aten::mul_.Tensor``."""
    return op.removeprefix("aten::").split(".")[0]


# ----------------------------------------------------------------------------------------------------
# The fixes


def _clone_fix(statement: Statement, root: str, saved_text: str, lead: str) -> Fix:
    """``root = root.clone()`` before the statement (before its ``no_grad`` block if it has one)."""
    anchor = _grad_off_block(statement) or statement.node
    where = f"line {shown_lineno(statement.filename, anchor.lineno)}"
    block = (
        " (before the torch.no_grad() block: a clone made inside it has no history)"
        if anchor is not statement.node
        else ""
    )
    text = f"{lead}: {root} = {root}.clone() just before {where}{block} sends the change into a copy, so {saved_text}"
    return Fix(
        text, (Edit(statement.filename, anchor.lineno, anchor.lineno, "insert before", f"{root} = {root}.clone()"),)
    )


def _replace(statement: Statement, new: str) -> Edit:
    return Edit(statement.filename, statement.first_line, statement.last_line, "replace", new)


def _out_of_place_method(receiver: str, method: str, arguments: str) -> str | None:
    """The out-of-place statement for ``receiver.method_(arguments)``, or None when torch has no such form."""
    plain = method.removesuffix("_")
    # zero_, fill_ and copy_ have no out-of-place method; torch.zeros_like(y) would cut y from the graph (and
    # backward through y then fails), so a clone first is their fix
    if method in ("zero_", "fill_", "copy_", "set_", "resize_", "resize_as_", "requires_grad_", "share_memory_"):
        return None
    if not hasattr(torch.Tensor, plain):
        return None
    return f"{receiver} = {receiver}.{plain}({arguments})"


def _arguments_text(call: ast.Call, drop: str | None = None) -> str:
    """The call's arguments as written, without the keyword ``drop``."""
    parts = [ast.unparse(a) for a in call.args]
    parts += [
        f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}"
        for k in call.keywords
        if k.arg != drop
    ]
    return ", ".join(parts)


def change_fixes(change: Change, saved_text: str) -> list[Fix]:
    """The fixes for one write, first the one to apply (see the module docstring for the rules).

    Args:
        change: the write.
        saved_text: how the fix ends ("the saved tensor stays at version 0 (saved at line 3)."), for the clones.

    Returns:
        ``Fix``es, best first; empty when the line cannot be read (the caller then words a generic fix).

    Raises:
        TypeError: ``change`` is not a ``Change``.
    """
    require_type(change, Change, "change", "a Change")
    fixes: list[Fix] = []
    if change.module_path is not None and change.module_inplace:
        fixes.append(_module_fix(change))
    statement = statement_at(change.filename, change.lineno)
    if statement is None:
        return fixes
    taken_earlier = (change.view_filename, change.view_lineno) != (change.filename, change.lineno)
    view_fix = None
    if change.through_view and change.view_lineno is not None and taken_earlier and not change.writes_saved_tensor:
        view_fix = _view_clone_fix(change, statement, saved_text)
    line_fixes = _line_fixes(change, statement, saved_text) if change.module_path is None else []
    if isinstance(statement.node, ast.AugAssign) and _is_plain_name(statement.node.target):
        fixes += line_fixes[:1] + ([view_fix] if view_fix else []) + line_fixes[1:]  # x += v: x = x + v first
    else:
        fixes += ([view_fix] if view_fix else []) + line_fixes
    return _ranked(fixes)


def _ranked(fixes: list[Fix]) -> list[Fix]:
    """Fixes without repeats; every one after the first reads "Or ...", and the first never does."""
    seen, ranked = set(), []
    for fix in fixes:
        if fix.text in seen:
            continue
        seen.add(fix.text)
        text = fix.text.removeprefix("Or ")
        text = text[0].upper() + text[1:]
        if ranked:
            text = "Or " + text[0].lower() + text[1:]
        ranked.append(Fix(text, fix.edits))
    return ranked


def _module_fix(change: Change) -> Fix:
    build = change.build
    name = f"{change.module_path} ({change.module_summary})" if change.module_summary else change.module_path
    built_at = shown_lineno(build.filename, build.lineno) if build is not None else None
    if build is not None and "inplace" in build.line_text:
        old = build.line_text
        new = re.sub(r"inplace\s*=\s*True", "inplace=False", old, count=1)
        if new != old:
            return Fix(
                f"Build {name} without inplace=True: {new} instead of {old} at line {built_at}.",
                (Edit(build.filename, build.lineno, build.lineno, "replace", new),),
            )
    if build is not None:  # inplace given positionally: nn.ReLU(True), nn.LeakyReLU(0.2, True)
        call = build.call
        new_call = re.sub(r",?\s*True\)$", ")", call) if call.endswith("True)") else None
        if new_call is not None and call in build.line_text:
            new = build.line_text.replace(call, new_call, 1)
            return Fix(
                f"Build {name} without inplace=True: {new} instead of {build.line_text} at line {built_at}.",
                (Edit(build.filename, build.lineno, build.lineno, "replace", new),),
            )
    return Fix(
        f"Turn off {change.module_path}'s in-place mode: set {change.module_path}.inplace = False after building it "
        "(or build it without inplace=True)."
    )


def _view_clone_fix(change: Change, statement: Statement, saved_text: str) -> Fix | None:
    viewing = statement_at(change.view_filename, change.view_lineno)
    if viewing is None:
        return None
    roots = [clone_root(call.func.value) for call in _calls(viewing.node) if isinstance(call.func, ast.Attribute)]
    roots += [clone_root(n.value) for n in ast.walk(viewing.node) if isinstance(n, ast.Subscript)]
    roots = [r for r in roots if r is not None]
    if not roots:
        return None
    root = roots[0]
    anchor = _grad_off_block(viewing) or viewing.node
    code = f"{root} = {root}.clone()"
    viewed_at, written_at = shown_lineno(viewing.filename, anchor.lineno), shown_lineno(change.filename, change.lineno)
    text = (
        f"Clone before the view is taken: {code} just before line {viewed_at} ({viewing.text.splitlines()[0]}): "
        f"line {written_at} writes through that view, so the view must be taken from the copy; then {saved_text}"
    )
    return Fix(text, (Edit(viewing.filename, anchor.lineno, anchor.lineno, "insert before", code),))


def _line_fixes(change: Change, statement: Statement, saved_text: str) -> list[Fix]:
    node, text = statement.node, statement.text
    method = _method_name(change.op)
    fixes: list[Fix] = []
    # inplace=True passed to a function on this line
    for call in _calls(node):
        for keyword in call.keywords:
            if keyword.arg == "inplace" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
                new = re.sub(r"inplace\s*=\s*True", "inplace=False", text, count=1)
                fixes.append(Fix(f"Drop inplace=True: {new} instead of {text}.", (_replace(statement, new),)))
    # out=t
    if change.argument == "out":
        call = next((c for c in _calls(node) if any(k.arg == "out" for k in c.keywords)), None)
        if call is not None:
            out = ast.unparse(next(k.value for k in call.keywords if k.arg == "out"))
            if isinstance(node, ast.Expr) and node.value is call and _grad_off_block(statement) is None:
                new = f"{out} = {ast.unparse(call.func)}({_arguments_text(call, drop='out')})"
                fixes.append(
                    Fix(
                        f"Drop out=...: {new} instead of {text}, so it returns a new tensor.",
                        (_replace(statement, new),),
                    )
                )
            else:
                fixes.append(
                    _clone_fix(
                        statement,
                        clone_root(ast.parse(out, mode="eval").body) or out,
                        saved_text,
                        "Clone before the change",
                    )
                )
            fixes.append(Fix(f"Or drop out=... from {method}: let it return a new tensor."))
            return fixes
    # x += v
    if isinstance(node, ast.AugAssign) and type(node.op) in _AUGMENTED:
        sign = _AUGMENTED[type(node.op)]
        target = ast.unparse(node.target)
        if _is_plain_name(node.target):
            value = ast.unparse(node.value)
            atomic = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
            value = value if isinstance(node.value, atomic) else f"({value})"
            new = f"{target} = {target} {sign} {value}"
            fixes.append(Fix(f"Use the out-of-place form: {new} instead of {text}.", (_replace(statement, new),)))
        root = clone_root(node.target)
        if root is not None:
            fixes.append(_clone_fix(statement, root, saved_text, "Clone before the change"))
        return fixes
    # f[i] = v (index assignment)
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets):
        target = next(t for t in node.targets if isinstance(t, ast.Subscript))
        root = clone_root(target)
        if root is not None:
            fixes.append(_clone_fix(statement, root, saved_text, "Clone before the assignment"))
        fixes.append(
            Fix(
                f"Or do not assign into a tensor autograd saved ({text}): collect the pieces in a list and "
                "torch.stack / torch.cat them."
            )
        )
        return fixes
    # .op_(...) as a method or a function
    calls = [c for c in _calls(node) if isinstance(c.func, ast.Attribute) and c.func.attr == method]
    if calls:
        call = calls[0]
        alone = isinstance(node, ast.Expr) and node.value is call
        assigned = isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1
        if _is_namespace(call.func.value) and call.args:  # torch.relu_(h), F.relu_(h)
            tensor = call.args[0]
            plain = f"{ast.unparse(call.func.value)}.{method.removesuffix('_')}({_arguments_text(call)})"
            function_exists = _namespace_has(call.func.value, method.removesuffix("_"))
            if _is_plain_name(tensor) and function_exists and (alone or assigned):
                name = ast.unparse(tensor)
                targets = (
                    f"{ast.unparse(node.targets[0])} = " if assigned and ast.unparse(node.targets[0]) != name else ""
                )
                new = f"{targets}{name} = {plain}"
                fixes.append(Fix(f"Use the out-of-place form: {new} instead of {text}.", (_replace(statement, new),)))
            root = clone_root(tensor)
            if root is not None:
                fixes.append(_clone_fix(statement, root, saved_text, "Clone before the change"))
            return fixes
        receiver = call.func.value
        element = isinstance(receiver, ast.Subscript) and not change.through_view  # ys[0] of a list
        if alone and (_is_plain_name(receiver) or element) and not change.through_view:
            new = _out_of_place_method(ast.unparse(receiver), method, _arguments_text(call))
            if new is not None and element and _holds_tuple(statement, receiver.value):
                container = ast.unparse(receiver.value)  # a tuple's item cannot be assigned: make it a list
                new = f"{container} = list({container}); {new}"
            if new is not None:
                fixes.append(Fix(f"Use the out-of-place form: {new} instead of {text}.", (_replace(statement, new),)))
        root = clone_root(receiver, element)
        if root is not None and not (element and _holds_tuple(statement, receiver.value)):
            fixes.append(_clone_fix(statement, root, saved_text, "Clone before the change"))
        made = {"zero_": "torch.zeros_like({})", "fill_": "torch.full_like({}, " + _arguments_text(call) + ")"}
        if method in made and alone and _is_plain_name(receiver):
            name = ast.unparse(receiver)
            fixes.append(
                Fix(
                    f"Or, when {name} needs no gradient from here on, make a new tensor: {name} = "
                    f"{made[method].format(name)} instead of {text} (it is cut from the graph)."
                )
            )
        return fixes
    # another function that writes into its first argument (nn.init.zeros_(w), a helper named like one)
    writers = [
        c for c in _calls(node) if c.args and (getattr(c.func, "attr", None) or getattr(c.func, "id", "")).endswith("_")
    ]
    root = clone_root(writers[0].args[0]) if writers else None
    if root is not None:
        fixes.append(_clone_fix(statement, root, saved_text, "Clone before the change"))
    return fixes


#: Calls that return a tuple of tensors: an item of their result cannot be assigned to.
_TUPLE_RETURNING = re.compile(r"_foreach_\w+|unbind|split|chunk|tensor_split|sort|topk|max|min|unique|meshgrid")


def _holds_tuple(statement: Statement, container) -> bool:
    """Whether the name ``container`` was last assigned a tuple before the statement (a tuple literal, or the
    result of a call that returns one: ``torch._foreach_exp``, ``split``, ``sort``), as far as the source shows."""
    if not isinstance(container, ast.Name):
        return False
    scope = next(
        (a for a in reversed(statement.ancestors) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
        parse_source(statement.filename),
    )
    value = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < statement.first_line:
            if any(isinstance(t, ast.Name) and t.id == container.id for t in node.targets):
                if value is None or node.lineno > value[0]:
                    value = (node.lineno, node.value)
    if value is None:
        return False
    if isinstance(value[1], ast.Tuple):
        return True
    called = value[1].func if isinstance(value[1], ast.Call) else None
    name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
    return bool(name) and _TUPLE_RETURNING.fullmatch(name) is not None


def _namespace_has(node, name: str) -> bool:
    """Whether ``torch.<name>`` / ``F.<name>`` exists (``torch.relu``, ``F.relu``), judged from the namespace text."""
    namespace = ast.unparse(node)
    modules = {"torch": torch, "torch.special": torch.special}
    functional = torch.nn.functional
    module = modules.get(
        namespace, functional if namespace in ("F", "functional", "nn.functional", "torch.nn.functional") else None
    )
    return module is not None and hasattr(module, name)


# ----------------------------------------------------------------------------------------------------
# Fixes about the order of a training step


def fresh_forward_fix(
    step: tuple[str, int],
    repeat: list[tuple[str, int]],
    backward_line: int | None,
    lead: str = "",
    leak: str | None = None,
) -> Fix | None:
    """Run the forward pass again after an update (``optimizer.step()``): repeat ``repeat``'s statements after it.

    Args:
        step: (file, line) of the update (the ``step()`` call).
        repeat: (file, line) of each statement that built the graph part through the updated tensors.
        backward_line: the line of the backward call that failed, when known.
        lead: a sentence saying what went wrong, put before the fix.
        leak: what stepping only after every backward would change (a sentence), or None.

    Returns:
        A ``Fix`` with one insertion per statement, or None when a statement cannot be read.
    """
    statements = []
    for filename, lineno in repeat:
        statement = statement_at(filename, lineno)
        if statement is None or not isinstance(statement.node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
            return None
        if statement not in statements:
            statements.append(statement)
    anchor = statement_at(*step)
    if anchor is None or not statements:
        return None
    statements.sort(key=lambda s: s.first_line)
    code = [s.text if "\n" not in s.text else ast.unparse(s.node) for s in statements]
    listed = "; ".join(code)
    lines = ", ".join(str(shown_lineno(s.filename, s.first_line)) for s in statements)
    backward = f" the backward() at line {backward_line}" if backward_line is not None else " the next backward()"
    step_text = anchor.text.splitlines()[0]
    step_at = shown_lineno(anchor.filename, anchor.first_line)
    text = (
        f"{lead + ' ' if lead else ''}Run the forward pass again after the update: repeat "
        f"line{'s' if len(statements) > 1 else ''} {lines} ({listed}) right after line {step_at} "
        f"({step_text}), so that{backward} goes through a graph built from the updated values."
    )
    if leak:
        text += " " + leak
    edits = tuple(
        Edit(anchor.filename, anchor.first_line, anchor.last_line, "insert after", line) for line in reversed(code)
    )
    return Fix(text, edits)


def carried_names(filename: str, lineno: int) -> list[str]:
    """Names the statement on the line both reads and assigns (``h`` in ``h = cell(x, h)``, ``h, c`` in
    ``out, (h, c) = lstm(x, (h, c))``): state carried from one run of the line to the next."""
    statement = statement_at(filename, lineno)
    if statement is None or not isinstance(statement.node, ast.Assign):
        return []
    assigned = [n.id for t in statement.node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    read = {n.id for n in ast.walk(statement.node.value) if isinstance(n, ast.Name)}
    return [name for name in dict.fromkeys(assigned) if name in read]


def detach_state_fix(names: list[str], after: tuple[str, int], saved_line: int) -> Fix | None:
    """Detach the state carried between batches, right after the earlier batch's ``backward()`` call."""
    anchor = statement_at(*after)
    if anchor is None or not names:
        return None
    code = f"{', '.join(names)} = {', '.join(f'{n}.detach()' for n in names)}"
    after = shown_lineno(anchor.filename, anchor.first_line)
    text = (
        f"Detach the state carried from one batch to the next: {code} right after line {after} "
        f"({anchor.text.splitlines()[0]}), so that the next batch's graph starts at line {saved_line} instead of "
        "reaching back into this one (whose saved tensors the step changes). retain_graph=True is then not needed."
    )
    return Fix(text, (Edit(anchor.filename, anchor.first_line, anchor.last_line, "insert after", code),))


# ----------------------------------------------------------------------------------------------------
# Applying edits


def apply_edits(source: str, edits) -> str:
    """``source`` with the edits applied (all to this one file; later lines first, so numbers stay valid).

    Raises:
        TypeError: ``source`` is not a str.
        ValueError: an edit's lines are outside the source, or its action is unknown.
    """
    require_type(source, str, "source", "a str")
    lines = source.splitlines()
    order = {"insert after": 2, "replace": 1, "insert before": 0}
    for edit in sorted(dict.fromkeys(edits), key=lambda e: (e.first_line, order.get(e.action, 0)), reverse=True):
        if not 1 <= edit.first_line <= edit.last_line <= len(lines):
            raise ValueError(
                f"edit lines {edit.first_line}..{edit.last_line} are outside the source ({len(lines)} lines)"
            )
        indent = re.match(r"\s*", lines[edit.first_line - 1]).group(0)
        new = [indent + line for line in edit.text.splitlines()]
        if edit.action == "replace":
            lines[edit.first_line - 1 : edit.last_line] = new
        elif edit.action == "insert before":
            lines[edit.first_line - 1 : edit.first_line - 1] = new
        elif edit.action == "insert after":
            lines[edit.last_line : edit.last_line] = new
        else:
            raise ValueError(f"unknown edit action {edit.action!r}")
    return "\n".join(lines) + "\n"


__all__ = [
    "Change",
    "Edit",
    "Fix",
    "Statement",
    "apply_edits",
    "carried_names",
    "change_fixes",
    "clone_root",
    "detach_state_fix",
    "fresh_forward_fix",
    "statement_at",
]
