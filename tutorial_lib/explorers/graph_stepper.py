"""Explorers for the backward graph: step through a program and watch its graph, saved tensors and versions.

``GraphStepper`` runs a list of statements one at a time in its own namespace. After every step it
snapshots the graph of the tensor being followed (``autograd_graph``) and its stale saved tensors
(``inplace_hazards``); its picture is the ``graph_scene`` of that graph. The logic is plain Python
(``step_forward``, ``step_back``, ``summary``, ``hazards``, ``scene``) so it is tested without a browser;
``widget`` wraps it in ipywidgets (Back / Next buttons, the picture as inline SVG, a table of saved tensors).

ipywidgets and matplotlib are imported only when a widget or figure is made.
"""

from __future__ import annotations

import ast
import html

import torch

from ..common.checks import describe, require_bool, require_int
from ..common.text import plural, strip_hint
from ..facts.graph import Graph, Hazard, HazardList, autograd_graph, inplace_hazards, refused_graph
from ..pictures.graph_picture import graph_scene
from ..pictures.scene import Scene, Style, Text, text_width
from .base import Explorer

#: The look of the note shown instead of a graph before there is a tensor to follow.
_NOTE_STYLE = Style(family="sans", size=10.0, color="#555555")
_NOTE_MARGIN = 6.0  # points around the note


def _check_steps(steps) -> tuple[tuple[str, str, object], ...]:
    """Validate and compile steps: a list of (label, statement) pairs."""
    if not isinstance(steps, (list, tuple)):
        raise TypeError(f"steps must be a list of (label, statement) pairs, got {describe(steps)}")
    if not steps:
        raise ValueError("steps must hold at least one (label, statement) pair")
    checked = []
    for i, step in enumerate(steps):
        if not (isinstance(step, (tuple, list)) and len(step) == 2 and all(isinstance(s, str) for s in step)):
            raise TypeError(f"steps[{i}] must be a (label, statement) pair of str, got {describe(step)}")
        label, statement = step
        try:
            code = compile(statement, f"<step {i + 1}: {label}>", "exec")
        except SyntaxError as error:
            raise ValueError(f"steps[{i}] statement {statement!r} is not valid Python: {error.msg}") from None
        checked.append((label, statement, code))
    return tuple(checked)


def _assigned_names(statement: str) -> list[str]:
    """Names a statement binds or changes in place, in order (``a = …``, ``a += 1``, ``a[0] = 5``, ``a.mul_(2)``)."""

    def base(node):
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    names = []
    for node in ast.walk(ast.parse(statement)):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr.endswith("_") and not node.func.attr.startswith("_"):  # a.mul_(2): in place
                targets = [node.func.value]
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names.extend(n for n in (base(e) for e in elements) if n)
    return names


def _is_leaf(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` has no grad_fn; False when autograd refuses to build one (a ``split()`` output
    whose base was changed in place raises on ``.grad_fn``)."""
    try:
        return tensor.grad_fn is None
    except RuntimeError:
        return False


def _note_scene(note: str) -> Scene:
    """A picture that is one line of text, shown instead of a graph (``placeholder`` is its id)."""
    width = text_width(note, "sans", _NOTE_STYLE.size) + 2 * _NOTE_MARGIN
    height = _NOTE_STYLE.size + 2 * _NOTE_MARGIN
    text = Text(_NOTE_MARGIN, height / 2, note, "note", id="placeholder", baseline="middle")
    return Scene(width, height, (text,), {"note": _NOTE_STYLE}, title=note)


class GraphStepper(Explorer):
    """Run statements one at a time and show the backward graph after each.

    Example::

        GraphStepper([
            ("a leaf", "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)"),
            ("exp saves its result", "a = x.exp()"),
            ("change a in place", "a.mul_(2)"),
            ("use a", "y = (a * x).sum()"),
            ("backward fails", "y.backward()"),
        ])

    Args:
        steps: list of (label, Python statement) pairs, run in order in a namespace holding ``torch``.
        setup: a statement run before the first step (and again before every rerun).
        target: the variable whose graph is shown; None follows the variable each step last assigned
            or changed in place (``a.mul_(2)`` keeps showing ``a``).
        show_values: print values and grads of leaves and the output in the picture.
        seed: ``torch.manual_seed`` for every run from scratch, so reruns draw the same random numbers
            (the caller's random state is left untouched).

    Raises:
        TypeError: ``steps`` is not a list of (str, str) pairs, or another argument has the wrong type.
        ValueError: ``steps`` is empty or a statement is not valid Python.
    """

    def __init__(
        self, steps, setup: str | None = None, target: str | None = None, show_values: bool = False, seed: int = 0
    ):
        self._steps = _check_steps(steps)
        if setup is not None and not isinstance(setup, str):
            raise TypeError(f"setup must be a statement (str) or None, got {describe(setup)}")
        self._setup = compile(setup, "<setup>", "exec") if setup else None
        if target is not None and not (isinstance(target, str) and target.isidentifier()):
            raise TypeError(f"target must be a variable name (str) or None, got {describe(target)}")
        self._fixed_target = target
        self.show_values = require_bool(show_values, "show_values")
        self._seed = require_int(seed, "seed")
        self._restart()
        self._snapshot()

    # -- running -------------------------------------------------------------------------------------

    def _restart(self) -> None:
        self.namespace: dict = {"torch": torch}
        self.position = 0  # how many steps have run
        self.error: str | None = None
        self._followed: str | None = None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._seed)
            if self._setup is not None:
                exec(self._setup, self.namespace)  # noqa: S102 - the course's own statements
            self._rng = torch.get_rng_state()

    def _run_next(self) -> None:
        label, statement, code = self._steps[self.position]
        self.error = None
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._rng)
            try:
                exec(code, self.namespace)  # noqa: S102
            except Exception as error:  # noqa: BLE001 - a failing step (backward through a stale tensor) is a lesson
                self.error = f"{type(error).__name__}: {strip_hint(error)}"
            self._rng = torch.get_rng_state()
        self.position += 1
        for name in _assigned_names(statement):
            if isinstance(self.namespace.get(name), torch.Tensor):
                self._followed = name

    def _snapshot(self) -> None:
        """Read the graph facts for the current position (the picture is planned lazily)."""
        self._scene = None
        name = self.target
        tensor = self.namespace.get(name) if name else None
        if isinstance(tensor, torch.Tensor):
            leaves = {
                k: v
                for k, v in self.namespace.items()
                if isinstance(v, torch.Tensor) and v.requires_grad and not k.startswith("_") and _is_leaf(v)
            }
            try:
                self.graph: Graph | None = autograd_graph(tensor, names=leaves or None)
                self.hazards: list[Hazard] = inplace_hazards(tensor)
            except RuntimeError as error:  # autograd refuses to build its grad_fn: say so, do not raise
                self.graph = refused_graph(tensor, str(error).split(". ")[0])
                self.hazards = HazardList([], self.graph.unseen)
        else:
            self.graph, self.hazards = None, []

    def _moved(self) -> None:
        """After running or rerunning: read the new state and show it."""
        self._snapshot()
        if self._widget is not None:
            self._refresh_widget()

    def step_forward(self) -> bool:
        """Run the next step. Returns False (and does nothing) when all steps have run."""
        if self.position >= len(self._steps):
            return False
        self._run_next()
        self._moved()
        return True

    def step_back(self) -> bool:
        """Go back one step by rerunning from scratch up to the previous one. False at the start."""
        if self.position == 0:
            return False
        self.goto(self.position - 1)
        return True

    def goto(self, k: int) -> None:
        """Rerun from scratch up to and including step ``k`` (0 = only the setup).

        Raises:
            TypeError: ``k`` is not an int.
            ValueError: ``k`` is outside 0 … number of steps.
        """
        require_int(k, "k")
        if not 0 <= k <= len(self._steps):
            raise ValueError(f"k must be between 0 and {len(self._steps)}, got {k}")
        self._restart()
        while self.position < k:
            self._run_next()
        self._moved()

    # -- what to show ---------------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[tuple[str, str], ...]:
        return tuple((label, statement) for label, statement, _ in self._steps)

    @property
    def target(self) -> str | None:
        """The variable whose graph is shown now."""
        return self._fixed_target or self._followed

    @property
    def scene(self) -> Scene:
        """The current picture: the graph's ``graph_scene``, or a one-line note before there is a tensor."""
        if self._scene is None:
            if self.graph is not None:
                self._scene = graph_scene(self.graph, show_values=self.show_values)
            elif self.position == 0:
                self._scene = _note_scene("nothing run yet: press Next ▶")
            else:
                self._scene = _note_scene(f"no tensor to show yet ({self.error or 'run on'})")
        return self._scene

    def saved_rows(self) -> list[tuple[str, str, int | None, int | None, str]]:
        """(node name, saved attribute, saved version, current version, state) for every saved tensor.

        ``state`` is ``SavedTensor.state``: ``"ok"``, ``"stale"``, ``"freed"``, ``"hooked"`` or ``"unknown"``.
        """
        if self.graph is None:
            return []
        return [
            (node.name, s.attribute, s.saved_version, s.current_version, s.state)
            for node in self.graph.nodes
            for s in node.saved
        ]

    @property
    def summary(self) -> str:
        """One line: the step, the statement, the graph followed, every saved tensor's versions, hazards."""
        if self.position == 0:
            head = f"Step 0/{len(self._steps)}: nothing run yet"
        else:
            label, statement, _ = self._steps[self.position - 1]
            head = f"Step {self.position}/{len(self._steps)} ({label}): {statement}"
        parts = [head]
        if self.error:
            parts.append(f"raised {self.error}")
        if self.graph is None:
            parts.append("no tensor to show yet")
        else:
            g = self.graph
            parts.append(f"graph of {self.target}: {plural(g.total_nodes, 'node')}")
            rows = self.saved_rows()
            if rows:
                parts.append(
                    "saved: "
                    + ", ".join(
                        f"{n}.{a} v{sv} (now v{cv}){' ⚠ stale' if state == 'stale' else ''}"
                        if sv is not None
                        else f"{n}.{a} ({state})"
                        for n, a, sv, cv, state in rows
                    )
                )
            if self.hazards:
                parts.append(
                    "⚠ "
                    + "; ".join(
                        f"{h.node} saved {h.what} at v{h.saved_version}, now v{h.current_version}: backward() would "
                        "fail"
                        for h in self.hazards
                    )
                )
            elif g.unseen:
                parts.append("no hazards among what could be read")
            else:
                parts.append("no hazards")
            if g.unseen:
                parts.append("not checked: " + "; ".join(g.unseen))
        return " · ".join(parts)

    def plain_text(self) -> str:
        """What nbval and text-only frontends see: the summary (the step, the versions, the hazards)."""
        return self.summary

    def __repr__(self) -> str:
        return f"GraphStepper({self.summary})"

    # -- widget ---------------------------------------------------------------------------------------

    def _table_html(self) -> str:
        """The step, its error, and the saved tensors with their versions, as HTML."""
        label = "setup" if self.position == 0 else self._steps[self.position - 1][0]
        statement = "" if self.position == 0 else self._steps[self.position - 1][1]
        out = [
            f"<div style='font-family:monospace'><b>Step {self.position}/{len(self._steps)}</b> "
            f"{html.escape(label)}: <code>{html.escape(statement)}</code></div>"
        ]
        if self.error:
            out.append(f"<div style='color:#b00000;font-family:monospace'>{html.escape(self.error)}</div>")
        rows = self.saved_rows()
        if rows:
            cells = "".join(
                f"<tr><td>{html.escape(n)}</td><td>{html.escape(a)}</td><td>{'' if sv is None else f'v{sv}'}</td>"
                f"<td>{'' if cv is None else f'v{cv}'}</td><td>{'⚠ stale' if state == 'stale' else state}</td></tr>"
                for n, a, sv, cv, state in rows
            )
            out.append(
                "<table style='font-family:monospace'><tr><th>node</th><th>saved</th><th>saved at</th>"
                f"<th>now</th><th></th></tr>{cells}</table>"
            )
        for h in self.hazards:
            out.append(f"<div style='color:#b00000'>⚠ {html.escape(h.explanation)}</div>")
        return "".join(out)

    def _build(self, widgets):
        """Back / Next buttons, the saved-tensor table, and the picture as inline SVG."""
        back = widgets.Button(description="◀ Back", tooltip="rerun from scratch up to the previous step")
        forward = widgets.Button(description="Next ▶", tooltip="run the next step")
        picture = widgets.HTML()
        info = widgets.HTML()
        back.on_click(lambda _: self.step_back())
        forward.on_click(lambda _: self.step_forward())
        self._parts = (back, forward, picture, info)
        self._refresh_widget()
        return widgets.VBox([widgets.HBox([back, forward]), info, picture])

    def _refresh_widget(self) -> None:
        """Show the current state in the widgets."""
        back, forward, picture, info = self._parts
        back.disabled = self.position == 0
        forward.disabled = self.position >= len(self._steps)
        picture.value = self.svg_html()
        info.value = self._table_html()
