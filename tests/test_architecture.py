"""The library's shape, checked rather than hoped for: no module reaches into another's private names, importing
the library draws in no drawing or notebook machinery, and every library module has a test module named after it.

The layer contracts (which package may import which) are import-linter's job, in ``make lint``.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "tutorial_lib"
TESTS = ROOT / "tests"


def module_name(path):
    """``tutorial_lib/facts/ops.py`` -> ``tutorial_lib.facts.ops``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


PACKAGES = {module_name(path.parent) for path in LIBRARY.rglob("__init__.py")}


def library_modules():
    """``{module name: parsed source}`` for every ``.py`` file under ``tutorial_lib/``."""
    return {module_name(path): ast.parse(path.read_text(), str(path)) for path in sorted(LIBRARY.rglob("*.py"))}


def is_private(name):
    """``_name``, but not ``__dunder__`` and not an IPython display hook such as ``_repr_html_``."""
    return name.startswith("_") and not name.startswith("__") and not name.endswith("_")


def imported_module(module, node):
    """The absolute name of the module an ``ImportFrom`` in ``module`` imports from."""
    if node.level == 0:
        return node.module
    package = module.split(".") if module in PACKAGES else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


# --- no reach-ins ----------------------------------------------------------------------------------------------


def private_imports(modules):
    """``module:line imports _name from other`` for every private name one library module imports from another."""
    found = []
    for module, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = imported_module(module, node)
                if source and source.split(".")[0] == "tutorial_lib":
                    found += [
                        f"{module}:{node.lineno} imports {alias.name} from {source}"
                        for alias in node.names
                        if is_private(alias.name) or any(is_private(part) for part in source.split("."))
                    ]
            elif isinstance(node, ast.Import):
                found += [
                    f"{module}:{node.lineno} imports {alias.name}"
                    for alias in node.names
                    if alias.name.split(".")[0] == "tutorial_lib" and any(map(is_private, alias.name.split(".")))
                ]
    return found


def private_names_defined(tree):
    """The private names a module defines: functions, classes, variables and attributes it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if is_private(name)}


def private_reads(modules):
    """``module:line reads x._name`` where ``_name`` belongs to another library module, not to this one.

    ``self._name`` and ``cls._name`` are an object's own business and not counted; torch's private attributes
    (``t._version``, ``node._saved_self``) are not counted either: no library module defines them.
    """
    defined = {module: private_names_defined(tree) for module, tree in modules.items()}
    found = []
    for module, tree in modules.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)) or node.attr in defined[module]:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            owners = sorted(other for other, names in defined.items() if node.attr in names)
            if owners:
                found.append(f"{module}:{node.lineno} reads {ast.unparse(node)} (private to {', '.join(owners)})")
    return found


def test_no_module_imports_another_modules_private_name():
    """``import x as _x`` (a public name kept private here) is fine; ``from .ops import _storage_key`` is not."""
    assert private_imports(library_modules()) == []


def test_no_module_reads_another_modules_private_fields():
    assert private_reads(library_modules()) == []


def test_the_reach_in_checks_catch_what_they_are_for():
    """Both checks on made-up modules: a private import, a private module and a private field read are found."""
    owner = ast.parse("import torch as _torch\nclass Groups:\n    def __init__(self):\n        self._group_of = {}\n")
    reader = ast.parse(
        "from .owner import _helper, Groups\n"
        "from . import owner as _owner\n"
        "from ._hidden import shown\n"
        "def f(g, t):\n"
        "    return g._group_of, t._version, self._group_of\n"
    )
    modules = {"tutorial_lib.x.owner": owner, "tutorial_lib.x.reader": reader}
    assert private_imports(modules) == [
        "tutorial_lib.x.reader:1 imports _helper from tutorial_lib.x.owner",
        "tutorial_lib.x.reader:3 imports shown from tutorial_lib.x._hidden",
    ]
    assert private_reads(modules) == ["tutorial_lib.x.reader:5 reads g._group_of (private to tutorial_lib.x.owner)"]


# --- importing draws in nothing ----------------------------------------------------------------------------------

#: Modules that import a notebook or drawing package at import time, and why that is their job.
IMPORTS_AT_LOAD = {
    "tutorial_lib.tools.magics": "the IPython extension: its magics subclass IPython's Magics",
}


def test_importing_the_library_imports_no_drawing_or_notebook_package():
    """matplotlib, ipywidgets and IPython load when something is drawn or shown, not when ``tutorial_lib`` loads;
    the same holds for every module of the library but the IPython extension."""
    modules = sorted(set(library_modules()) - set(IMPORTS_AT_LOAD))
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(name for name in ('matplotlib', 'ipywidgets', 'IPython') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --- a test module per library module ------------------------------------------------------------------------------

#: Every library module with code (a package whose ``__init__.py`` holds only a docstring has none) -> the test
#: modules that test it. The first one is named after the module: ``test_<module>.py``, or
#: ``test_<package>_<module>.py`` where the module's own name says little (``chapter1``), unless NAMED_OTHERWISE.
TESTED_BY = {
    "__init__.py": ["test_environment.py"],
    "explain.py": ["test_explain_cli.py"],
    "workers.py": ["test_workers.py"],
    "common/checks.py": ["test_common.py"],
    "common/text.py": ["test_common.py"],
    "facts/storage.py": ["test_storage.py", "test_edges_storage.py"],
    "facts/ops.py": ["test_ops.py", "test_edges_ops.py"],
    "facts/watching.py": ["test_ops.py", "test_inplace_watch.py"],
    "facts/names.py": ["test_names.py", "test_names_picture.py"],
    "facts/memory.py": ["test_memory.py", "test_memory_allocator.py", "test_memory_loops.py"],
    "facts/live_storages.py": ["test_live_storages.py"],
    "facts/graph.py": ["test_graph.py", "test_edges_graph.py"],
    "facts/inplace_watch.py": ["test_inplace_watch.py"],
    "facts/cell_lines.py": ["test_cell_lines.py", "test_inplace_watch.py"],
    "facts/inplace_advice.py": ["test_inplace_advice.py", "test_inplace_watch.py"],
    "facts/module_names.py": ["test_module_names.py", "test_inplace_watch.py"],
    "pictures/scene.py": ["test_renderers.py"],
    "pictures/render_mpl.py": ["test_renderers.py", "test_figure_text.py"],
    "pictures/render_svg.py": ["test_renderers.py"],
    "pictures/layout_picture.py": ["test_layout_picture.py"],
    "pictures/names_picture.py": ["test_names_picture.py"],
    "pictures/graph_placement.py": ["test_graph_placement.py"],
    "pictures/graph_groups.py": ["test_graph_groups.py"],
    "pictures/graph_picture.py": ["test_graph_picture.py"],
    "pictures/timeline.py": ["test_timeline.py"],
    "pictures/allocator_picture.py": ["test_allocator_picture.py"],
    "pictures/palette.py": ["test_palette.py"],
    "pictures/tables.py": ["test_tables.py"],
    "explorers/base.py": ["test_layout_explorers.py", "test_graph_stepper.py"],
    "explorers/layout_explorers.py": ["test_layout_explorers.py", "test_edges_widgets.py"],
    "explorers/graph_stepper.py": ["test_graph_stepper.py"],
    "exercises/__init__.py": ["test_exercises.py"],
    **{f"exercises/chapter{n}.py": [f"test_exercises_chapter{n}.py"] for n in range(0, 8)},
    "tools/errors.py": ["test_errors.py"],
    "tools/magics.py": ["test_magics.py"],
    "tools/explain.py": ["test_explain_cli.py"],
    "facts/sharing.py": ["test_sharing.py"],
    "pictures/sharing_picture.py": ["test_sharing_picture.py"],
    "facts/places.py": ["test_places.py"],
    "pictures/places_picture.py": ["test_places_picture.py"],
}

#: Modules whose test module is not named after them, and why.
NAMED_OTHERWISE = {
    "common/checks.py": "common/ holds a few small helpers every layer shares: one test module, test_common.py",
    "common/text.py": "see common/checks.py",
    "__init__.py": "the public API as a whole: exports, import cost, the project's files (test_environment.py)",
    "explain.py": "the `python -m tutorial_lib.explain` entry point; its tests run the command",
    "tools/explain.py": "the code of the same command, tested through it",
    "facts/watching.py": "the dispatch-mode plumbing trace_ops and watch_inplace share; tested through both",
    "pictures/scene.py": "the scene model and its two renderers are tested together, one scene drawn by both",
    "pictures/render_mpl.py": "see pictures/scene.py",
    "pictures/render_svg.py": "see pictures/scene.py",
    "explorers/base.py": "the explorers' common base, tested through the two explorers built on it",
}

#: Test modules that test no one library module, and what they test instead.
CROSS_CUTTING = {
    "test_architecture.py": "the library's shape (this file)",
    "test_bad_inputs.py": "odd inputs across the public API: an answer or an error naming an argument that exists",
    "test_huge_inputs.py": "huge inputs across the public API (10^8 elements, 64 dimensions, 10^5 ops): bounded work",
    "test_browser.py": "every notebook run in JupyterLab in a browser",
    "test_course_budget.py": "`make course-stats` (.ci/course_stats.py): the core path's budget, first screens, links",
    "test_gpu_outputs.py": "`.ci/store_gpu_outputs.py` and `make notebooks` keeping a real GPU's outputs",
    "test_dump_pictures.py": "`.ci/dump_pictures.py`, the maintainers' picture-by-picture comparison",
    "test_html.py": "`make html`, the offline reading copy",
    "test_reset_exercises.py": "`make reset-exercises` (.ci/reset_exercises.py)",
}


def has_code(path):
    """Whether a module holds more than a docstring."""
    body = ast.parse(path.read_text()).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


def test_every_library_module_is_in_the_table():
    modules = {path.relative_to(LIBRARY).as_posix() for path in LIBRARY.rglob("*.py") if has_code(path)}
    assert sorted(modules) == sorted(TESTED_BY)


def test_every_module_has_a_test_module_named_after_it():
    for module, tests in TESTED_BY.items():
        path = Path(module)
        stem = path.parent.name if path.stem == "__init__" else path.stem
        named = {f"test_{stem}.py", f"test_{path.parent.name}_{stem}.py"}
        if module in NAMED_OTHERWISE:
            assert NAMED_OTHERWISE[module], module
        else:
            assert tests[0] in named, f"{module} is tested in {tests}, none named after it"


def test_the_table_names_the_test_modules_that_exist():
    listed = {test for tests in TESTED_BY.values() for test in tests}
    existing = {path.name for path in TESTS.glob("test_*.py")}
    assert sorted(listed - existing) == [], "listed but missing"
    assert sorted(existing - listed - set(CROSS_CUTTING)) == [], "a test module that tests no module in the table"


def test_the_readme_diagram_names_every_package_and_module():
    """The README's "How tutorial_lib is built" section matches the tree: every package and module is in it."""
    readme = (LIBRARY.parent / "README.md").read_text()
    section = readme.split("### How `tutorial_lib` is built", 1)[1].split("\n### ", 1)[0]
    diagram = section.split("```", 2)[1]
    for path in sorted(LIBRARY.rglob("*.py")):
        module = path.relative_to(LIBRARY)
        if module.name == "__init__.py":
            if module.parent.parts:
                assert f"{module.parent.as_posix()}/" in diagram, f"package {module.parent} is not in the diagram"
            continue
        if module.parent.name == "exercises":
            continue  # chapter1 … chapter7, named as a range
        name = module.stem if module.parent.parts else module.name
        assert re.search(rf"\b{re.escape(name)}\b", diagram), f"{module} is not in the README's diagram"
