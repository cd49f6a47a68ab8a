"""`make html`: the offline reading copy has every chapter, in order, and loads nothing from the network."""

import html
import re
from pathlib import Path

import nbformat
import pytest
from scripts import course_notebooks, load_script

ROOT = Path(__file__).resolve().parents[1]


def load_builder():
    return load_script(Path(".ci/build_html.py"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    builder = load_builder()
    out = tmp_path_factory.mktemp("html")
    return builder, out, builder.build(out)


def test_index_lists_the_core_path_in_chapter_order_then_the_deep_dives(built):
    _, out, pages = built
    notebooks = course_notebooks()
    expected = [n.relative_to(ROOT / "notebooks").with_suffix(".html").as_posix() for n in notebooks]
    assert [p.relative_to(out).as_posix() for p in pages] == ["index.html"] + expected
    index = (out / "index.html").read_text()
    links = re.findall(r'<li><a href="([^"]+)">([^<]+)</a>', index)
    assert [href for href, _ in links] == expected
    for (href, title), notebook in zip(links, notebooks):
        first = nbformat.read(notebook, as_version=4).cells[0].source
        assert f"# {html.unescape(title)}" in first
        assert (out / href).is_file()


def test_pages_load_nothing_from_the_network(built):
    builder, _, pages = built
    for page in pages:
        text = page.read_text()
        assert not builder.REMOTE.search(text), page.name
        assert "require.min.js" not in text and "mathjax" not in text.lower(), page.name
        assert builder.WIDGET not in text, page.name  # widgets show their text summary instead


def test_every_link_to_a_notebook_becomes_a_link_to_its_page():
    builder = load_builder()
    text = "[a](01_x.ipynb), [b](deep_dives/why_y.ipynb#z), [c](../02_z.ipynb), [d](https://e.org/f.ipynb)"
    assert builder.NOTEBOOK_LINK.sub(lambda m: f"]({m.group(1)}.html{m.group(2) or ''})", text) == (
        "[a](01_x.html), [b](deep_dives/why_y.html#z), [c](../02_z.html), [d](https://e.org/f.ipynb)"
    )


def test_links_between_notebooks_point_to_pages(built):
    _, out, _ = built
    start = (out / "00_start_here.html").read_text()
    targets = set(re.findall(r'href="(\d\d_[A-Za-z0-9_]+\.html)"', start))
    assert len(targets) >= 7 and all((out / t).is_file() for t in targets)
    assert not re.search(r'href="\d\d_[A-Za-z0-9_]+\.ipynb', start)


def test_math_becomes_images_and_code_is_left_alone():
    builder = load_builder()
    text = builder.render_math(r"Since $\frac{d}{du}\sin u = \cos u$, run `print('$5 and $6')`.")
    assert text.count("<img") == 1 and 'alt="\\frac{d}{du}\\sin u = \\cos u"' in text
    assert "`print('$5 and $6')`" in text
    assert builder.math_image(r"\notacommand{", False).startswith("<code>")  # unparsable TeX stays readable
