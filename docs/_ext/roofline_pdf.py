"""The PDF's shape: the root page's preface, chapters and appendices as a book has them.

On the site, index.md is a page of its own: a preface in a few ``##`` sections,
then two toctrees (正文, numbered; 附录). The LaTeX builder inlines each toctree
where it stands, so left alone the preface's sections would become chapters 1-4
and the book's chapters sections inside the last of them. For the LaTeX builder
only, ``doctree-read`` rebuilds the root page as a book:

- the text before the toctrees becomes one unnumbered chapter, 前言, whose
  sections are the page's ``##`` sections (numbering off, ``\\booknumberingoff``
  and ``\\booknumberingon`` from conf.py's preamble), so the chapters keep the
  site's numbers 1, 2, ...;
- the toctrees follow at the top level, so each page they list is a chapter;
- ``\\appendix`` goes before the toctree whose entries all live under
  ``appendix/``, so those pages are lettered appendices (A, B, ...).

Every other builder gets the page as written.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

PREFACE = "前言"


def _raw(tex: str) -> nodes.raw:
    return nodes.raw("", tex + "\n", format="latex")


def _is_appendix(wrapper: nodes.Element) -> bool:
    entries = [
        ref for toctree in wrapper.findall(addnodes.toctree) for _t, ref in toctree["entries"]
    ]
    return bool(entries) and all(ref.startswith("appendix/") for ref in entries)


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
        if _is_appendix(wrapper):
            root += _raw(r"\appendix")
        root += wrapper


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", _book_root)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
