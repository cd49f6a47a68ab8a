"""Explorers for the backward graph: step through a program and watch its graph, saved tensors and versions.

``GraphStepper`` runs a list of statements one at a time in its own namespace. After every step it
snapshots the graph of the tensor being followed (``autograd_graph``) and its stale saved tensors
(``inplace_hazards``); its picture is the ``graph_scene`` of that graph. The logic is plain Python
(``step_forward``, ``step_back``, ``summary``, ``hazards``, ``scene``, ``changes``) so it is tested without
a browser; ``widget`` wraps it in ipywidgets: Back / Next buttons, the program listing with the line that just
ran highlighted (as Python Tutor does) beside the picture as inline SVG, and below them a table of saved tensors
in a scroll box, so the picture stays where it is however long the table grows. What each step added to the
graph, made stale or freed is marked on its line of the listing, in the table and in the picture (``StepChange``).
Nodes are numbered in the order they were made and keep their number from step to step (``creation_numbers``); each
node that made a tensor a variable names carries that name, and every step's picture has the size of the largest, the
graph at its bottom, so nothing jumps as the learner steps.

ipywidgets and matplotlib are imported only when a widget or figure is made.
"""

from __future__ import annotations

import ast
import contextlib
import html
import io
import warnings
import weakref
from collections import defaultdict
from dataclasses import dataclass, replace

import torch

from ..common.checks import describe, require_bool, require_int, require_type
from ..common.text import plural, strip_hint, tuple_text
from ..facts.graph import Graph, GraphNode, Hazard, HazardList, autograd_graph, inplace_hazards, refused_graph
from ..pictures.graph_picture import bound_names_of, graph_scene
from ..pictures.scene import Scene, Style, Text, text_width
from .base import Explorer

#: The look of the note shown instead of a graph before there is a tensor to follow.
_NOTE_STYLE = Style(family="sans", size=10.0, color="#555555")
_NOTE_MARGIN = 6.0  # points around the note
#: The background of what the current step ran and changed, in the listing and the table.
HIGHLIGHT = "#e2e2e2"  # a grey: no hue of a tensor tint (yellow, green, lilac) or of a verdict
#: The most the saved-tensor table takes up on the page; a longer table scrolls inside it.
TABLE_HEIGHT = "14em"


@dataclass(frozen=True)
class StepChange:
    """What one step did to the graph shown, compared with the graph shown before it.

    ``added`` holds ids of nodes new in this step's graph (never the output node: it is the tensor shown);
    ``made_stale`` and ``freed`` hold ``(node id, saved attribute)`` pairs whose saved tensor this step
    changed in place or backward freed. Ids are this step's ``Graph`` node ids. ``note`` says it in words
    (``"+ MulBackward0 · ⚠ made ExpBackward0.result stale"``, '' when nothing); ``error`` is what the step
    raised (None when it ran).
    """

    added: frozenset[int] = frozenset()
    made_stale: frozenset[tuple[int, str]] = frozenset()
    freed: frozenset[tuple[int, str]] = frozenset()
    note: str = ""
    error: str | None = None


def _node_key(node: GraphNode) -> tuple:
    """What a node is, without its id, versions or saved list: how a node is recognised in the next step's graph.

    The saved list is left out because backward changes it: a ``CopySlices`` lists its hidden tensors only once they
    are stale or freed, a custom Function's freed ``saved_tensors[i]`` become one freed ``saved_tensors``.
    """
    name = node.name if node.kind == "backward" else ""  # a leaf alone is "leaf", under a graph "AccumulateGrad"
    return (node.kind, name, node.label, node.shape)


def _node_text(node: GraphNode) -> str:
    """A node as the listing names it: ``MulBackward0``, ``leaf x``, ``output``."""
    return {"backward": node.name, "leaf": f"leaf {node.label}"}.get(node.kind, node.kind)


def _names(names) -> str:
    """Names joined by commas, each once, in order."""
    return ", ".join(dict.fromkeys(names))


def _matches(before: Graph | None, after: Graph) -> dict:
    """``{after's node id: the node of before it is, or None when new}``: nodes matched by what they are, from the
    leaves up (a step adds nodes on top of the graph it had, nearer the output: of two alike nodes, the deeper one is
    the older)."""
    earlier = defaultdict(list)
    for node in () if before is None else before.nodes:
        earlier[_node_key(node)].append(node)
    previous_of = {}
    for node in reversed(after.nodes):
        matches = earlier[_node_key(node)]
        previous_of[node.id] = matches.pop() if matches else None
    return previous_of


def creation_numbers(before: Graph | None, numbers: dict, after: Graph | None, next_number: int) -> tuple[dict, int]:
    """Stable numbers for ``after``'s nodes: a node ``before`` had keeps its number (``numbers``: before's node id to
    number), a new one gets the next, the deeper (older) first, so numbers count nodes in the order they were made.
    The output, the tensor shown, is not numbered.

    Returns:
        ``({after's node id: number}, the next number free)``.
    """
    if after is None:
        return {}, next_number
    previous_of = _matches(before, after)
    out = {}
    for node in reversed(after.nodes):
        if node.kind == "output":
            continue
        match = previous_of[node.id]
        if match is not None and match.id in numbers:
            out[node.id] = numbers[match.id]
        else:
            out[node.id] = next_number
            next_number += 1
    return out, next_number


def step_change(before: Graph | None, after: Graph | None) -> StepChange:
    """What changed from the graph shown before a step to the one shown after it.

    Nodes are matched by what they are (kind, name, label, shape; not what they list as saved, which backward
    changes), from the leaves up (of two alike nodes the deeper is the older); an ``after`` node with no match is
    added. A matched node's saved tensor that is stale (or freed) after and was not before (or was not listed
    before) was made stale (freed) by the step.

    Args:
        before, after: ``Graph`` snapshots (None when no tensor was shown).

    Returns:
        A ``StepChange`` in ``after``'s node ids (empty when ``after`` is None).
    """
    for name, graph in (("before", before), ("after", after)):
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"{name} must be a Graph or None, got {describe(graph)}")
    if after is None:
        return StepChange()
    previous_of = _matches(before, after)
    added, made_stale, freed = [], [], []
    for node in after.nodes:
        match = previous_of[node.id]
        if match is None:
            if node.kind != "output":  # the tensor shown is not news: which one it is, the step's line says
                added.append(node)
            continue
        previous = {s.attribute: s for s in match.saved}
        for saved in node.saved:
            was = previous.get(saved.attribute)  # None: not listed before (hidden in a CopySlices, say)
            if saved.stale and (was is None or not was.stale):
                made_stale.append((node, saved.attribute))
            if saved.freed and (was is None or not was.freed):
                freed.append((node, saved.attribute))
    parts = []
    if added:
        parts.append("+ " + _names(_node_text(node) for node in added))
    if made_stale:
        parts.append(f"⚠ made {_names(f'{node.name}.{a}' for node, a in made_stale)} stale")
    if freed:
        parts.append(f"freed {_names(f'{node.name}.{a}' for node, a in freed)}")
    return StepChange(
        frozenset(node.id for node in added),
        frozenset((node.id, a) for node, a in made_stale),
        frozenset((node.id, a) for node, a in freed),
        " · ".join(parts),
    )


def _check_steps(steps) -> tuple[tuple[str, str, object], ...]:
    """Validate and compile steps: a list of (label, statement) pairs."""
    require_type(steps, (list, tuple), "steps", "a list of (label, statement) pairs")
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


def _note_scene(note: str) -> Scene:
    """A picture that is one line of text, shown instead of a graph (``placeholder`` is its id)."""
    width = text_width(note, "sans", _NOTE_STYLE.size) + 2 * _NOTE_MARGIN
    height = _NOTE_STYLE.size + 2 * _NOTE_MARGIN
    text = Text(_NOTE_MARGIN, height / 2, note, "note", id="placeholder", baseline="middle")
    return Scene(width, height, (text,), {"note": _NOTE_STYLE}, title=note)


def _framed(scene: Scene, frame: tuple[float, float]) -> Scene:
    """``scene`` on a canvas of size ``frame`` (at least its own): the legend stays at the top, everything else moves
    down to the bottom, where the leaves of every step's graph sit."""
    width, height = max(frame[0], scene.width), max(frame[1], scene.height)
    down = height - scene.height
    items = tuple(item if item.id == "legend" else _moved_down(item, down) for item in scene.items)
    return Scene(width, height, items, scene.styles, scene.title)


def _moved_down(item, dy: float):
    if not dy:
        return item
    if hasattr(item, "points"):
        return replace(item, points=tuple((x, y + dy) for x, y in item.points))
    return replace(item, y=item.y + dy)


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
        ValueError: ``steps`` is empty, a statement or ``setup`` is not valid Python, or ``seed`` is outside what
            ``torch.manual_seed`` takes.
    """

    def __init__(
        self, steps, setup: str | None = None, target: str | None = None, show_values: bool = False, seed: int = 0
    ):
        self._steps = _check_steps(steps)
        if setup is not None and not isinstance(setup, str):
            raise TypeError(f"setup must be a statement (str) or None, got {describe(setup)}")
        try:
            self._setup = compile(setup, "<setup>", "exec") if setup else None
        except SyntaxError as error:
            raise ValueError(f"setup statement {setup!r} is not valid Python: {error.msg}") from None
        if target is not None and not (isinstance(target, str) and target.isidentifier()):
            raise TypeError(f"target must be a variable name (str) or None, got {describe(target)}")
        self._fixed_target = target
        self._setup_text = setup
        self._frame_size: tuple[float, float] | None = None  # the largest picture of all steps, found when first drawn
        self._framed = True
        self.show_values = require_bool(show_values, "show_values")
        self._seed = require_int(seed, "seed")
        if not -(2**63) <= self._seed < 2**64:  # what torch.manual_seed takes
            raise ValueError(f"seed must be in [-2**63, 2**64) (what torch.manual_seed takes), got {self._seed}")
        self._restart()

    # -- running -------------------------------------------------------------------------------------

    def _restart(self) -> None:
        """A fresh namespace with only the setup run, and its graph read."""
        self.namespace: dict = {"torch": torch}
        self.position = 0  # how many steps have run
        self.error: str | None = None
        self._followed: str | None = None
        self._changes: list[StepChange] = []
        self.graph: Graph | None = None
        self.numbers: dict[int, int] = {}  # the graph's node id -> its number, in the order the nodes were made
        self._next_number = 1
        self._ever_bound: dict[int, list[str]] = {}  # a node's number -> every name bound to what it made so far
        self._bound_to: dict[tuple[int, str], weakref.ref] = {}  # (number, name) -> the object the name held then
        self.rebound: dict[int, list[str]] = {}
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._seed)
            if self._setup is not None:
                exec(self._setup, self.namespace)  # noqa: S102 - the course's own statements
            self._rng = torch.get_rng_state()
        self._snapshot()

    def _advance(self) -> None:
        """Run the next step, read the new graph, and note what the step changed in it."""
        before = self.graph
        self._run_next()
        self._snapshot()
        self._changes.append(replace(step_change(before, self.graph), error=self.error))

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
        """Read the graph facts for the current position (the picture is planned lazily), number its nodes in the
        order they were made (a node keeps its number from step to step) and find the names bound to them."""
        self._scene = None
        before, name = self.graph, self.target
        tensor = self.namespace.get(name) if name else None
        self.bound: dict[int, list[str]] = {}
        if isinstance(tensor, torch.Tensor):
            # Every variable names what it holds: leaves by their names, saved tensors by the variable they are.
            named = {k: v for k, v in self.namespace.items() if isinstance(v, torch.Tensor) and not k.startswith("_")}
            try:
                self.graph = autograd_graph(tensor, names=named or None)
                self.hazards: list[Hazard] = inplace_hazards(tensor)
                self.bound = bound_names_of(tensor, self.graph, named)
            except RuntimeError as error:  # autograd refuses to build its grad_fn: say so, do not raise
                self.graph = refused_graph(tensor, str(error).split(". ")[0])
                self.hazards = HazardList([], self.graph.unseen)
        else:
            self.graph, self.hazards = None, []
        self.numbers, self._next_number = creation_numbers(before, self.numbers, self.graph, self._next_number)
        self._note_rebound(name)

    def _note_rebound(self, name) -> None:
        """Remember the names bound to each node's tensor (the followed one: its output's node), and find those bound
        once and rebound since (``y`` on the older ``MulBackward0`` after ``y = y * 2``).

        A name that still holds the same object is not rebound: after ``b.mul_(2)`` ``b`` is the same tensor with a
        new ``grad_fn``, so ``ExpBackward0`` gets no "(was b)" (chapter 2: an in-place write keeps the object)."""
        self.rebound = {}
        if self.graph is None:
            return
        now = {node_id: list(names) for node_id, names in self.bound.items()}
        made_output = [b for a, b in self.graph.edges if a == 0] if self.graph.nodes[0].kind == "output" else []
        if made_output and name:
            now.setdefault(made_output[0], []).append(name)
        for node_id, names in now.items():
            number = self.numbers.get(node_id)
            if number is not None:
                ever = self._ever_bound.setdefault(number, [])
                ever.extend(n for n in names if n not in ever)
                for n in names:
                    if (number, n) not in self._bound_to and isinstance(self.namespace.get(n), torch.Tensor):
                        self._bound_to[number, n] = weakref.ref(self.namespace[n])
        for node_id, number in self.numbers.items():
            gone = [
                n
                for n in self._ever_bound.get(number, ())
                if n not in now.get(node_id, ()) and not self._still_holds(number, n)
            ]
            if gone:
                self.rebound[node_id] = gone

    def _still_holds(self, number: int, name: str) -> bool:
        """Whether ``name`` still holds the object it held when it was first seen on node ``number``."""
        held = self._bound_to.get((number, name))
        return held is not None and held() is not None and held() is self.namespace.get(name)

    def _moved(self) -> None:
        """After running or rerunning: show the new state."""
        if self._widget is not None:
            self._refresh_widget()

    def step_forward(self) -> bool:
        """Run the next step. Returns False (and does nothing) when all steps have run."""
        if self.position >= len(self._steps):
            return False
        self._advance()
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
            self._advance()
        self._moved()

    # -- what to show ---------------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[tuple[str, str], ...]:
        return tuple((label, statement) for label, statement, _ in self._steps)

    @property
    def changes(self) -> tuple[StepChange, ...]:
        """What each step run so far did to the graph shown (one ``StepChange`` per step, in order)."""
        return tuple(self._changes)

    @property
    def change(self) -> StepChange:
        """What the last step run did to the graph shown (nothing at step 0)."""
        return self._changes[-1] if self._changes else StepChange()

    @property
    def target(self) -> str | None:
        """The variable whose graph is shown now."""
        return self._fixed_target or self._followed

    @property
    def scene(self) -> Scene:
        """The current picture: the graph's ``graph_scene`` with what this step added and made stale marked, nodes
        numbered in the order they were made and labelled with the names bound to them, or a one-line note before
        there is a tensor. Every step's picture has one size, the largest of all steps, with the graph at its bottom
        and the legend at its top, so the picture does not jump from step to step."""
        if self._scene is None:
            self._scene = self._step_scene()
            if self._framed:
                self._scene = _framed(self._scene, self._frame())
        return self._scene

    def _step_scene(self) -> Scene:
        if self.graph is not None:
            change = self.change
            return graph_scene(
                self.graph,
                show_values=self.show_values,
                new_nodes=change.added,
                newly_stale=change.made_stale,
                show_ids=self.numbers,
                bound_names=self.bound,
                rebound_names=self.rebound,
                colour_order=[k for k, v in self.namespace.items() if isinstance(v, torch.Tensor)],  # first bound first
            )
        if self.position == 0:
            return _note_scene("nothing run yet: press Next ▶")
        return _note_scene(f"no tensor to show yet ({self.error or 'run on'})")

    def _frame(self) -> tuple[float, float]:
        """The width and height of the largest step's picture, found once by running every step in a fresh stepper
        (quietly: what the steps print or warn shows only when this stepper runs them)."""
        if self._frame_size is None:
            probe = GraphStepper(self.steps, self._setup_text, self._fixed_target, self.show_values, self._seed)
            probe._framed = False
            sizes = []
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for _ in range(len(self._steps) + 1):
                        sizes.append((probe.scene.width, probe.scene.height))
                        probe.step_forward()
            self._frame_size = (max(w for w, _ in sizes), max(h for _, h in sizes))
        return self._frame_size

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
            kept = [f"{node.name}.{item.attribute}" for node in g.nodes for item in node.kept]
            if kept:
                parts.append(f"kept on ctx (backward() does not free them): {', '.join(kept)}")
            if self.hazards:
                parts.append(
                    "⚠ "
                    + "; ".join(
                        f"{h.node} saved {h.what} at v{h.saved_version}, now v{h.current_version}: backward() raises "
                        "when it reaches it"
                        + (f" if {h.custom_function}.backward reads ctx.saved_tensors" if h.custom_function else "")
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

    def listing_html(self) -> str:
        """The program, Python Tutor style: the line that just ran highlighted (▶), the next one marked (▷), and
        under each line run so far what it added to the graph, made stale or freed, or what it raised."""
        rows = []
        for number, (label, statement, _) in enumerate(self._steps, 1):
            current = number == self.position
            marker = "▶" if current else "▷" if number == self.position + 1 else ""
            background = f"background:{HIGHLIGHT};" if current else ""
            rows.append(
                f"<tr style='{background}'><td style='width:1.2em'>{marker}</td>"
                f"<td style='color:#555555;text-align:right;padding-right:0.6em'>{number}</td>"
                f"<td><code>{html.escape(statement)}</code> <span style='color:#555555'># {html.escape(label)}</span>"
                "</td></tr>"
            )
            change = self._changes[number - 1] if number <= self.position else StepChange()
            notes = [html.escape(change.note)] if change.note else []
            if change.error:
                notes.append(f"<span style='color:#a00000'>✗ raised {html.escape(change.error.split(':')[0])}</span>")
            if notes:
                rows.append(
                    f"<tr style='{background}'><td></td><td></td>"
                    f"<td style='font-size:11px;padding-bottom:2px'>{' · '.join(notes)}</td></tr>"
                )
        return (
            "<table style='border-collapse:collapse;font-family:monospace;font-size:12px;line-height:1.5'>"
            f"{''.join(rows)}</table><div style='color:#555555;font-size:11px'>▶ just ran · ▷ runs next</div>"
        )

    def table_html(self) -> str:
        """The step's error and hazards, and every saved tensor with its node's number (the picture's ``#n``), versions
        and what this step did to it, under a header row, in a box of fixed height that scrolls."""
        out = []
        if self.error:
            out.append(f"<div style='color:#a00000;font-family:monospace'>{html.escape(self.error)}</div>")
        for hazard in self.hazards:
            out.append(f"<div style='color:#a00000'>⚠ {html.escape(hazard.explanation)}</div>")
        if self.graph is None or not any(node.saved for node in self.graph.nodes):
            return "".join(out)
        change = self.change
        padded = "style='padding:0 1.2em 0 0'"
        rows = []
        for node in self.graph.nodes:
            for saved in node.saved:
                key = (node.id, saved.attribute)
                did = (
                    "made stale"
                    if key in change.made_stale
                    else "freed"
                    if key in change.freed
                    else "new"
                    if node.id in change.added
                    else ""
                )
                background = f" style='background:{HIGHLIGHT}'" if did else ""
                number = self.numbers.get(node.id)
                cells = (
                    f"{'' if number is None else f'#{number} '}{node.name}",
                    saved.attribute,
                    "" if saved.shape is None else tuple_text(saved.shape),
                    "" if saved.saved_version is None else f"v{saved.saved_version}",
                    "" if saved.current_version is None else f"v{saved.current_version}",
                    "⚠ stale" if saved.state == "stale" else saved.state,
                    did,
                )
                rows.append(
                    f"<tr{background}>" + "".join(f"<td {padded}>{html.escape(c)}</td>" for c in cells) + "</tr>"
                )
        sticky = "style='position:sticky;top:0;background:#ffffff;text-align:left;padding:0 1.2em 0 0'"
        header = "".join(
            f"<th {sticky}>{name}</th>" for name in ("node", "saved", "shape", "saved at", "now", "state", "this step")
        )
        out.append(
            f"<div style='max-height:{TABLE_HEIGHT};overflow-y:auto;display:inline-block;margin-top:4px'>"
            "<table style='border-collapse:collapse;font-family:monospace;font-size:12px;line-height:1.4'>"
            f"<tr>{header}</tr>{''.join(rows)}</table></div>"
        )
        return "".join(out)

    def _build(self, widgets):
        """Back / Next and the step; the listing beside the picture; the saved-tensor table below them."""
        self.back_button = widgets.Button(description="◀ Back", tooltip="rerun from scratch up to the previous step")
        self.next_button = widgets.Button(description="Next ▶", tooltip="run the next step")
        self.step_text = widgets.HTML()
        # The listing has a fixed width and the picture sits beside it at the top: neither the listing's notes
        # nor the table below ever move the picture.
        self.listing = widgets.HTML(
            layout=widgets.Layout(flex="0 0 auto", width="34em", max_width="50%", overflow="auto")
        )
        self.picture_view = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.info = widgets.HTML()
        self.back_button.on_click(lambda _: self.step_back())
        self.next_button.on_click(lambda _: self.step_forward())
        self._refresh_widget()
        return widgets.VBox(
            [
                widgets.HBox([self.back_button, self.next_button, self.step_text]),
                widgets.HBox(
                    [self.listing, self.picture_view],
                    layout=widgets.Layout(flex_flow="row nowrap", align_items="flex-start", grid_gap="16px"),
                ),
                self.info,
            ]
        )

    def _refresh_widget(self) -> None:
        """Show the current state in the widgets."""
        self.back_button.disabled = self.position == 0
        self.next_button.disabled = self.position >= len(self._steps)
        label = "setup" if self.position == 0 else self._steps[self.position - 1][0]
        self.step_text.value = (
            f"<span style='font-family:monospace'><b>Step {self.position}/{len(self._steps)}</b> "
            f"{html.escape(label)}</span>"
        )
        self.listing.value = self.listing_html()
        self.picture_view.value = self.svg_html()
        self.info.value = self.table_html()
