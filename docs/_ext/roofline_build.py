"""The book's Sphinx extension: what a build does before and around the notebooks.

- ``config-inited``: the notebook kernels' environment (the repository root on
  ``PYTHONPATH``, a quiet IPython profile inside the build folder, the path of
  the CPU run), and a check that MathJax was installed (``make mathjax``).
- ``builder-inited``: compiles the package's bytecode; creates the jupyter-cache
  database (with ``-j``, workers would race to create it); measures this
  machine's CPU into the quick run file if it is missing, before any kernel
  starts, so nothing else competes for the cores while it is timed; and drops
  the cached outputs of the pages that read the runs when a run (the CPU's, or
  a GPU's in ``docs/data``) is newer than them, and of every page when the
  package's sources differ from those the cache was executed with (a digest of
  their content, :func:`package_digest`), so prose, run and code agree
  (``env-get-outdated`` makes Sphinx read those pages again).
- Notebooks are executed by the companion extension ``roofline_notebooks``
  (before the read, one per build process, the longest first).
- Chinese search (``html_search_language = "zh"``) loads jieba's dictionary
  (about 1 s) on the first page it indexes, not when the builder starts: a
  rebuild that writes no page does without it.
- ``html-page-context``: writes each executed notebook (``.ipynb``, outputs
  included) beside the page's source, for the theme's download button.

Configuration values (set in conf.py): ``roofline_root`` (the repository root),
``roofline_cpu_run`` (the run file), ``roofline_gpu_runs`` (the folder of GPU
run files, passed to the kernels as ``$ROOFLINE_GPU_RUNS``) and
``roofline_run_pages`` (pages that read them).
"""

from __future__ import annotations

import datetime
import hashlib
import os
import pathlib
import subprocess
import sys
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.util import logging

logger = logging.getLogger(__name__)

_KERNEL_CONFIG = 'c.IPKernelApp.log_level = "ERROR"\nc.HistoryManager.enabled = False\n'


def _kernel_environment(app: Sphinx, config: Config) -> None:
    root = pathlib.Path(config.roofline_root)
    # Notebook kernels start in docs/; they must import the package from the repo root.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p
    )
    # Quiet kernels: anything a cell writes to stderr fails the build.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # No history database, and no start-up log lines (the local TCP transport notice).
    profile = root / "_build" / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(_KERNEL_CONFIG)
    os.environ["IPYTHONDIR"] = str(profile.parent)
    os.environ["ROOFLINE_CPU_RUN"] = str(config.roofline_cpu_run)
    # Kernels run in their page's folder: the GPU runs' folder is passed as the CPU run is.
    os.environ["ROOFLINE_GPU_RUNS"] = str(config.roofline_gpu_runs)
    mathjax = root / "_build" / "mathjax"
    if not (mathjax / "mathjax" / "tex-chtml.js").is_file():
        raise ConfigError(f"{mathjax}/mathjax is missing: run `make html` (or `make mathjax`)")


def _measure_cpu(run: pathlib.Path, root: pathlib.Path) -> None:
    run.parent.mkdir(parents=True, exist_ok=True)
    logger.info("measuring this CPU (quick suite) into %s ...", run)
    command = [sys.executable, "-m", "roofline_book", "bench", "--device", "cpu", "--quick"]
    subprocess.run(
        [*command, "--no-progress", "--out", str(run)],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=root,
    )


_PACKAGE_FILES = (".py", ".toml", ".json", ".mplstyle")


def _compile_package(root: pathlib.Path) -> None:
    """Bytecode for the package before the bench and the kernels import it: where
    ``PYTHONDONTWRITEBYTECODE`` is set, each of them would compile it from source again
    (about 0.25 s a process). Python still checks each file against its source."""
    import compileall

    compileall.compile_dir(str(root / "roofline_book"), quiet=1)


PACKAGE_DIGEST = "roofline-package.sha256"
"""The digest of the package's sources the cached pages were executed with, in the cache
folder."""


def package_digest(package: pathlib.Path) -> str:
    """SHA-256 over the package's sources (code, data, style), each file's path relative to
    ``package`` and its bytes, in path order: it changes when the content does, not when a
    checkout or a copy touches the files' times."""
    digest = hashlib.sha256()
    files = sorted(
        f
        for f in package.rglob("*")
        if f.suffix in _PACKAGE_FILES and f.is_file() and "__pycache__" not in f.parts
    )
    for f in files:
        digest.update(f.relative_to(package).as_posix().encode() + b"\0")
        digest.update(f.read_bytes() + b"\0")
    return digest.hexdigest()


def _package_changed(app: Sphinx, folder: pathlib.Path) -> bool:
    """Whether the package's content differs from the one the cached pages ran with; records
    the current digest for the next build."""
    stored = folder / PACKAGE_DIGEST
    current = package_digest(pathlib.Path(app.config.roofline_root) / "roofline_book")
    previous = stored.read_text().strip() if stored.is_file() else None
    if previous != current:
        folder.mkdir(parents=True, exist_ok=True)
        stored.write_text(current + "\n")
    return previous != current


def _runs_changed(app: Sphinx) -> float:
    """When the runs the run pages read last changed: the CPU run file, and each GPU run in
    its folder (the folder's own time changes when a file is added or removed)."""
    run = pathlib.Path(app.config.roofline_cpu_run)
    times = [run.stat().st_mtime]
    gpu = pathlib.Path(app.config.roofline_gpu_runs) if app.config.roofline_gpu_runs else None
    if gpu is not None and gpu.is_dir():
        times += [gpu.stat().st_mtime, *(f.stat().st_mtime for f in gpu.glob("*.json"))]
    return max(times)


def _prepare(app: Sphinx) -> None:
    from jupyter_cache import get_cache

    _compile_package(pathlib.Path(app.config.roofline_root))
    _DROPPED.clear()  # a second build in the same process starts afresh

    cache = get_cache(app.config.nb_execution_cache_path)
    records = cache.list_cache_records()  # creates the database
    run = pathlib.Path(app.config.roofline_cpu_run)
    if not run.exists():
        _measure_cpu(run, pathlib.Path(app.config.roofline_root))
    measured = _runs_changed(app)
    # a page executed with other package sources (models, data or figures) shows what the
    # old code said: run every page again
    stale = _package_changed(app, pathlib.Path(app.config.nb_execution_cache_path))
    for record in records:
        created = record.created  # stored as naive UTC
        if created.tzinfo is None:
            created = created.replace(tzinfo=datetime.timezone.utc)  # noqa: UP017
        reads_run = record.uri.endswith(tuple(app.config.roofline_run_pages))
        if stale or (reads_run and created.timestamp() < measured):
            cache.remove_cache(record.pk)
            source = pathlib.Path(record.uri)
            if source.is_relative_to(app.srcdir):
                _DROPPED.add(str(source.relative_to(app.srcdir).with_suffix("")))
    # a notebook page without a cached execution (dropped by an earlier build) must run too
    cached = {pathlib.Path(r.uri) for r in cache.list_cache_records()}
    for page in pathlib.Path(app.srcdir).rglob("*.md"):
        if page not in cached and "{code-cell}" in page.read_text("utf-8"):
            _DROPPED.add(str(page.relative_to(app.srcdir).with_suffix("")))


#: Pages whose cached outputs were dropped: Sphinx must read them again, or an unchanged
#: page keeps its old doctree (and its old numbers).
_DROPPED: set[str] = set()


def _outdated(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]):
    return sorted(d for d in _DROPPED if d in env.found_docs and d not in changed | added)


def _offer_ipynb(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Write the executed notebook of a MyST page into _sources and let the theme link it.

    myst-nb's copy in jupyter_execute/ holds the cells; in cache mode the
    outputs live in the cache, so they are merged back in here.
    """
    import nbformat
    from jupyter_cache import get_cache

    executed = pathlib.Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    notebook = nbformat.read(executed, as_version=4)
    if not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code"):
        try:
            cache = get_cache(app.config.nb_execution_cache_path)
            _, notebook = cache.merge_match_into_notebook(notebook)
        except KeyError:  # not in the cache (e.g. executed with nb_execution_mode=force)
            pass
    target = pathlib.Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def _lazy_chinese_search() -> type:
    from sphinx.search.zh import SearchChinese

    class LazyChinese(SearchChinese):
        """Sphinx's Chinese search, its dictionary loaded when a page is first split."""

        def init(self, options: dict[str, str]) -> None:
            self._options, self._loaded = options, False
            import snowballstemmer

            self.stemmer = snowballstemmer.stemmer("english")

        def split(self, input: str) -> list[str]:  # noqa: A002 - Sphinx's name
            if not self._loaded:
                super().init(self._options)
                self._loaded = True
            return super().split(input)

    return LazyChinese


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_search_language(_lazy_chinese_search())
    app.add_config_value("roofline_root", "", "env", str)
    app.add_config_value("roofline_cpu_run", "", "env", str)
    app.add_config_value("roofline_run_pages", (), "env", tuple)
    app.add_config_value("roofline_gpu_runs", "", "env", str)
    app.connect("config-inited", _kernel_environment)
    app.connect("builder-inited", _prepare)
    app.connect("env-get-outdated", _outdated)
    # before the theme builds its header buttons from the page context
    app.connect("html-page-context", _offer_ipynb, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
