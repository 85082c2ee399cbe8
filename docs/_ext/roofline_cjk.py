"""Chinese prose wrapped across source lines reads without a stray space on the site.

A MyST paragraph keeps the line breaks of its source; a browser shows each one as a space,
and Chromium does so even between two Chinese characters ("写一遍。 它在"). This transform
drops a line break (and the indentation after it) that sits between two CJK characters in
the HTML build's running text. Code, math and raw HTML are left alone; LaTeX (xeCJK) already
joins such lines, so the PDF needs nothing.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

_CJK = r"\u2e80-\u2fff\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_JOIN = re.compile(rf"(?<=[{_CJK}])[ \t]*\n[ \t]*(?=[{_CJK}])")
_SKIP = (nodes.literal_block, nodes.literal, nodes.math, nodes.math_block, nodes.raw)


def join_cjk_lines(text: str) -> str:
    """``text`` with each line break between two CJK characters removed.

    >>> join_cjk_lines("写一遍。\\n它在 GPU\\n上跑")
    '写一遍。它在 GPU\\n上跑'
    """
    return _JOIN.sub("", text)


class JoinCJKLines(SphinxPostTransform):
    """Removes the line breaks between CJK characters from the page's running text."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for text in list(self.document.findall(nodes.Text)):
            if "\n" not in text or any(isinstance(a, _SKIP) for a in _ancestors(text)):
                continue
            parent = text.parent
            # Text is a str: list.index would find the first equal node, not this one
            i = next(k for k, child in enumerate(parent.children) if child is text)
            if not str(text).strip():
                # MyST writes a soft line break as a Text node of its own: look at its neighbours
                before = next((c.astext() for c in reversed(parent.children[:i]) if c.astext()), "")
                after = next((c.astext() for c in parent.children[i + 1 :] if c.astext()), "")
                joined = join_cjk_lines(before[-1:] + str(text) + after[:1])[1:-1]
                if before and after and joined != str(text):
                    _put(parent, i, joined)
                continue
            joined = join_cjk_lines(str(text))
            if joined != str(text):
                _put(parent, i, joined)


def _put(parent: nodes.Element, i: int, text: str) -> None:
    new = nodes.Text(text)
    new.parent = parent
    parent.children[i] = new


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    out = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(JoinCJKLines)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
