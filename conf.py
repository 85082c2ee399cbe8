"""Sphinx configuration of the book. The source is docs/; this file stays at the root."""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the package, for autodoc
sys.path.insert(0, str(ROOT / "docs" / "_ext"))  # the book's extension

import roofline_book  # noqa: E402

project = "Roofline Book"
author = "roofline-book contributors"
copyright = "2026, roofline-book contributors"
release = roofline_book.__version__
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
    "roofline_pdf",
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
nb_output_stderr = "warn"
nb_merge_streams = True
nb_execution_show_tb = True

# -- The book's extension (docs/_ext/roofline_build.py) ------------------------
# Before any notebook runs, a build measures this machine's CPU into a quick run
# file (if it is missing); the pages that read it are executed again when it is
# newer than their cached outputs.
roofline_root = str(ROOT)
roofline_cpu_run = str(ROOT / "_build" / "bench" / "cpu-quick.json")
roofline_run_pages = ("09-achieved-performance.md", "cuda-benchmarks.md")

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
    # measurement is documented by its entry points only
    ("py:class", r"(roofline_book\.measure\.\w+\.)?(Suite|Prepared|Figure|Check|Case|Operator)"),
    ("py:(data|func|exc|class|meth|mod|attr)", r"~?roofline_book\.measure\..*"),
    ("py:(data|func|exc|class)", r"(roofline_book\.)?(\w+\.)?[A-Z_]+|os\..*"),
]

# -- HTML ---------------------------------------------------------------------
html_theme = "sphinx_book_theme"
SUBTITLE = "为什么不能只看 FLOPs"
html_title = f"{project}：{SUBTITLE}"
# MathJax is served from the site itself (make fetches it from the npm registry), so
# math renders with no network.
html_static_path = ["docs/_static", str(ROOT / "_build" / "mathjax")]
html_favicon = "docs/_static/favicon.svg"
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
# (sphinxcontrib-svg2pdfconverter, Debian's librsvg2-bin); their Chinese text is drawn
# with the same Noto CJK fonts as the body.
extensions.append("sphinxcontrib.rsvgconverter")
# myst-nb's LaTeX priorities know no SVG: without this a figure prints its text/plain repr.
nb_mime_priority_overrides = [("latex", "image/svg+xml", 15)]
latex_engine = "xelatex"
latex_documents = [
    (root_doc, PDF_NAME.replace(".pdf", ".tex"), project, author, "manual", False),
]
# docs/_ext/roofline_pdf.py gives the root page a book's shape: an unnumbered preface,
# the chapters numbered as on the site, the appendices lettered.
latex_show_urls = "no"
latex_show_pagerefs = False
latex_elements = {
    "papersize": "a4paper",
    "pointsize": "10pt",
    # Read on a screen: no blank left-hand pages before chapters.
    "extraclassoptions": "openany,oneside",
    "fontpkg": r"""
\usepackage{unicode-math}
\setmainfont{TeX Gyre Pagella}
\setsansfont{TeX Gyre Heros}[Scale=MatchLowercase]
\setmonofont{DejaVu Sans Mono}[Scale=MatchLowercase]
\setmathfont{TeX Gyre Pagella Math}
% CJK has no italic: emphasis in Chinese switches to the sans face.
\setCJKmainfont{Noto Serif CJK SC}[BoldFont={Noto Serif CJK SC Bold},
  ItalicFont={Noto Sans CJK SC}, BoldItalicFont={Noto Sans CJK SC Bold}]
\setCJKsansfont{Noto Sans CJK SC}[BoldFont={Noto Sans CJK SC Bold},
  ItalicFont={Noto Sans CJK SC}]
\setCJKmonofont{Noto Sans Mono CJK SC}[ItalicFont={Noto Sans Mono CJK SC}]
% Glued numbers print powers as 10⁹: Pagella has only ¹²³, so where the current font
% lacks ⁰ every superscript digit comes from DejaVu Serif (DejaVu Sans Mono has them).
\usepackage{newunicodechar}
\newfontfamily\booksupfont{DejaVu Serif}[Scale=MatchLowercase]
\newcommand{\booksup}[1]{\iffontchar\font"2070 \char#1\relax\else{\booksupfont\char#1\relax}\fi}
\newunicodechar{⁰}{\booksup{"2070}}\newunicodechar{¹}{\booksup{"00B9}}
\newunicodechar{²}{\booksup{"00B2}}\newunicodechar{³}{\booksup{"00B3}}
\newunicodechar{⁴}{\booksup{"2074}}\newunicodechar{⁵}{\booksup{"2075}}
\newunicodechar{⁶}{\booksup{"2076}}\newunicodechar{⁷}{\booksup{"2077}}
\newunicodechar{⁸}{\booksup{"2078}}\newunicodechar{⁹}{\booksup{"2079}}
\newunicodechar{⁺}{\booksup{"207A}}\newunicodechar{⁻}{\booksup{"207B}}
""",
    "fncychap": "",
    "preamble": r"""
\usepackage{tikz}
\xeCJKsetup{CJKecglue={\hskip 0.2em plus 0.1em minus 0.05em}}
\setcounter{tocdepth}{1}
\makeatletter
% Chapters read 第 3 章, appendices A, B, ...; babel is English, so its captions are reset.
\newcommand{\bookchapterlabel}{第\,\thechapter\,章}
\g@addto@macro\appendix{\renewcommand{\bookchapterlabel}{\thechapter}}% titles say 附录
\addto\captionsenglish{\renewcommand{\contentsname}{目录}%
  \renewcommand{\bibname}{参考文献}\renewcommand{\chaptername}{}}
\renewcommand{\chaptermark}[1]{\markboth{\ifnum\c@secnumdepth>\m@ne
  \bookchapterlabel\quad\fi #1}{}}
% The preface (index.md before its toctrees) is unnumbered, as on the site.
\newcommand{\booknumberingoff}{\edef\booksecnumdepth{\the\c@secnumdepth}%
  \setcounter{secnumdepth}{-1}}
\newcommand{\booknumberingon}{\setcounter{secnumdepth}{\booksecnumdepth}}
% The bibliography, which Sphinx puts at the end, is the body of the last appendix
% (参考文献, docs/appendix/references.md): no second chapter of the same name.
\usepackage{etoolbox}
\patchcmd{\thebibliography}{\chapter*{\bibname}}{}{}{}
\patchcmd{\thebibliography}{\@mkboth{\MakeUppercase\bibname}{\MakeUppercase\bibname}}{}{}{}
\renewenvironment{sphinxthebibliography}[1]{\begin{thebibliography}{#1}}{\end{thebibliography}}
\makeatother
\titleformat{\chapter}[display]{\normalfont\sffamily\huge\bfseries}%
  {\bookchapterlabel}{0.6em}{\Huge}
""",
    # The cover: title, subtitle, a roofline drawn in the figures' blue (Okabe-Ito).
    "maketitle": r"""
\begin{titlepage}
\centering
\vspace*{0.16\textheight}
{\sffamily\bfseries\fontsize{40}{48}\selectfont %(project)s\par}
\vspace{1.5em}
{\sffamily\LARGE %(subtitle)s\par}
\vspace{3em}
\begin{tikzpicture}[line cap=round]
  \definecolor{okabeblue}{HTML}{0072B2}\definecolor{okabeorange}{HTML}{E69F00}
  \draw[->, gray] (0,0) -- (9,0) node[below left, black] {\small arithmetic intensity};
  \draw[->, gray] (0,0) -- (0,5) node[above right, black] {\small FLOP/s};
  \draw[okabeblue, line width=2.5pt] (0.3,0.4) -- (4.5,4) -- (8.7,4);
  \draw[okabeorange, dashed, line width=1pt] (4.5,0) node[below] {\small ridge point} -- (4.5,4);
  \fill[okabeorange] (1.6,1.0) circle (3pt) (7.2,3.4) circle (3pt);
\end{tikzpicture}
\vfill
{\large %(author)s\par}
\vspace{0.6em}
{\large 版本 %(release)s\par}
\vspace{0.4em}
\makeatletter{\large \@date\par}\makeatother
\end{titlepage}
"""  # noqa: UP031 (percent format: str.format would double every brace of the TeX)
    % {"project": project, "subtitle": SUBTITLE, "author": author, "release": release},
    "sphinxsetup": "verbatimwrapslines=true, verbatimforcewraps=true, hmargin={2.2cm,2.2cm}",
    # No general index: the API appendix and the site's search serve that.
    "makeindex": "",
    "printindex": "",
}
latex_use_xindy = False
latex_domain_indices = False
