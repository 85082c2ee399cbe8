"""The PDF's shape: the root page's preface, chapters and appendices as a book has them.

On the site, index.md is a page of its own: a preface in a few ``##`` sections,
then toctrees (正文, numbered; 工具; 附录). The LaTeX builder inlines each toctree
where it stands, so left alone the preface's sections would become chapters 1-4
and the book's chapters sections inside the last of them. For the LaTeX builder
only, ``doctree-read`` rebuilds the root page as a book:

- the text before the toctrees becomes one unnumbered chapter, 前言, whose
  sections are the page's ``##`` sections (numbering off, ``\\booknumberingoff``
  and ``\\booknumberingon`` from conf.py's preamble), so the chapters keep the
  site's numbers 1, 2, ...;
- the toctrees follow at the top level, so each page they list is a chapter;
- ``\\appendix`` goes before the toctree whose entries all live under
  ``appendix/``, so those pages are lettered appendices (A, B, ...);
- a toctree of pages only the site has (``roofline_web_only`` in conf.py: the
  calculator, which runs in the reader's browser) is left out, and a link to one
  of them from another page (``doctree-resolved``) keeps its text, not a
  reference to a page the PDF does not have.

Every other builder gets the page as written.

A table too wide for the page at the body size (estimated from its cells' text) is
fitted to it on the LaTeX builder only (:func:`fit_wide_tables`): its cells are set
in ``\\footnotesize``, each column gets a width from its text (at least its longest
word, the rest shared by how much text the column holds), ragged, numbers to the
right, and long identifiers may break after ``_``, ``:`` and ``.``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import texescape

PREFACE = "前言"


def _raw(tex: str) -> nodes.raw:
    return nodes.raw("", tex + "\n", format="latex")


def _is_appendix(wrapper: nodes.Element) -> bool:
    entries = [
        ref for toctree in wrapper.findall(addnodes.toctree) for _t, ref in toctree["entries"]
    ]
    return bool(entries) and all(ref.startswith("appendix/") for ref in entries)


def _is_web_only(app: Sphinx, wrapper: nodes.Element) -> bool:
    entries = [
        ref for toctree in wrapper.findall(addnodes.toctree) for _t, ref in toctree["entries"]
    ]
    return bool(entries) and all(ref in app.config.roofline_web_only for ref in entries)


def _unlink_web_only(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """On the LaTeX builder, a link to a page only the site has becomes its text."""
    if app.builder.format != "latex":
        return
    pages = {f"%{page}" for page in app.config.roofline_web_only}
    for ref in list(doctree.findall(nodes.reference)):
        if ref.get("refuri", "").split("#", 1)[0] in pages:
            ref.replace_self(nodes.inline("", "", *ref.children))


def _book_root(app: Sphinx, doctree: nodes.document) -> None:
    if app.builder.format != "latex" or app.env.docname != app.config.root_doc:
        return
    root = next(iter(doctree.findall(nodes.section)), None)
    if root is None:
        return
    wrappers = [
        node.parent
        for node in doctree.findall(addnodes.toctree)
        if isinstance(node.parent, nodes.compound)
    ]
    for wrapper in wrappers:
        wrapper.parent.remove(wrapper)
    title, *body = root.children
    preface = nodes.section("", nodes.title(PREFACE, PREFACE), ids=["preface"], names=[PREFACE])
    preface.extend(body)
    root.children = []
    root += [title, _raw(r"\booknumberingoff"), preface, _raw(r"\booknumberingon")]
    for wrapper in wrappers:
        if _is_web_only(app, wrapper):
            continue
        if _is_appendix(wrapper):
            root += _raw(r"\appendix")
        root += wrapper


#: The text width (A4, 2.2 cm margins: conf.py's ``hmargin``) and the space around each
#: cell (``2\tabcolsep``), in pt.
TEXT_WIDTH = (210 - 2 * 22) / 25.4 * 72.27
CELL_PADDING = 12.0
BODY_SIZE = 10.0  # pt: \normalsize of a 10pt book
#: The smaller sizes a wide table may take (pt, LaTeX command), the largest that fits first.
TABLE_SIZES = ((8.0, r"\footnotesize"), (7.0, r"\scriptsize"))
#: The estimate of a text's width is rough (no kerning, average glyphs): leave this much over.
SLACK = 1.12
#: The fewest em a column gets, when it holds that much: a short header on one line.
SHORT_HEADER = 4.0
#: Wide tables are those of at least this many columns, or long ones (``longtable``, whose
#: columns never wrap), too wide for the page at the body size.
MANY_COLUMNS = 6
LONG_TABLE = 30  # rows: Sphinx makes a longer table a longtable

#: Where a long identifier (``aten::_scaled_dot_product_flash_attention``) may break.
_BREAKS = re.compile(r"(?<=[_:.])(?=[^_:.\s])")
_LONG_WORD = 12  # characters: shorter words are never broken
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def text_ems(text: str) -> float:
    """The width of ``text`` in em of the PDF's fonts, roughly: a CJK character 1, a capital
    0.72, a space 0.25, anything else 0.5 (Pagella's digits and lowercase).

    Examples
    --------
    >>> text_ems("算子"), text_ems("2.953 GFLOP")
    (2.0, 6.35)
    """
    ems = 0.0
    for char in text:
        if unicodedata.east_asian_width(char) in "WF":
            ems += 1.0
        elif char.isspace():
            ems += 0.25
        elif char.isupper():
            ems += 0.72
        else:
            ems += 0.5
    return round(ems, 6)


def _words(text: str) -> list[str]:
    """The pieces of ``text`` a line may not break inside: CJK breaks anywhere, Latin at
    (breaking) spaces only, and a long identifier also after ``_``, ``:`` and ``.``."""
    pieces = []
    for word in re.split(r"[ \t\n]+", text):
        parts = _BREAKS.split(word) if len(word) >= _LONG_WORD else [word]
        for part in parts:
            pieces += _CJK.split(part)
    return [p for p in pieces if p] or [""]


def column_widths(
    cells: list[list[str]], right: list[bool] | None = None, width: float = TEXT_WIDTH
) -> tuple[str, list[float]] | None:
    r"""The type size and the column widths (pt, cell padding included, summing to
    ``width``) that fit a wide table on the page, or None when it is not wide.

    ``cells`` are the rows, the header first. A column gets at least its longest unbreakable
    word (a value in a right-aligned column, a number with its unit, is not broken at all),
    and a short header's width; the rest of the line is shared by how much more text each
    column holds. The size is the largest of :data:`TABLE_SIZES` at which those least
    widths fit.

    Examples
    --------
    >>> column_widths([["a", "b"], ["1", "2"]]) is None
    True
    >>> size, widths = column_widths([["条目", "x", "y", "z", "v", "w"], ["名称" * 30] * 6])
    >>> size, round(sum(widths), 1) == round(TEXT_WIDTH, 1)
    ('\\footnotesize', True)
    """
    right = right or [False] * len(cells[0])
    columns = list(zip(*cells, strict=True))
    natural = [max(text_ems(c) for c in col) * SLACK for col in columns]
    too_wide = sum(n * BODY_SIZE + CELL_PADDING for n in natural) > width
    if not too_wide or (len(columns) < MANY_COLUMNS and len(cells) <= LONG_TABLE):
        return None
    least = []
    for col, n, whole in zip(columns, natural, right, strict=True):
        header, body = col[0], col[1:]
        words = [w for c in (header, *(() if whole else body)) for w in _words(c)]
        unbroken = max([text_ems(w) for w in words] + [text_ems(c) for c in body if whole])
        least.append(max(unbroken * SLACK, min(n, SHORT_HEADER)))
    room = width - len(columns) * CELL_PADDING
    size, command = next(
        ((s, c) for s, c in TABLE_SIZES if sum(least) * s <= room), TABLE_SIZES[-1]
    )
    if sum(natural) * size <= room:  # it fits in the smaller type without a break
        return command, [n * size * room / (sum(natural) * size) + CELL_PADDING for n in natural]
    spare = max(room - sum(least) * size, 0.0)
    extra = [n - m for n, m in zip(natural, least, strict=True)]
    shares = [e / (sum(extra) or 1.0) for e in extra]
    return command, [
        m * size + CELL_PADDING + spare * s for m, s in zip(least, shares, strict=True)
    ]


def _is_right(entry: nodes.entry) -> bool:
    return any("right" in c for c in entry.get("classes", []))


def _breakable(entry: nodes.entry) -> None:
    """Let LaTeX break a cell's long identifiers after ``_``, ``:`` and ``.``."""
    for text in list(entry.findall(nodes.Text)):
        if not any(len(w) >= _LONG_WORD and _BREAKS.search(w) for w in str(text).split()):
            continue
        pieces = _BREAKS.split(str(text))
        tex = r"\allowbreak{}".join(texescape.escape(p) for p in pieces)
        text.parent.replace(text, nodes.raw("", tex, format="latex"))


def _column(share: float, size: str, right: bool) -> str:
    """One column of a ``tabularcolumns`` spec: ``share`` of the line, in ``size``, ragged,
    never hyphenated (a term cut as "materi- alized" reads badly; the widths leave room)."""
    align = r"\raggedleft" if right else r"\raggedright"
    prefix = rf"{size}{align}\arraybackslash\hyphenpenalty=10000 "
    return rf">{{{prefix}}}\X{{{math.floor(share * 1000)}}}{{1000}}"


def fit_wide_tables(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Give each wide table (:func:`column_widths`) a column spec that fits it on the PDF's
    page, the way a page's ``tabularcolumns`` would (LaTeX only): smaller type, widths by
    content, ragged text, values set right as on the site."""
    if app.builder.format != "latex":
        return
    for table in list(doctree.findall(nodes.table)):
        before = table.previous_sibling()
        if isinstance(before, addnodes.tabular_col_spec):
            continue  # the page gave its own (``tabularcolumns``)
        rows = list(table.findall(nodes.row))
        cells = [[e.astext() for e in row.findall(nodes.entry)] for row in rows]
        if not cells or len({len(r) for r in cells}) != 1:
            continue  # spanning cells: left as they are
        right = [_is_right(e) for e in rows[-1].findall(nodes.entry)]
        fitted = column_widths(cells, right)
        if fitted is None:
            continue
        size, widths = fitted
        spec = "".join(
            _column(w / sum(widths), size, r) for w, r in zip(widths, right, strict=True)
        )
        for entry in table.findall(nodes.entry):
            _breakable(entry)
        table.parent.insert(table.parent.index(table), addnodes.tabular_col_spec(spec=spec))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("roofline_web_only", (), "env", tuple)
    app.connect("doctree-read", _book_root)
    app.connect("doctree-resolved", fit_wide_tables)
    app.connect("doctree-resolved", _unlink_web_only)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
