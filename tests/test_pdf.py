"""Checks of the book's PDF (_build/pdf, `make pdf`) against the built site (_build/html).

Nothing here is hard-coded to today's chapters: the figures, glued numbers, titles
and figure numbers are read from the built HTML, so the checks follow the book.
"""

from __future__ import annotations

import ast
import html
import itertools
import re

import pypdf
import pytest
from conftest import BUILD, ROOT
from pdf_text import body_text, glued_in
from pdf_text import squeeze as _squeeze
from test_site import PAGES

HTML = BUILD / "html"
PDF = BUILD / "pdf" / "roofline-book.pdf"
LIMIT = 15 * 1024 * 1024  # bytes

pytestmark = pytest.mark.site

_MATH = re.compile(r'<span class="math notranslate nohighlight">.*?</span>', re.S)
_GLUE = re.compile(r'<span class="pasted-text">([^<]*)</span>')
_TAG = re.compile(r"<[^>]+>")
_BREAK = "\x00"  # where math or a block ended: context never runs across it
_BLOCK = re.compile(r"</(p|div|pre|li|td|th|h\d|dt|dd|figcaption)>")


def _article(page: str) -> str:
    """The page's own content (the theme's navigation and footer left out)."""
    text = (HTML / f"{page}.html").read_text("utf-8")
    start = text.index("<article")
    return text[start : text.index("</article>", start)]


def _plain(fragment: str) -> str:
    fragment = _BLOCK.sub(_BREAK, _MATH.sub(_BREAK, fragment))
    return _squeeze(html.unescape(_TAG.sub("", fragment)))


@pytest.fixture(scope="module")
def reader():
    if not PDF.is_file():
        pytest.fail(f"{PDF} is missing: run `make pdf` (after `make html`)")
    return pypdf.PdfReader(PDF)


@pytest.fixture(scope="module")
def text(reader) -> str:
    """The PDF's text with every blank removed (CJK lines break anywhere), heads and feet out."""
    labels = reader.page_labels
    return body_text(
        [(page.extract_text().splitlines(), labels[i]) for i, page in enumerate(reader.pages)]
    )


def _web_only() -> tuple[str, ...]:
    """conf.py's ``roofline_web_only``: pages only the site has (the PDF leaves them out)."""
    tree = ast.parse((ROOT / "conf.py").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "roofline_web_only" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    return ()


def _chapter_pages() -> list[str]:
    return [p for p in PAGES if p != "index" and p not in _web_only()]


def test_pages_only_the_site_has_are_not_in_the_pdf(reader, text):
    assert _web_only() == ("calculator",)
    titles = _bookmarks(reader)
    for page in _web_only():
        assert _title(page) not in titles
    # the chapters' links to it keep their words, without a reference the PDF cannot follow
    assert "这些习题都可以在在线计算器里验算" in _squeeze(text)


def _title(page: str) -> str:
    match = re.search(r"<h1>(.*?)</h1>", _article(page), re.S)
    assert match, page
    title = re.sub(r'<span class="section-number">.*?</span>', "", match.group(1))
    title = re.sub(r'<a class="headerlink".*?</a>', "", title, flags=re.S)
    return _plain(title)


def test_size_and_page_count(reader):
    # A cover, a table of contents, then every page of the site starts a chapter.
    assert len(reader.pages) >= len(PAGES) + 2
    assert PDF.stat().st_size < LIMIT
    assert (HTML / PDF.name).read_bytes() == PDF.read_bytes(), "the site serves this PDF"


def test_chinese_text_in_a_cjk_font(reader, text):
    assert "算术强度" in text
    fonts = set()
    for page in reader.pages[:8]:
        for font in ((page.get("/Resources") or {}).get("/Font") or {}).values():
            fonts.add(str(font.get_object().get("/BaseFont")))
    # the figures' font file (noto-cjk-sans-otc): the collection's faces share one CFF font,
    # named for its first face, so the SC face embeds as NotoSansCJKjp (its cmap gives SC forms)
    assert any("NotoSansCJK" in f for f in fonts), fonts


def _bookmarks(reader) -> dict[str, object]:
    """The PDF's top-level bookmarks (its chapters) by title."""
    return {_squeeze(item.title): item for item in reader.outline if not isinstance(item, list)}


def _first_chapter(reader) -> int:
    """The page index where the first chapter after the preface starts."""
    return reader.get_destination_page_number(_bookmarks(reader)[_title(_chapter_pages()[0])])


def test_every_chapter_in_toc_with_its_page_number(reader):
    """Each site page is a top-level bookmark to its chapter, and its TOC line gives that page."""
    titles = _bookmarks(reader)
    first = _first_chapter(reader)
    lines = [_squeeze(x) for page in reader.pages[:first] for x in page.extract_text().splitlines()]
    lines += [a + b for a, b in itertools.pairwise(lines)]  # a title that wraps
    labels = reader.page_labels
    for page in _chapter_pages():
        title = _title(page)
        assert title in titles, f"{page}: no bookmark {title!r}"
        target = reader.get_destination_page_number(titles[title])
        assert title in _squeeze(reader.pages[target].extract_text()), page
        line = re.compile(r"[0-9A-Z]*" + re.escape(title) + r"\.*" + re.escape(labels[target]))
        assert any(line.fullmatch(x) for x in lines), f"{page}: no TOC line ... {labels[target]}"


def test_toc_links_work(reader):
    """The TOC's entries are links to pages of this PDF."""
    first = _first_chapter(reader)
    names = reader.named_destinations
    targets = []
    for page in reader.pages[:first]:
        for annot in page.get("/Annots") or []:
            action = annot.get_object().get("/A") or {}
            if action.get("/S") == "/GoTo":
                dest = action["/D"]
                targets.append(
                    reader.get_destination_page_number(names[dest]) if dest in names else -1
                )
    assert len(targets) >= len(_chapter_pages())
    assert all(0 <= t < len(reader.pages) for t in targets)


def test_as_many_vector_figures_as_the_site(reader):
    site = sum(
        len(re.findall(r'<div class="roofline-figure">', _article(page)))
        for page in PAGES
        if (HTML / f"{page}.html").exists()
    )
    placed = raster = 0
    for page in reader.pages:
        xobjects = (page.get("/Resources") or {}).get("/XObject")
        if not xobjects:
            continue
        content = page.get_contents().get_data()
        for name, ref in xobjects.get_object().items():
            kind = ref.get_object().get("/Subtype")
            uses = content.count(f"{name} Do".encode())
            placed += uses
            raster += uses if kind == "/Image" else 0
    assert site > 0
    assert placed == site
    assert raster == 0, "every figure is a vector drawing"


def test_figure_table_and_equation_numbers_as_on_the_site(text):
    """图 3.1, 表 4.1, (3.2): the PDF numbers the chapters' figures, tables and equations alike.
    (The site numbers an appendix's tables 1, 2, ... across the appendices; the PDF letters
    them by their appendix, 表 B.1: test_appendix_tables_are_numbered_as_their_appendix.)"""
    count = 0
    for page in _chapter_pages():
        if page.startswith("appendix/"):
            continue
        article = _article(page)
        numbers = re.findall(r'<span class="caption-number">(.*?)</span>', article)
        numbers += re.findall(r'<span class="eqno">(\(.*?\))', article)
        for number in numbers:
            count += 1
            assert _squeeze(html.unescape(number)) in text, f"{page}: {number}"
    assert count > 0


def _glued(page: str) -> list[tuple[str, str, str]]:
    """(text before, value, text after) of each glued number on the page, as read."""
    article = _MATH.sub(_BREAK, _article(page))
    found = []
    for match in _GLUE.finditer(article):
        before = _plain(article[: match.start()]).rsplit(_BREAK, 1)[-1][-6:]
        after = _plain(article[match.end() :]).split(_BREAK, 1)[0][:4]
        found.append((before, _squeeze(html.unescape(match.group(1))), after))
    return found


def test_every_glued_number_as_on_the_site(text):
    missing = []
    count = 0
    for page in PAGES:
        for before, value, after in _glued(page):
            count += 1
            if not glued_in(text, before, value, after):
                missing.append(f"{page}: {before}[{value}]{after}")
    assert count > 0
    assert not missing, missing


def test_intensity_sentence_and_its_glued_number(text):
    """A sentence of the site with 算术强度 and a glued number reads the same in the PDF."""
    sentence = next(
        s
        for p in PAGES
        for s in re.split(r"(?<=[。！？：])", _MATH.sub(_BREAK, _article(p)))
        if "算术强度" in s and _GLUE.search(s)
    )
    value = _squeeze(html.unescape(_GLUE.search(sentence).group(1)))
    words = [w for w in _plain(sentence).split(_BREAK) if len(w) >= 4]
    pdf = re.split(r"(?<=[。！？：])", text)
    found = [s for s in pdf if value in s and all(w in s for w in words)]
    assert found and all("算术强度" in s for s in found), (value, words)


def test_every_folded_box_of_the_site_is_open_in_the_pdf(text):
    # The site folds depth into 「深入一步：…」 dropdowns; the PDF prints each one, title and body.
    summary = re.compile(r"<summary[^>]*>(.*?)</summary>(.*?)</details>", re.S)
    number = re.compile(r'<span class="caption-number">.*?</span>', re.S)  # 表 12.1 / 表12.1:
    boxes = [
        (page, _plain(title), _plain(number.sub(_BREAK, body)))
        for page in _chapter_pages()
        for title, body in summary.findall(_article(page))
        if "深入一步" in title
    ]
    assert len(boxes) >= len(_chapter_pages()) - 1  # every chapter but the summary folds depth
    missing = []
    for page, title, body in boxes:
        words = [w for w in title.split(_BREAK) if len(w) >= 4][:1]
        opening = [w for w in body.split(_BREAK) if len(w) >= 8][:1]
        if not all(w[:20] in text for w in words + opening):
            missing.append(f"{page}: {title[:30]}")
    assert not missing, missing


def test_every_character_has_a_glyph():
    """XeLaTeX only logs a character its font lacks; the page would show a gap."""
    log = (BUILD / "latex" / PDF.name).with_suffix(".log").read_text("utf-8", errors="replace")
    assert not re.findall(r"Missing character: There is no .*", log)


def test_no_raw_tex(text):
    assert "\\frac" not in text
    assert not re.search(r"\\(begin|end|text|mathrm|operatorname|left|right)\b", text)
    # A dollar sign is only where the site prints one in code (a shell prompt).
    code = "".join(re.findall(r"<pre.*?</pre>", "".join(_article(p) for p in PAGES), re.S))
    site = html.unescape(_TAG.sub("", code)).count("$")
    assert text.count("$") <= site


def test_download_link_on_every_page():
    pdf = (HTML / PDF.name).resolve()
    for page in PAGES:
        path = HTML / f"{page}.html"
        links = re.findall(r'href="([^"]*roofline-book\.pdf)"', path.read_text("utf-8"))
        assert links, f"{page}: no PDF link"
        assert all((path.parent / link).resolve() == pdf for link in links), page


#: The wide tables (new-user-and-bad-input.md, defect 3): page, and a word of the caption.
WIDE_TABLES = (
    ("chapters/11-profiling", "self time 最多的几行"),
    ("chapters/18-summary", "全书反复使用的算子"),
    ("appendix/cuda-benchmarks", "每个条目的计时"),
)


def _table_cells(page: str, caption: str) -> list[str]:
    """Every header and body cell of the page's table whose caption holds ``caption``."""
    tables = re.findall(r"<table.*?</table>", _article(page), re.S)
    (table,) = [t for t in tables if caption in html.unescape(t)]
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", table, re.S)
    return [c for c in (_plain(cell).replace(_BREAK, "") for cell in cells) if c]


@pytest.mark.parametrize(("page", "caption"), WIDE_TABLES)
def test_every_cell_of_the_wide_tables_is_in_the_pdf(text, page, caption):
    """Each column and value of the table as the site shows it, read back from the PDF."""
    cells = _table_cells(page, caption)
    assert len(cells) > 20, cells
    missing = [cell for cell in cells if cell not in text]
    assert not missing, f"{page}: {missing}"


def test_no_table_runs_off_the_page():
    """XeLaTeX logs an alignment wider than the text as an overfull box: its last columns
    are cut off or missing on the page (table 10.1 by 168 pt, appendix B's by 283.6 pt)."""
    log = (BUILD / "latex" / PDF.name).with_suffix(".log").read_text("utf-8", errors="replace")
    overfull = re.findall(r"Overfull \\hbox \((\d+\.?\d*)pt too wide\) in alignment", log)
    assert not [float(pt) for pt in overfull if float(pt) > 1.0], overfull


def test_appendix_tables_are_numbered_as_their_appendix(text):
    """A table of appendix C is 表 C.1 (its continued pages say so too), not 表 3.1."""
    # the appendices: A notation, B hardware, C the benchmarks (docs/index.md)
    assert re.search(r"表C\.1[:：]?[^表]{0,40}每个条目的计时", text)
    assert not re.search(r"表3\.1[:：]?[^表]{0,40}每个条目的计时", text)


def test_signatures_print_straight_quotes(text):
    """A default value in an API signature is Python: dtype='bf16', never dtype=’bf16’."""
    assert "dtype='bf16'" in text
    assert not re.search(r"=[‘’][^‘’]*[‘’]", text)
