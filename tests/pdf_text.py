"""The body text of the book's PDF: each page without its running head and foot, pages joined.

A sentence that runs across a page break must read in the PDF as on the site, whatever the
order in which the PDF's text reader returns a page's lines: the running head
(``Roofline Book, 发行版本 0.1.0``), the running foot (``9.4. 在这台机器上实测 53``, or the
page label alone on a chapter's first page) and blank lines are taken out wherever they stand.
"""

from __future__ import annotations

import re
import unicodedata

RUNNING_HEAD = re.compile(r"^Roofline Book, 发行版本 \S+$")
_SECTION_FOOT = re.compile(r"^[0-9A-Z]+(\.\d+)+\.\s.*\S\s(?P<label>\S+)$")  # "8.3. 精度：…… 43"
#: A lone page label is only a foot among a page's first or last lines (a table cell elsewhere
#: may hold the same number).
_EDGE = 2


def squeeze(text: str) -> str:
    """No blanks (CJK lines break anywhere), ligatures such as ﬀ spelt out (NFKC)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def _is_foot(line: str, label: str, edge: bool) -> bool:
    match = _SECTION_FOOT.match(line)
    if match and match["label"] == label:
        return True
    return edge and line == label


def body_lines(lines: list[str], label: str) -> list[str]:
    """A page's lines without blanks, its running head and its running foot.

    Parameters
    ----------
    lines : list of str
        The page's text lines as the PDF reader returns them.
    label : str
        The page's label (its printed page number: ``"53"``, ``"iii"``).
    """
    kept = [line.strip() for line in lines if line.strip()]
    last = len(kept) - 1
    return [
        line
        for i, line in enumerate(kept)
        if not RUNNING_HEAD.match(line)
        and not _is_foot(line, label, edge=i < _EDGE or i > last - _EDGE)
    ]


def body_text(pages: list[tuple[list[str], str]]) -> str:
    """The squeezed text of pages given as (lines, label), heads and feet out, breaks joined."""
    return squeeze("".join("\n".join(body_lines(lines, label)) for lines, label in pages))


def glued_in(text: str, before: str, value: str, after: str) -> bool:
    """Whether a glued value stands in ``text`` beside the words it has on the site.

    A figure or table that LaTeX floats to a page's top or bottom can fall between a
    sentence's words, so the value must stand against its words on one side at least:
    the words before it, or the words after it (each at least two characters, so a lone
    punctuation mark does not count); a value with no such neighbour on either side must
    still appear.
    """
    sides = [words for words in (before + value, value + after) if len(words) - len(value) >= 2]
    return any(words in text for words in sides) if sides else value in text
