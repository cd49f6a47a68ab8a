"""`make html`: a static reading copy of the course that opens offline, with an index in chapter order.

For people who want to read before they run. Each notebook is converted with nbconvert's lab
template minus everything it would fetch from a CDN (see html_template/offline): TeX in the text
is drawn beforehand to inline SVG images with matplotlib's mathtext, widget outputs show their
plain-text summary (a static page has no kernel to drive them), and links between notebooks point
to the HTML pages. The build fails if any page still loads a script, stylesheet or image from the
network.

Usage: python .ci/build_html.py [OUTPUT_DIR]   (default build/html)
"""

from __future__ import annotations

import base64
import functools
import html
import io
import re
import sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from notebook_paths import CORE_DIR, core_notebooks, deep_dives

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "html_template"
WIDGET = "application/vnd.jupyter.widget-view+json"
# A resource the browser would fetch from the network: a src/href on script, link, img, iframe, source.
REMOTE = re.compile(r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=[\"']?(?:https?:)?//", re.IGNORECASE)
MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\s](?:[^$]*?[^$\s])?)\$", re.DOTALL)
CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.DOTALL)
# A relative link to another notebook: 01_x.ipynb, deep_dives/why_y.ipynb, ../02_z.ipynb#a-section.
NOTEBOOK_LINK = re.compile(r"\]\(((?:\.{1,2}/)*(?:deep_dives/)?[A-Za-z0-9_]+)\.ipynb(#[^)]*)?\)")


@functools.lru_cache(maxsize=None)
def math_image(tex: str, display: bool) -> str:
    """TeX drawn by matplotlib's mathtext as an inline SVG <img>, or the TeX in <code> if mathtext can't."""
    from matplotlib import mathtext

    buffer = io.BytesIO()
    try:
        mathtext.math_to_image(f"${tex}$", buffer, prop=None, dpi=100, format="svg")
    except (ValueError, RuntimeError):
        return f"<code>{html.escape(tex)}</code>"
    data = base64.b64encode(buffer.getvalue()).decode()
    style = "display:block;margin:0.5em auto" if display else "vertical-align:middle"
    return f'<img alt="{html.escape(tex, quote=True)}" style="{style}" src="data:image/svg+xml;base64,{data}">'


def render_math(markdown: str) -> str:
    """Replace $...$ and $$...$$ outside code spans with images."""
    pieces = CODE.split(markdown)
    for i in range(0, len(pieces), 2):  # even pieces are outside code
        pieces[i] = MATH.sub(
            lambda m: math_image((m.group(1) or m.group(2)).strip(), m.group(1) is not None), pieces[i]
        )
    return "".join(pieces)


def prepare(notebook) -> None:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = NOTEBOOK_LINK.sub(
                lambda m: f"]({m.group(1)}.html{m.group(2) or ''})", render_math(cell.source)
            )
        elif cell.cell_type == "code":
            cell.metadata.get("jupyter", {}).pop("outputs_hidden", None)  # a reading copy cannot run the reveal
            for output in cell.get("outputs", []):
                if WIDGET in output.get("data", {}):
                    del output["data"][WIDGET]  # the text/plain summary stays


def title_and_intro(notebook) -> tuple[str, str]:
    first = next(c for c in notebook.cells if c.cell_type == "markdown")
    lines = first.source.splitlines()
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), "Untitled")
    body = [line for line in lines if line.strip() and not line.startswith("#")]
    return title, body[0] if body else ""


def build(out: Path) -> list[Path]:
    exporter = HTMLExporter(
        template_name="offline", extra_template_basedirs=[str(TEMPLATES)], exclude_anchor_links=False
    )
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for path in core_notebooks() + deep_dives():
        notebook = nbformat.read(path, as_version=4)
        title, intro = title_and_intro(notebook)
        prepare(notebook)
        body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": title}})
        page = out / path.relative_to(CORE_DIR).with_suffix(".html")
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(body, encoding="utf-8")
        entries.append((page, title, intro))

    def items(pages):
        return "\n".join(
            f'<li><a href="{page.relative_to(out).as_posix()}">{html.escape(title)}</a>'
            f"<p>{html.escape(re.sub(r'[*_`]', '', intro))}</p></li>"
            for page, title, intro in pages
        )

    core = [entry for entry in entries if entry[0].parent == out]
    deep = [entry for entry in entries if entry[0].parent != out]
    index = out / "index.html"
    index.write_text(
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>How PyTorch tensors live in memory</title>"
        "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}li{margin-bottom:1em}"
        "p{margin:0.2em 0;color:#444}</style></head><body><h1>How PyTorch tensors live in memory: reading copy</h1>"
        "<p>A static copy of the course's notebooks with their stored outputs: the core path in chapter order, then "
        "the deep dives. To run the code and use the explorers, open the notebooks in JupyterLab "
        "(<code>make lab</code>).</p>"
        f"<h2>The core path</h2><ol start='0'>\n{items(core)}\n</ol>"
        + (f"<h2>Deep dives</h2><ul>\n{items(deep)}\n</ul>" if deep else "")
        + "</body></html>",
        encoding="utf-8",
    )
    pages = [index] + [page for page, _, _ in entries]
    remote = [(p.name, m.group(0)[:80]) for p in pages for m in [REMOTE.search(p.read_text(encoding="utf-8"))] if m]
    if remote:
        raise SystemExit(f"pages would load from the network: {remote}")
    return pages


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "html"
    for page in build(target):
        print(page)
