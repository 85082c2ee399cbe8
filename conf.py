"""Sphinx configuration of the book. The source is docs/; this file stays at the root."""

from __future__ import annotations

import ast
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the package, for autodoc
sys.path.insert(0, str(ROOT / "docs" / "_ext"))  # the book's extension


def _version() -> str:
    """``roofline_book.__version__``, read from its source as setuptools reads it: a
    rebuild with nothing to read then never imports the package (and NumPy)."""
    tree = ast.parse((ROOT / "roofline_book" / "__init__.py").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise RuntimeError("roofline_book/__init__.py assigns no __version__")


project = "Roofline Book"
author = "roofline-book contributors"
copyright = "2026, roofline-book contributors"
release = _version()
language = "zh_CN"
root_doc = "index"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_copybutton",
    "sphinx_design",
    "sphinxcontrib.bibtex",
    "roofline_build",
    "roofline_calculator",
    "roofline_notebooks",
    "roofline_pdf",
    "roofline_fonts",
    "roofline_stderr",
    "roofline_cjk",
]
bibtex_bibfiles = ["docs/references.bib"]
bibtex_default_style = "plain"
bibtex_reference_style = "author_year"

exclude_patterns = ["search-words.txt", "_build", "**.ipynb_checkpoints", "data/*", "**/README.md"]

# -- MyST and notebooks -------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3
numfig = True
math_numfig = True
math_eqref_format = "({number})"
numfig_format = {"figure": "图 %s", "table": "表 %s", "code-block": "代码 %s"}

nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / ".jupyter_cache")
nb_execution_raise_on_error = True
nb_execution_timeout = 300
# Stderr never reaches a page: docs/_ext/roofline_stderr.py fails the build on any cell that
# wrote to it, naming the page, the cell and the first line.
nb_output_stderr = "remove"
nb_merge_streams = True
# Markdown a cell displays (the claims checklist, the run tables) is parsed as MyST, so its
# pipe tables render as tables
nb_render_markdown_format = "myst"
nb_execution_show_tb = True
# A folded cell's toggle speaks Chinese, as the rest of the page does.
nb_code_prompt_show = "显示代码"
nb_code_prompt_hide = "隐藏代码"

# -- The book's extension (docs/_ext/roofline_build.py) ------------------------
# Before any notebook runs, a build measures this machine's CPU into a quick run
# file (if it is missing); the pages that read it are executed again when it is
# newer than their cached outputs.
roofline_root = str(ROOT)
roofline_cpu_run = str(ROOT / "_build" / "bench" / "cpu-quick.json")
# GPU run files copied into the repository; the CUDA appendix shows each one.
roofline_gpu_runs = str(ROOT / "docs" / "data")
roofline_run_pages = (
    "10-achieved-performance.md",
    "11-profiling.md",
    "12-inference-prefill-decode.md",
    "cuda-benchmarks.md",
)

# -- API reference ------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_preprocess_types = True
# Names in docstring type fields that have no page in this book (no intersphinx offline).
nitpick_ignore_regex = [
    ("py:class", r"(torch|numpy|matplotlib|pandas|collections\.abc)\..*"),
    ("py:class", r"Precision|optional|array_like|matplotlib artists|mapping|default .*"),
    ("py:class", r"(os|pathlib|argparse)\..*|callable|sequence|path|Cost|set of int"),
    ("py:(data|func|exc|class)", r"os\..*"),
]

# -- HTML ---------------------------------------------------------------------
html_theme = "sphinx_book_theme"
SUBTITLE = "为什么不能只看 FLOPs"
html_title = f"{project}：{SUBTITLE}"
# MathJax is served from the site itself (make fetches it from the npm registry), so
# math renders with no network.
# The calculator page's Pyodide, wheels and manifest (docs/_ext/roofline_calculator.py) are
# served the same way, under _static/calculator/.
roofline_calculator = str(ROOT / "_build" / "calculator")
html_static_path = ["docs/_static", str(ROOT / "_build" / "mathjax"), roofline_calculator]
html_favicon = "docs/_static/favicon.svg"
# The interface in Chinese: the theme's words from docs/locales (Sphinx's default locale_dirs),
# the search page's status line from this script.
html_js_files = ["roofline-words.js"]
# The whole book as one PDF (make pdf copies it into the site); the footer of every
# page links it (docs/_templates/pdf-download.html).
PDF_NAME = "roofline-book.pdf"
templates_path = ["docs/_templates"]
mathjax_path = "mathjax/tex-chtml.js"
# Where the sources are published; a fork sets ROOFLINE_REPO_URL to its own.
REPO_URL = os.environ.get("ROOFLINE_REPO_URL", "https://github.com/roofline-book/roofline-book")
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
    "home_page_in_toc": True,
    "repository_url": REPO_URL,
    "repository_branch": "main",
    "path_to_docs": "docs",
    "use_repository_button": True,
    "use_edit_page_button": True,
    "use_source_button": True,
    "use_issues_button": True,
    "footer_content_items": [
        "author.html",
        "copyright.html",
        "last-updated.html",
        "extra-footer.html",
        "pdf-download.html",
    ],
}
# Follow the reader's system setting; an empty mode makes the theme log a console error.
html_context = {"default_mode": "auto", "pdf_name": PDF_NAME}
# No general index page: no page of the theme links it (only a <link rel="index"> in the
# head), the search finds every API name, and writing it costs every build about a second.
html_use_index = False
html_search_language = "zh"
# jieba splits 算术强度 into 算术 + 强度; the user dictionary keeps the whole term
# too, so a reader who types the term finds the page.
html_search_options = {"dict": str(ROOT / "docs" / "search-words.txt")}
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

# -- PDF (make pdf: the LaTeX builder, XeLaTeX, xeCJK) --------------------------
# The same sources, cache and conf as the site: `make pdf` after `make html` runs no
# notebook again. The glued SVG figures become vector PDFs through rsvg-convert
# (sphinxcontrib-svg2pdfconverter, Debian's librsvg2-bin); their text is drawn with the
# font files matplotlib laid it out with, which the body uses too (docs/_ext/roofline_fonts.py).
extensions.append("sphinxcontrib.rsvgconverter")
# myst-nb's LaTeX priorities know no SVG: without this a figure prints its text/plain repr.
nb_mime_priority_overrides = [("latex", "image/svg+xml", 15)]
latex_engine = "xelatex"
LATEX = ROOT / "docs" / "_latex"  # the TeX that latex_elements reads: fonts, preamble, cover
latex_documents = [
    (root_doc, PDF_NAME.replace(".pdf", ".tex"), project, author, "manual", False),
]
# docs/_ext/roofline_pdf.py gives the root page a book's shape: an unnumbered preface,
# the chapters numbered as on the site, the appendices lettered.
# Pages only the site has: the calculator runs the package in the reader's browser.
roofline_web_only = ("calculator",)
latex_show_urls = "no"
latex_show_pagerefs = False
latex_elements = {
    "papersize": "a4paper",
    "pointsize": "10pt",
    # Read on a screen: no blank left-hand pages before chapters.
    "extraclassoptions": "openany,oneside",
    "fontpkg": (LATEX / "fonts.tex").read_text(encoding="utf-8"),
    "fncychap": "",
    "preamble": (LATEX / "preamble.tex").read_text(encoding="utf-8"),
    # The cover: title, subtitle, a roofline drawn in the figures' blue (Okabe-Ito).
    # percent-format: str.format would need every brace of the TeX doubled
    "maketitle": (LATEX / "cover.tex").read_text(encoding="utf-8")  # noqa: UP031
    % {"project": project, "subtitle": SUBTITLE, "author": author, "release": release},
    "sphinxsetup": "verbatimwrapslines=true, verbatimforcewraps=true, hmargin={2.2cm,2.2cm}",
    # No general index: the API appendix and the site's search serve that.
    "makeindex": "",
    "printindex": "",
}
latex_use_xindy = False
latex_domain_indices = False
