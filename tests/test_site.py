"""Checks of the built book under _build/html (run `make html` first; `make test` does)."""

from __future__ import annotations

import html.parser
import json
import pathlib
import re
import urllib.parse

import pytest
from conftest import BUILD

HTML = BUILD / "html"


def _toctree(index: pathlib.Path) -> list[str]:
    """The pages the book's index lists in its toctrees, in reading order (docs/index.md)."""
    pages, inside = [], False
    for line in index.read_text(encoding="utf-8").splitlines():
        if line.startswith("```{toctree}"):
            inside = True
        elif inside and line.startswith("```"):
            inside = False
        elif inside and line.strip() and not line.startswith(":"):
            pages.append(line.strip())
    return pages


PAGES = ["index", *_toctree(pathlib.Path(__file__).resolve().parents[1] / "docs" / "index.md")]
"""Every page of the book: the index and what its toctrees list, so a new page is checked too."""

pytestmark = pytest.mark.site


class _Refs(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self._in_figure = False
        self.figures = 0  # SVG figures written into the page (docs/_ext/roofline_fonts.py)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if tag in ("object", "embed") and a.get("data"):
            self.images.append(a["data"])
        if tag == "svg" and self.get_starttag_text() and self._in_figure:
            self.figures += 1
        self._in_figure = tag == "div" and a.get("class") == "roofline-figure"


def _parse(path: pathlib.Path) -> _Refs:
    refs = _Refs()
    refs.feed(path.read_text("utf-8"))
    return refs


@pytest.fixture(scope="module")
def site():
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} holds no built book: run `make html` first")
    return {p: _parse(HTML / f"{p}.html") for p in PAGES if (HTML / f"{p}.html").exists()}


@pytest.mark.parametrize("page", PAGES)
def test_page_is_built(page):
    assert (HTML / f"{page}.html").is_file(), page


def test_every_figure_exists_and_is_nonempty(site):
    count = 0
    for page, refs in site.items():
        base = (HTML / page).parent
        for src in refs.images:
            if src.startswith(("http:", "https:", "data:")):
                continue
            target = (base / urllib.parse.unquote(src.split("#")[0])).resolve()
            assert target.is_file() and target.stat().st_size > 200, f"{page}: {src}"
            count += 1
        count += refs.figures
    assert count >= 10, f"only {count} figures in the whole book"


def test_no_broken_internal_link(site):
    for page, refs in site.items():
        base = (HTML / page).parent
        for href in refs.links:
            parts = urllib.parse.urlsplit(href)
            if parts.scheme or href.startswith(("mailto:", "//")):
                continue
            if parts.path:
                target = (base / urllib.parse.unquote(parts.path)).resolve()
                assert target.exists(), f"{page}: broken link {href}"
                if parts.fragment and target.suffix == ".html":
                    ids = _parse(target).ids
                    assert parts.fragment in ids, f"{page}: missing anchor {href}"
            elif parts.fragment:
                assert parts.fragment in refs.ids, f"{page}: missing anchor #{parts.fragment}"


@pytest.mark.parametrize("page", PAGES)
def test_no_unfilled_glue_or_raw_roles(page):
    text = (HTML / f"{page}.html").read_text("utf-8")
    body = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S)
    for raw in (
        "{glue:text}",
        "{glue:}",
        "{glue}",
        "{numref}",
        "{eq}",
        "{doc}",
        "{ref}",
        "{dropdown}",
        "{admonition}",
        "??",
    ):
        assert raw not in body, f"{page}: {raw!r} left in the page"


def test_figures_are_numbered_and_captioned(site):
    text = (HTML / "chapters/01-flops.html").read_text("utf-8")
    assert re.search(r"图 \d+(\.\d+)*", text), "figures carry numbers"
    assert "figcaption" in text


def test_code_cells_have_copy_button():
    text = (HTML / "chapters/01-flops.html").read_text("utf-8")
    assert "copybutton.js" in text
    assert (HTML / "_static" / "copybutton.js").is_file()


def _search_index() -> dict:
    text = (HTML / "searchindex.js").read_text("utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


@pytest.mark.parametrize(
    "word,page",
    [
        ("算术强度", "chapters/03-arithmetic-intensity"),
        ("算术", "chapters/03-arithmetic-intensity"),
        ("带宽", "chapters/02-memory-traffic"),
    ],
)
def test_chinese_search_index(word, page):
    index = _search_index()
    docs = index["docnames"]
    hits: set[int] = set()
    for table in ("terms", "titleterms"):  # words of the body, words of headings
        found = index[table].get(word, [])
        hits.update(found if isinstance(found, list) else [found])
    assert hits, f"{word} is not in the search index"
    assert docs.index(page) in hits, f"{word} does not lead to {page}"


def test_download_buttons_offer_md_and_ipynb():
    text = (HTML / "chapters/06-gemm.html").read_text("utf-8")
    assert 'href="../_sources/chapters/06-gemm.md"' in text
    assert 'href="../_sources/chapters/06-gemm.ipynb"' in text
    notebook = json.loads((HTML / "_sources/chapters/06-gemm.ipynb").read_text("utf-8"))
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code and any(c.get("outputs") for c in code), "the notebook carries its outputs"


def test_repository_links():
    text = (HTML / "chapters/06-gemm.html").read_text("utf-8")
    assert re.search(r'href="https://[^"]+/edit/main/docs/chapters/06-gemm\.md"', text)
    assert re.search(r'href="https://[^"]+/blob/main/docs/chapters/06-gemm\.md', text)


def test_previous_next_and_titles(site):
    text = (HTML / "chapters/06-gemm.html").read_text("utf-8")
    assert 'class="left-prev"' in text and 'class="right-next"' in text
    title = re.search(r"<title>(.*?)</title>", text, re.S).group(1)
    assert "GEMM" in title and "Roofline Book" in title
    assert (HTML / "_static" / "favicon.svg").is_file() and 'rel="icon"' in text
