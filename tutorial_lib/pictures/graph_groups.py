"""Groups of backward-graph nodes, as plain data: which ``nn.Module`` made each node, and repeated blocks.

A graph of a few hundred nodes is unreadable drawn node by node; these groupings let a picture draw one
box per module call or per repetition of a block. Nothing here draws.

* ``module_membership`` says which module created each node. Parameter leaves are matched to the module
  that owns them; the nodes that consume a parameter directly (``AddmmBackward0`` and the ``TBackward0``
  of ``weight.t()`` in ``nn.Linear``) belong to that module; every other node belongs to the module that
  encloses the parameter consumer created just before it (autograd numbers nodes in creation order, and
  a module's forward runs as one stretch of that order).
* ``collapse_repeats`` finds consecutive repetitions of one block (residual blocks, an unrolled loop)
  along the graph's dominator tree: the nodes every gradient path passes through cut the graph into
  segments, and runs of segments with the same structure are the repeats.
* ``collapse_by_module`` / ``collapse_repeats`` / ``uncollapsed`` all return a ``CollapsedGraph``: the
  items to draw (nodes left alone, and groups) and the edges between them.
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

import torch

from ..common.checks import require_int, require_positive_int, require_tensor, require_type
from ..common.text import plural
from ..facts.graph import Graph, autograd_graph, grad_fn_of

#: ``collapse_repeats`` looks for blocks of at most this many consecutive segments.
MAX_PERIOD = 24
#: A repeated block smaller than this is collapsed as one run (``MulBackward0 ×100``), not per repetition.
MIN_BLOCK_NODES = 3


@dataclass(frozen=True)
class NodeGroup:
    """Nodes of a ``Graph`` drawn as one box.

    ``id`` is the group's item id in its ``CollapsedGraph`` (graph node ids are ``0 … len(nodes)-1``,
    groups come after); ``kind`` is ``"module"`` or ``"repeat"``; ``members`` are graph node ids.
    """

    id: int
    kind: str
    label: str  # "blocks.3", "repeat 2 of 12", "repeated block ×12", "MulBackward0 ×100"
    members: tuple[int, ...]
    counts: tuple[tuple[str, int], ...] = ()  # node names (leaves as "leaves") in one repetition, most first
    repetitions: int = 1  # >1 for a whole run of a repeated block in one group
    module_type: str = ""  # the module's class name for "module" groups


@dataclass(frozen=True)
class CollapsedGraph:
    """A ``Graph`` with some nodes grouped: ``items`` (node ids left alone, then group ids) and the edges
    between items (duplicates counted in ``edge_counts``; edges inside a group dropped).
    """

    graph: Graph
    how: str  # "none", "module" or "repeats"
    groups: tuple[NodeGroup, ...]
    items: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    edge_counts: tuple[int, ...]
    _group_of: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def root(self) -> int:
        return self.item_of(self.graph.root)

    @property
    def collapsed_nodes(self) -> int:
        """How many graph nodes are inside groups."""
        return sum(len(g.members) for g in self.groups)

    def is_group(self, item: int) -> bool:
        return item >= len(self.graph.nodes)

    def group(self, item: int) -> NodeGroup:
        return self.groups[item - len(self.graph.nodes)]

    def group_of(self, node_id: int) -> NodeGroup | None:
        """The group holding graph node ``node_id``, or None when it is drawn on its own."""
        index = self._group_of.get(node_id)
        return None if index is None else self.groups[index]

    def item_of(self, node_id: int) -> int:
        """The item that shows graph node ``node_id`` (itself, or its group)."""
        index = self._group_of.get(node_id)
        return node_id if index is None else self.groups[index].id

    def members(self, item: int) -> tuple[int, ...]:
        return self.group(item).members if self.is_group(item) else (item,)

    def capped(self, max_items: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The ``max_items`` items nearest the root (breadth first), and those of them with children left out.

        Raises:
            TypeError, ValueError: ``max_items`` is not an int >= 1.
        """
        require_positive_int(max_items, "max_items")
        if len(self.items) <= max_items:
            return self.items, ()
        children: dict[int, list[int]] = {}
        for a, b in self.edges:
            children.setdefault(a, []).append(b)
        kept = {self.root: None}
        queue = [self.root]
        for v in queue:
            for c in children.get(v, ()):
                if c not in kept and len(kept) < max_items:
                    kept[c] = None
                    queue.append(c)
        for item in self.items:  # anything unreachable from the root (never in an autograd graph)
            if len(kept) < max_items:
                kept.setdefault(item, None)
        cut = tuple(a for a in kept if any(c not in kept for c in children.get(a, ())))
        return tuple(i for i in self.items if i in kept), cut

    def restricted(self, items) -> CollapsedGraph:
        """The same grouping with only ``items`` drawn: the edges between two of them are kept, the others dropped."""
        keep = set(items)
        pairs = [(e, c) for e, c in zip(self.edges, self.edge_counts) if e[0] in keep and e[1] in keep]
        edges, counts = tuple(e for e, _ in pairs), tuple(c for _, c in pairs)
        return CollapsedGraph(self.graph, self.how, self.groups, tuple(items), edges, counts, self._group_of)

    def describe(self) -> str:
        """One line saying what was collapsed, e.g. ``collapsed 240 nodes into 12 groups by module: …``."""
        if not self.groups:
            return "nothing collapsed"
        how = {"module": "by module", "repeats": "of repeated blocks"}.get(self.how, "")
        names = ", ".join(f"{g.label} ({len(g.members)})" for g in self.groups[:3])
        more = f", … {len(self.groups) - 3} more" if len(self.groups) > 3 else ""
        return f"collapsed {self.collapsed_nodes} nodes into {plural(len(self.groups), 'group')} {how}: {names}{more}"


def _children(graph: Graph) -> list[list[int]]:
    """Distinct children of every node, in edge order."""
    children: list[list[int]] = [[] for _ in graph.nodes]
    for a, b in graph.edges:
        if b not in children[a]:
            children[a].append(b)
    return children


def _parents(graph: Graph) -> list[list[int]]:
    parents: list[list[int]] = [[] for _ in graph.nodes]
    for a, b in graph.edges:
        if a not in parents[b]:
            parents[b].append(a)
    return parents


def _build(graph: Graph, how: str, groups: list[dict]) -> CollapsedGraph:
    """A CollapsedGraph from groups given as NodeGroup fields (all but id), in the order given."""
    n = len(graph.nodes)
    made = []
    group_of: dict[int, int] = {}
    for index, fields in enumerate(groups):
        members = tuple(sorted(fields.pop("members")))
        made.append(NodeGroup(n + index, members=members, **fields))
        for m in members:
            group_of[m] = index
    # Items in the order a reader meets them: by their first member's id (node ids are BFS order).
    firsts = {}
    for node in graph.nodes:
        item = node.id if node.id not in group_of else n + group_of[node.id]
        firsts.setdefault(item, node.id)
    items = tuple(sorted(firsts, key=firsts.get))
    counts: dict[tuple[int, int], int] = {}
    for a, b in graph.edges:
        ia = a if a not in group_of else n + group_of[a]
        ib = b if b not in group_of else n + group_of[b]
        if ia != ib:
            counts[(ia, ib)] = counts.get((ia, ib), 0) + 1
    return CollapsedGraph(graph, how, tuple(made), items, tuple(counts), tuple(counts.values()), group_of)


def uncollapsed(graph: Graph) -> CollapsedGraph:
    """The graph as a ``CollapsedGraph`` with no groups: every node is its own item.

    Args:
        graph: a ``Graph`` from ``autograd_graph``.

    Returns:
        A ``CollapsedGraph`` with ``how == "none"``.
    """
    _require_graph(graph)
    return _build(graph, "none", [])


def _require_graph(graph) -> Graph:
    require_type(graph, Graph, "graph", "a tutorial_lib Graph (from autograd_graph)")
    return graph


# ----------------------------------------------------------------------------------------------------
# Module membership


def aligned_fns(tensor: torch.Tensor, graph: Graph) -> list:
    """The autograd node object behind every graph node (None for the output), walked as autograd_graph does."""
    fns: list = [None]
    root = grad_fn_of(tensor)[0]
    if root is None or len(graph.nodes) == 1:
        return fns
    index = {id(root): 1}
    order = [root]
    queue = deque([root])
    want = len(graph.nodes) - 1
    while queue and len(order) < want:
        fn = queue.popleft()
        for next_fn, _ in fn.next_functions:
            if next_fn is not None and id(next_fn) not in index:
                index[id(next_fn)] = len(order) + 1
                order.append(next_fn)
                queue.append(next_fn)
    fns.extend(order[:want])
    for node, fn in zip(graph.nodes[1:], fns[1:]):
        name = "AccumulateGrad" if fn.name().endswith("AccumulateGrad") else fn.name()
        if name != node.name:
            raise ValueError("graph is not the backward graph of t (the nodes differ); pass graph=None")
    if len(fns) != len(graph.nodes):
        raise ValueError("graph is not the backward graph of t (the node counts differ); pass graph=None")
    return fns


def _common_prefix(paths) -> str:
    split = [p.split(".") if p else [] for p in paths]
    common = []
    for parts in zip(*split):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ".".join(common)


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def module_membership(t, model, graph: Graph | None = None) -> dict[int, str | None]:
    """Which module of ``model`` created each node of ``t``'s backward graph.

    Args:
        t: the tensor whose graph it is (``loss`` or ``model(x)``): its autograd nodes carry the creation
            order that places nodes without parameters.
        model: the ``torch.nn.Module`` that computed ``t``.
        graph: ``autograd_graph(t, ...)`` if already built (its node ids are the keys), else built here.

    Returns:
        A dict from graph node id to a qualified module name (``"blocks.3.fc1"`` for a parameter and its
        direct consumers, ``"blocks.3"`` for a ReLU in ``blocks.3``'s forward; ``""`` for nodes made by
        ``model`` itself or outside it), or None for leaves that are not parameters of ``model`` (inputs).

    Raises:
        TypeError: ``t`` is not a tensor, ``model`` not a module, ``graph`` not a Graph.
        ValueError: ``graph`` is not ``t``'s graph.
    """
    tensor = require_tensor(t, "t")
    require_type(model, torch.nn.Module, "model", "a torch.nn.Module")
    graph = autograd_graph(tensor) if graph is None else _require_graph(graph)
    fns = aligned_fns(tensor, graph)
    owner = {id(p): _parent(name) for name, p in model.named_parameters()}
    children = _children(graph)
    membership: dict[int, str | None] = {}
    leaf_module: dict[int, str] = {}  # parameter leaves
    chain_module: dict[int, str] = {}  # backward nodes that only transform one parameter (weight.t())
    anchors: list[tuple[int, str]] = []  # (sequence number, module) of nodes that consume parameters
    # Children first: a node's module follows from its children's (a parameter leaf, weight.t()).
    for v in TopologicalSorter(dict(enumerate(children))).static_order():
        node = graph.nodes[v]
        if node.kind == "leaf":
            variable = getattr(fns[v], "variable", None) if fns[v] is not None else None
            module = owner.get(id(variable)) if variable is not None else None
            membership[v] = module
            if module is not None:
                leaf_module[v] = module
            continue
        if node.kind != "backward":
            continue
        param_kids = [leaf_module.get(c, chain_module.get(c)) for c in children[v]]
        param_kids = [m for m in param_kids if m is not None]
        if len(children[v]) == 1 and len(param_kids) == 1:
            chain_module[v] = param_kids[0]
        if param_kids:
            membership[v] = _common_prefix(param_kids)
            anchors.append((fns[v]._sequence_nr(), membership[v]))
    anchors.sort()
    sequence = [s for s, _ in anchors]
    for node in graph.nodes:
        if node.id in membership:
            continue
        if node.kind != "backward" or not anchors:
            membership[node.id] = ""
            continue
        # A node made between two parameter consumers belongs to the module around the earlier one
        # (the ReLU after fc1, the residual add after fc2); before the first, to the one around the next.
        position = bisect.bisect_left(sequence, fns[node.id]._sequence_nr())
        anchor = anchors[position - 1][1] if position > 0 else anchors[0][1]
        membership[node.id] = _parent(anchor)
    return membership


def _is_stack(module: torch.nn.Module) -> bool:
    """A container that only holds its children: ModuleList/Dict, or a Sequential of same-type blocks."""
    if isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
        return True
    if isinstance(module, torch.nn.Sequential):
        kinds = {type(child) for child in module.children()}
        return len(module) >= 2 and len(kinds) == 1
    return False


def _group_key(path: str | None, modules: dict[str, torch.nn.Module], depth: int | None) -> str | None:
    """The module a node is collapsed into: the outermost non-container module below the root."""
    if not path:
        return None
    parts = path.split(".")
    if depth is not None:
        return ".".join(parts[:depth])
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        if not _is_stack(modules[prefix]):
            return prefix
    return path


def _counts(graph: Graph, members) -> tuple[tuple[str, int], ...]:
    """How many nodes of each name ``members`` holds (leaves counted as ``"leaves"``), most first."""
    counts = Counter("leaves" if graph.nodes[m].kind == "leaf" else graph.nodes[m].name for m in members)
    return tuple(sorted(counts.items(), key=lambda kc: (-kc[1], kc[0])))


def count_text(counts) -> str:
    """``"4 leaves, 2 AddmmBackward0, ReluBackward0"`` from ``NodeGroup.counts``."""
    return ", ".join(f"{k}" if c == 1 and k != "leaves" else f"{c} {k}" for k, c in counts)


def collapse_by_module(t, model, graph: Graph | None = None, depth: int | None = None) -> CollapsedGraph:
    """Group the nodes of ``t``'s backward graph by the module of ``model`` that made them.

    Args:
        t: the tensor whose graph it is.
        model: the ``torch.nn.Module`` that computed ``t``.
        graph: ``autograd_graph(t, ...)`` if already built, else built here (leaves named by parameter).
        depth: group by the first ``depth`` parts of the module name; None picks the outermost modules
            that are not mere containers (``blocks.3`` in a ``ModuleList`` called ``blocks``).

    Returns:
        A ``CollapsedGraph`` with one ``"module"`` group per module holding at least 2 nodes; nodes made at
        the top level and input leaves stay on their own.

    Raises:
        TypeError: bad ``t``, ``model``, ``graph`` or ``depth`` type.
        ValueError: ``depth`` < 1 or ``graph`` not ``t``'s graph.
    """
    tensor = require_tensor(t, "t")
    require_type(model, torch.nn.Module, "model", "a torch.nn.Module")
    if depth is not None:
        depth = require_int(depth, "depth", 1)
    if graph is None:
        graph = autograd_graph(tensor, names=dict(model.named_parameters()))
    membership = module_membership(tensor, model, graph)
    modules = dict(model.named_modules())
    members: dict[str, list[int]] = {}
    for node in graph.nodes:
        key = _group_key(membership.get(node.id), modules, depth)
        if key is not None:
            members.setdefault(key, []).append(node.id)
    groups = []
    for key, ids in members.items():
        if len(ids) < 2:
            continue
        kind = type(modules[key]).__name__ if key in modules else "module"
        counts = _counts(graph, ids)
        groups.append(dict(kind="module", label=key, counts=counts, module_type=kind, members=ids))
    return _build(graph, "module", groups)


# ----------------------------------------------------------------------------------------------------
# Repeated blocks


def immediate_dominators(graph: Graph) -> list[int | None]:
    """For every node, the nearest node that every path from the root to it passes through.

    Args:
        graph: a ``Graph``.

    Returns:
        A list indexed by node id: the immediate dominator's id (the root's own entry is the root; nodes
        not reachable from the root get None).
    """
    _require_graph(graph)
    # Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001).
    children = _children(graph)
    parents = _parents(graph)
    root = graph.root
    order, seen, stack = [], {root}, [(root, iter(children[root]))]
    while stack:  # iterative DFS postorder
        v, it = stack[-1]
        for c in it:
            if c not in seen:
                seen.add(c)
                stack.append((c, iter(children[c])))
                break
        else:
            stack.pop()
            order.append(v)
    post = {v: i for i, v in enumerate(order)}
    idom: list[int | None] = [None] * len(graph.nodes)
    idom[root] = root

    def intersect(a: int, b: int) -> int:
        while a != b:
            while post[a] < post[b]:
                a = idom[a]
            while post[b] < post[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for v in reversed(order):
            if v == root:
                continue
            new = None
            for p in parents[v]:
                if idom[p] is not None and p in post:
                    new = p if new is None else intersect(p, new)
            if new is not None and idom[v] != new:
                idom[v] = new
                changed = True
    return idom


def _signature(graph: Graph, members: set[int], head: int, children: list[list[int]]):
    """The structure of a segment, independent of node ids: equal for two repetitions of one block."""
    parts = []
    for m in members:
        node = graph.nodes[m]
        inside = tuple(sorted(graph.nodes[c].name for c in children[m] if c in members))
        outside = sum(1 for c in children[m] if c not in members)
        shape = node.shape if node.kind == "leaf" else None
        parts.append((node.name, shape, m == head, inside, outside))
    return tuple(sorted(parts, key=repr))


def _best_run(signatures: list, start: int) -> tuple[int, int]:
    """(period, repetitions) of the longest run of a repeated block starting at ``start``; reps < 2 if none."""
    best = (1, 1)
    remaining = len(signatures) - start
    for period in range(1, min(MAX_PERIOD, remaining // 2) + 1):
        block = signatures[start : start + period]
        reps = 1
        while signatures[start + reps * period : start + (reps + 1) * period] == block:
            reps += 1
        if reps >= 2 and period * reps > best[0] * best[1]:
            best = (period, reps)
    return best


def collapse_repeats(graph: Graph, merge_runs: bool = False) -> CollapsedGraph:
    """Group consecutive repetitions of the same block of nodes (residual blocks, unrolled loops).

    The dominator tree's heaviest path (the chain of nodes every gradient passes through: the residual
    adds, the ops of an unrolled loop) cuts the graph into segments; runs of two or more consecutive
    segments with the same structure are repeats. A node with a parent outside its segment (a weight
    shared by every repetition) stays on its own, so groups never form a cycle.

    Args:
        graph: a ``Graph``.
        merge_runs: put a whole run in one group (``repeated block ×12``) instead of one group per repetition.
            Blocks smaller than ``MIN_BLOCK_NODES`` nodes are always merged (``MulBackward0 ×100``).

    Returns:
        A ``CollapsedGraph`` with ``"repeat"`` groups.

    Raises:
        TypeError: ``graph`` is not a Graph or ``merge_runs`` not a bool.
    """
    _require_graph(graph)
    require_type(merge_runs, bool, "merge_runs", "True or False")
    idom = immediate_dominators(graph)
    children = _children(graph)
    parents = _parents(graph)
    tree: list[list[int]] = [[] for _ in graph.nodes]
    for v, d in enumerate(idom):
        if d is not None and v != d:
            tree[d].append(v)
    size = [1] * len(graph.nodes)
    for v in _topological_children_first_tree(tree, graph.root):
        size[v] += sum(size[c] for c in tree[v])

    def subtree(v: int) -> list[int]:
        out, stack = [], [v]
        while stack:
            u = stack.pop()
            out.append(u)
            stack.extend(tree[u])
        return out

    groups: list[tuple[str, str, str, list[int]]] = []
    pending = [graph.root]
    while pending:
        start = pending.pop(0)
        path = [start]
        while tree[path[-1]]:
            path.append(max(tree[path[-1]], key=lambda c: (size[c], -c)))
        segments = []
        for i, head in enumerate(path):
            members = {head}
            for c in tree[head]:
                if i + 1 < len(path) and c == path[i + 1]:
                    continue
                members.update(subtree(c))
            changed = True
            while changed:  # members whose parent is elsewhere would make groups point back up
                changed = False
                for m in list(members):
                    if m != head and any(p not in members for p in parents[m]):
                        members.discard(m)
                        changed = True
            segments.append(members)
        signatures = [_signature(graph, s, h, children) for s, h in zip(segments, path)]
        i = 0
        while i < len(path):
            period, reps = _best_run(signatures, i)
            if reps < 2:
                for c in tree[path[i]]:  # look for repeats inside this segment's branches
                    if (i + 1 >= len(path) or c != path[i + 1]) and size[c] >= 2 * MIN_BLOCK_NODES:
                        pending.append(c)
                i += 1
                continue
            blocks = [set().union(*segments[i + r * period : i + (r + 1) * period]) for r in range(reps)]
            per_block = len(blocks[0])
            if merge_runs or per_block < MIN_BLOCK_NODES:
                everything = sorted(set().union(*blocks))
                if per_block < MIN_BLOCK_NODES:  # a chain of small ops reads best by name: "Mul → Sin ×100"
                    label = " → ".join(graph.nodes[m].name for m in sorted(blocks[0])) + f" ×{reps}"
                else:
                    label = f"repeated block ×{reps}"
                counts = _counts(graph, blocks[0])
                groups.append(dict(kind="repeat", label=label, counts=counts, repetitions=reps, members=everything))
            else:
                for r, block in enumerate(blocks):
                    counts = _counts(graph, block)
                    label = f"repeat {r + 1} of {reps}"
                    groups.append(dict(kind="repeat", label=label, counts=counts, members=sorted(block)))
            i += period * reps
    return _build(graph, "repeats", groups)


def _topological_children_first_tree(tree: list[list[int]], root: int) -> list[int]:
    order, stack = [], [root]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(tree[v])
    return order[::-1]
