"""How long it takes to draw a backward graph to SVG, with torchviz on the same graph when it is installed.

Run: .venv/bin/python benchmarks/bench_graph.py [--repeats N]

Graphs: the backward graph of a stack of residual MLP blocks (CPU), about 250 nodes (24 blocks) and about
1,000 nodes (99 blocks). Every time covers reading the graph from the tensor, choosing what to draw,
layout and writing SVG into memory:

- ``graph_svg`` writes the SVG document directly (no matplotlib), uncollapsed and with its defaults
  (big graphs collapse into groups);
- ``draw_graph`` + ``fig.savefig(io.BytesIO(), format="svg")`` is the same picture through matplotlib
  (its default draws text as outlines; the "SVG text" rows keep it as <text> with ``svg.fonttype="none"``);
- torchviz ``make_dot(...).pipe(format="svg")``, which runs graphviz's ``dot``, is timed only when both
  are installed: neither is a project dependency (``pip install torchviz``, ``apt-get install graphviz``).

The ratio column divides by torchviz's time on the same graph (by graph_svg's when torchviz is absent).
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
from pathlib import Path

import matplotlib

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the residual net the tests use

from models import residual  # noqa: E402
from timing import median_seconds  # noqa: E402  (benchmarks/timing.py, beside this script)

from tutorial_lib.facts.graph import autograd_graph  # noqa: E402
from tutorial_lib.pictures.graph_picture import draw_graph, graph_svg  # noqa: E402


def time_draw_graph(loss, model, repeats: int, svg_text: bool = False, **options) -> float:
    """Median seconds of draw_graph + savefig to SVG; ``svg_text`` keeps text as <text> (svg.fonttype none)."""

    def run():
        fig = draw_graph(loss, model=model, **options)
        if svg_text:
            with matplotlib.rc_context({"svg.fonttype": "none"}):
                fig.savefig(io.BytesIO(), format="svg")
        else:
            fig.savefig(io.BytesIO(), format="svg")

    return median_seconds(run, repeats)


def torchviz_available() -> bool:
    try:
        import torchviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def time_torchviz(loss, model, repeats: int) -> float:
    import torchviz

    params = dict(model.named_parameters())
    return median_seconds(lambda: torchviz.make_dot(loss, params=params).pipe(format="svg"), repeats)


def time_graph_svg(loss, model, repeats: int, **options) -> float:
    return median_seconds(lambda: graph_svg(loss, model=model, **options), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    rows = []
    have_torchviz = torchviz_available()
    whole = dict(collapse="none", max_nodes=2000)
    for depth in (24, 99):
        model, loss = residual(depth, width=8, inputs=4, batch=16)  # 12 + 10 * depth nodes
        nodes = autograd_graph(loss).total_nodes
        if have_torchviz:
            rows.append(("torchviz make_dot + dot -Tsvg", nodes, time_torchviz(loss, model, args.repeats)))
        rows.append(("graph_svg collapse='none'", nodes, time_graph_svg(loss, model, args.repeats, **whole)))
        rows.append(("graph_svg (default: collapsed)", nodes, time_graph_svg(loss, model, args.repeats)))
        rows.append(
            ("draw_graph + savefig, SVG text, whole", nodes, time_draw_graph(loss, model, args.repeats, True, **whole))
        )
        rows.append(("draw_graph + savefig, whole", nodes, time_draw_graph(loss, model, args.repeats, **whole)))
        rows.append(("draw_graph + savefig (default)", nodes, time_draw_graph(loss, model, args.repeats)))

    print(f"{'tool':<40} {'nodes':>6} {'median s':>9} {'ratio':>7}")
    base = {}
    for tool, nodes, seconds in rows:
        base.setdefault(nodes, seconds)
        print(f"{tool:<40} {nodes:>6} {seconds:>9.3f} {seconds / base[nodes]:>7.2f}")
    reference = "torchviz + dot" if have_torchviz else "graph_svg collapse='none'"
    print(f"(ratio: median time over {reference} on the same graph; SVG into memory, CPU)")
    if not have_torchviz:
        print("torchviz or graphviz's dot not installed: comparison skipped")


if __name__ == "__main__":
    main()
