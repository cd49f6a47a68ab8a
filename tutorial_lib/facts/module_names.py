"""Which ``nn.Module`` did it: a module's path in the user's model, the line that built it, and parameter names.

``watch_inplace`` sees aten ops. When an in-place write runs inside one of torch's own modules
(``nn.ReLU(inplace=True)``, ``nn.Dropout(p, inplace=True)`` in an ``nn.Sequential``), the op alone says
``relu_`` or ``mul_`` at the line that called the model, which is not what the user wrote. The Python stack at
the write says which module ran it: every module call goes through ``Module._call_impl``, whose ``self`` is
that module. This module turns that stack into words a user recognises:

* ``module_chain(frame)``: the modules being called at a frame, innermost first, and the name the outermost
  one has where the user's code called it (``classifier``, ``self.critic``);
* ``module_path(chain, root_name)``: ``classifier.main[2]``;
* ``find_build_site(...)``: the line that built that module (``nn.Dropout(0.5, inplace=True)``), read from the
  source with ``ast`` (the class's ``__init__``, or the assignment of the root in the calling file);
* ``parameter_names(frames)``: ``critic.fc2.weight`` for each parameter storage reachable from the user's
  variables at a frame (used when an explanation names a saved tensor that is a parameter).

Nothing here is on the hot path of a watched program except ``module_chain``, which runs only for writes made
inside a module's ``forward``.
"""

from __future__ import annotations

import ast
import inspect
import io
import linecache
import os
import re
import tokenize
import weakref
from dataclasses import dataclass

import torch

from ..common.checks import require_type
from .watching import storage_key

_CALL_IMPL = torch.nn.Module._call_impl.__code__
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


@dataclass(frozen=True)
class BuildSite:
    """Where a module was built: the file, the line of its constructor call, and that call's source text."""

    filename: str
    lineno: int
    call: str  # "nn.Dropout(0.5, inplace=True)" as written (one line: the line holding the call's start)
    line_text: str  # the whole physical line, stripped


def module_chain(frame, limit: int = 64) -> tuple[list, str | None]:
    """The modules whose ``forward`` is running at ``frame``, innermost first, and the outermost one's name.

    Args:
        frame: a Python frame (``sys._getframe()``), e.g. where an in-place op was dispatched.
        limit: look at most this many frames up.

    Returns:
        ``(modules, root_name)``: the modules, innermost first (empty when no module is running), and the
        name the outermost module has in the frame that called it (``"model"``, ``"self.critic"``), or None.
    """
    modules = []
    caller = None
    depth = 0
    while frame is not None and depth < limit:
        if frame.f_code is _CALL_IMPL:
            module = frame.f_locals.get("self")
            if isinstance(module, torch.nn.Module):
                modules.append(module)
                caller = frame.f_back
        frame = frame.f_back
        depth += 1
    # torch.compile's wrapper (OptimizedModule) runs the model it wraps: name that model, not the wrapper
    wrappers = [m for m in modules if hasattr(m, "_orig_mod") and type(m).__name__ == "OptimizedModule"]
    modules = [m for m in modules if not any(m is w for w in wrappers)]
    if not modules:
        return [], None
    # The frame that called the outermost module: skip _wrapped_call_impl (and compiled-module wrappers).
    while caller is not None and os.path.abspath(caller.f_code.co_filename).startswith(_TORCH_DIR):
        caller = caller.f_back
    if caller is None:
        return modules, None
    root = modules[-1]
    key = (id(root), caller.f_code, caller.f_lineno)
    cached = _ROOT_NAMES.get(key)
    if cached is None or cached[0]() is not root:  # a training loop calls the model from one line, many times
        name = _name_in_frame(root, caller)
        for wrapper in wrappers if name is None else ():
            wrapper_name = _name_in_frame(wrapper, caller)
            if wrapper_name is not None and wrapper._orig_mod is root:
                name = f"{wrapper_name}._orig_mod"
        cached = _ROOT_NAMES[key] = (weakref.ref(root), name)
    return modules, cached[1]


_ROOT_NAMES: dict = {}  # (id(root module), calling code, line) -> (weak reference to the module, its name)


def _name_in_frame(module, frame) -> str | None:
    """The variable (or ``self.attribute``) that holds ``module`` in ``frame``, or None."""
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in scope.items():
            if value is module and not name.startswith("__"):
                return name
    owner = frame.f_locals.get("self")
    if owner is not None and not isinstance(owner, torch.nn.Module):  # an agent or trainer object
        for name, value in vars(owner).items() if hasattr(owner, "__dict__") else ():
            if value is module:
                return f"self.{name}"
    return None


def child_names(modules) -> list[str] | None:
    """The attribute names leading from the outermost module to the innermost (``["main", "2"]``), or None."""
    names = []
    for child, parent in zip(modules[:-1], modules[1:]):
        found = next((name for name, value in parent._modules.items() if value is child), None)
        if found is None:
            return None
        names.append(found)
    return list(reversed(names))


def module_path(root_name: str | None, names) -> str:
    """``classifier.main[2]`` from the root's name and the child names (numbers as indices).

    Raises:
        TypeError: ``names`` is not a list or tuple.
    """
    require_type(names, (list, tuple), "names", "a list of str")
    text = root_name or "the model"
    for name in names:
        text += f"[{name}]" if name.isdigit() else f".{name}"
    return text


def module_summary(module) -> str:
    """``Dropout(p=0.5, inplace=True)``: the class name and its ``extra_repr``, without the children."""
    try:
        extra = module.extra_repr()
    except Exception:  # noqa: BLE001 - a user's extra_repr may fail; the class name still helps
        extra = ""
    return f"{type(module).__name__}({extra})"


def weak_chain(modules) -> tuple:
    """Weak references to the modules (the watcher must keep no model alive)."""
    return tuple(weakref.ref(module) for module in modules)


def alive(references) -> list | None:
    """The modules behind ``weak_chain``'s references, or None when any is gone."""
    modules = [reference() for reference in references]
    return None if any(module is None for module in modules) else modules


# ----------------------------------------------------------------------------------------------------
# The line that built a module


_PARSED: dict = {}


def parse_source(filename: str):
    """The file's AST (cached by its text), read through ``linecache`` (so IPython cells work); None if unparsable."""
    text = "".join(linecache.getlines(filename))
    if not text:
        return None
    cached = _PARSED.get(filename)
    if cached is not None and cached[0] == text:
        return cached[1]
    try:
        tree = ast.parse(text, filename)
    except SyntaxError:
        tree = None
    _PARSED[filename] = (text, tree)
    return tree


def _called_name(node) -> str | None:
    """``Dropout`` for ``nn.Dropout(...)`` or ``Dropout(...)``; None when the node is not such a call."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _descend(node, names: list[str], scope):
    """The expression building the module reached by ``names`` inside the expression ``node`` (None if not found).

    Follows ``nn.Sequential(a, b, c)[1]``, ``nn.ModuleList([a, b])[0]``, ``nn.ModuleDict({"x": a})["x"]`` and
    local names assigned earlier in ``scope`` (the function the expression is in).
    """
    for name in names:
        node = _resolve_name(node, scope)
        called = _called_name(node)
        if called is None:
            return None
        arguments = list(node.args)
        if called in ("ModuleList", "ParameterList") and arguments and isinstance(arguments[0], (ast.List, ast.Tuple)):
            arguments = list(arguments[0].elts)
        if called in ("ModuleDict",) and arguments and isinstance(arguments[0], ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in arguments[0].keys]
            if name not in keys:
                return None
            node = arguments[0].values[keys.index(name)]
            continue
        if not name.isdigit() or int(name) >= len(arguments) or any(isinstance(a, ast.Starred) for a in arguments):
            return None
        node = arguments[int(name)]
    return _resolve_name(node, scope)


def _resolve_name(node, scope):
    """A local name's last plain assignment in ``scope`` (before use), else the node itself."""
    if not isinstance(node, ast.Name) or scope is None:
        return node
    value = None
    for statement in ast.walk(scope):
        if isinstance(statement, ast.Assign) and statement.lineno < node.lineno:
            if any(isinstance(t, ast.Name) and t.id == node.id for t in statement.targets):
                value = statement.value
    return value if value is not None else node


def _assignments(tree, target_text: str):
    """(value, enclosing function or the module) of every ``target_text = value`` assignment in ``tree``."""
    found = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
            if isinstance(child, (ast.Assign, ast.AnnAssign)) and child.value is not None:
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                if any(ast.unparse(t) == target_text for t in targets):
                    found.append((child.value, scope))
            visit(child, inner)

    visit(tree, tree)
    return found


def _site(filename: str, node, module) -> BuildSite | None:
    """A ``BuildSite`` for the constructor call ``node`` when it builds a module of ``module``'s class."""
    if _called_name(node) != type(module).__name__:
        return None
    segment = ast.get_source_segment("".join(linecache.getlines(filename)), node) or ""
    first_line = segment.splitlines()[0] if segment else ""
    return BuildSite(filename, node.lineno, first_line, code_of_line(filename, node.lineno))


def code_of_line(filename: str, lineno: int) -> str:
    """The line's code without its comment and surrounding whitespace (read through ``linecache``)."""
    line = linecache.getline(filename, lineno)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):  # a line inside a bracket: read it as it is
        tokens = []
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    if comment is None and "#" in line and not tokens:
        quoted = re.sub(r"(['\"]).*?\1", lambda m: "_" * len(m.group(0)), line)
        cut = quoted.find("#")
        return (line[:cut] if cut >= 0 else line).strip()
    return (line[: comment.start[1]] if comment is not None else line).strip()


def find_build_site(modules, root_name: str | None, caller_file: str | None) -> BuildSite | None:
    """The line that built the innermost of ``modules`` (innermost first, as ``module_chain`` gives them).

    Looks in the ``__init__`` (any method) of the nearest enclosing module whose class the user wrote, for
    ``self.<name> = ...``; else, for a model built in the user's script, for ``<root_name> = ...`` in
    ``caller_file``; then follows the child names through ``nn.Sequential(...)``/``nn.ModuleList([...])``.

    Args:
        modules: the running modules, innermost first.
        root_name: the outermost module's name where it was called (``module_chain``'s second value).
        caller_file: the file of the line that called the outermost module.

    Returns:
        A ``BuildSite``, or None when the source does not show it plainly (built in a loop, a comprehension,
        a helper function, or in torch's own code).
    """
    names = child_names(modules)
    if names is None:
        return None
    for index in range(1, len(modules)):
        owner = modules[index]
        if type(owner).__module__.startswith("torch."):
            continue
        try:
            filename = inspect.getsourcefile(type(owner))
            _, first_line = inspect.getsourcelines(type(owner))
        except (OSError, TypeError):
            return None
        tree = parse_source(filename) if filename else None
        if tree is None:
            return None
        below = names[len(modules) - 1 - index :]  # the names from this owner down to the module
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == type(owner).__name__ and node.lineno <= first_line + 50:
                for value, scope in _assignments(node, f"self.{below[0]}"):
                    site = _site(filename, _descend(value, below[1:], scope), modules[0])
                    if site is not None:
                        return site
        return None
    if root_name is None or caller_file is None:
        return None
    tree = parse_source(caller_file)
    if tree is None:
        return None
    for value, scope in reversed(_assignments(tree, root_name)):
        site = _site(caller_file, _descend(value, names, scope), modules[0])
        if site is not None:
            return site
    return None


# ----------------------------------------------------------------------------------------------------
# Parameter names


def parameter_names(frames) -> dict:
    """``{storage key: "critic.fc2.weight"}`` for the parameters and buffers of the modules the frames can reach.

    Looks at each frame's local and global variables, and one attribute level below objects that are not
    modules (an agent's ``self.critic``). Frames are taken in the order given; the first name found for a
    storage is kept, so pass the outermost (the script's top level) first for the shortest names.

    Raises:
        TypeError: ``frames`` is not a list.
    """
    require_type(frames, list, "frames", "a list of frames")
    names: dict = {}
    seen: set[int] = set()

    def add(prefix: str, module) -> None:
        if id(module) in seen:
            return
        seen.add(id(module))
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            key = storage_key(tensor)
            if key is not None and key not in names:
                names[key] = module_path(prefix, name.split(".")[:-1]) + "." + name.split(".")[-1]

    for frame in frames:
        scopes = [frame.f_locals] + ([frame.f_globals] if frame.f_globals is not frame.f_locals else [])
        for scope in scopes:
            for name, value in list(scope.items()):
                if name.startswith("__"):
                    continue
                if isinstance(value, torch.nn.Module):
                    add(name, value)
                elif name == "self" and hasattr(value, "__dict__"):
                    for attribute, inner in list(vars(value).items()):
                        if isinstance(inner, torch.nn.Module):
                            add(f"self.{attribute}", inner)
    return names


__all__ = [
    "BuildSite",
    "alive",
    "child_names",
    "code_of_line",
    "find_build_site",
    "module_chain",
    "module_path",
    "module_summary",
    "parameter_names",
    "parse_source",
    "weak_chain",
]
