"""Sphinx configuration of the book. The source is docs/; this file stays at the root."""

from __future__ import annotations

import datetime
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
# Notebook kernels start in docs/; they must import the package from the repo root.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)
# Quiet kernels: anything a cell writes to stderr fails the build.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
# Kernels read their settings from a profile inside the build folder: no history
# database, and no start-up log lines (the local TCP transport notice) in the build log.
_IPYTHONDIR = ROOT / "_build" / "ipython"
(_IPYTHONDIR / "profile_default").mkdir(parents=True, exist_ok=True)
(_IPYTHONDIR / "profile_default" / "ipython_kernel_config.py").write_text(
    'c.IPKernelApp.log_level = "ERROR"\nc.HistoryManager.enabled = False\n'
)
os.environ["IPYTHONDIR"] = str(_IPYTHONDIR)

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

# With -j, workers race to create a fresh cache database: create it here first.
from jupyter_cache import get_cache  # noqa: E402

_cache = get_cache(nb_execution_cache_path)
_cache.list_cache_records()

# -- This machine's CPU, measured at every fresh build -------------------------
# The achieved-performance chapter and the benchmark appendix read a quick CPU
# run. It is measured here, before any notebook runs, so no other kernel
# competes for the cores while it is timed. A notebook whose cached outputs
# are older than the run file is executed again, so prose and run agree.
CPU_RUN = ROOT / "_build" / "bench" / "cpu-quick.json"
os.environ["ROOFLINE_CPU_RUN"] = str(CPU_RUN)
if not CPU_RUN.exists():
    import subprocess

    CPU_RUN.parent.mkdir(parents=True, exist_ok=True)
    print(f"measuring this CPU (quick suite) into {CPU_RUN} ...")
    subprocess.run(
        [sys.executable, "-m", "roofline_book", "bench", "--device", "cpu", "--quick",
         "--no-progress", "--out", str(CPU_RUN)],
        check=True, stdout=subprocess.DEVNULL, cwd=ROOT,
    )
_run_time = CPU_RUN.stat().st_mtime
for _record in _cache.list_cache_records():
    _created = _record.created  # stored as naive UTC
    if _created.tzinfo is None:
        _created = _created.replace(tzinfo=datetime.timezone.utc)
    if _record.uri.endswith(("09-achieved-performance.md", "cuda-benchmarks.md")) and (
        _created.timestamp() < _run_time
    ):
        _cache.remove_cache(_record.pk)

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
    ("py:class", r"(os|pathlib|argparse)\..*|callable|sequence|path|Cost"),
    # bench and claims are documented by their entry points only
    ("py:class", r"(roofline_book\.(bench|claims)\.)?(Suite|Prepared|Figure|Check|Case)"),
    ("py:(data|func|exc|class)", r"(roofline_book\.)?(bench|runfile|claims)?\.?[A-Z_]+|os\..*"),
]

# -- HTML ---------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "Roofline Book：为什么不能只看 FLOPs"
# MathJax is served from the site itself (make fetches it from the npm registry), so
# math renders with no network.
MATHJAX_DIR = ROOT / "_build" / "mathjax"
if not (MATHJAX_DIR / "mathjax" / "tex-chtml.js").is_file():
    raise RuntimeError(f"{MATHJAX_DIR}/mathjax is missing: build with `make html` (or `make mathjax`)")
html_static_path = ["docs/_static", str(MATHJAX_DIR)]
html_favicon = "docs/_static/favicon.svg"
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
}
# Follow the reader's system setting; an empty mode makes the theme log a console error.
html_context = {"default_mode": "auto"}
html_search_language = "zh"
# jieba splits 算术强度 into 算术 + 强度; the user dictionary keeps the whole term
# too, so a reader who types the term finds the page.
html_search_options = {"dict": str(ROOT / "docs" / "search-words.txt")}
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# -- Download buttons: the executed notebook (.ipynb) beside the MyST source --
def _offer_ipynb(app, pagename, templatename, context, doctree):
    """Write the executed notebook of a MyST page into _sources and let the theme link it.

    myst-nb's copy in jupyter_execute/ holds the cells; in cache mode the
    outputs live in the cache, so they are merged back in here.
    """
    import nbformat

    executed = pathlib.Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    notebook = nbformat.read(executed, as_version=4)
    if not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code"):
        try:
            _, notebook = get_cache(nb_execution_cache_path).merge_match_into_notebook(notebook)
        except KeyError:  # not in the cache (e.g. executed with nb_execution_mode=force)
            pass
    target = pathlib.Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app):
    # before the theme builds its header buttons from the page context
    app.connect("html-page-context", _offer_ipynb, priority=400)
