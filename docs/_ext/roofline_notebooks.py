"""Notebook execution for the book: every page Sphinx will read that has no cached
outputs is executed before the read, as many at once as the build has processes
(``-j``), the longest first; the read then takes each page from jupyter-cache.

myst-nb executes a notebook while its page is read, and Sphinx hands pages to its
reader processes in fixed alphabetical batches, so the slow pages fall to one
process while the other idles. Here a queue keeps every process busy until the
last notebook is done. This module adds only the queue: each page is executed by
myst-nb's own cache client (``myst_nb.core.execute.NotebookClientCache``), which
honours every execution option (``nb_execution_in_temp``,
``nb_execution_allow_errors``, ``nb_execution_timeout``, a notebook's own
``execution:`` metadata), caches the outputs and records a failure's traceback
in the cache's database, exactly as it would during the read.

A kernel is stopped at once when its notebook has run, where a polite shutdown of
an ipykernel 7 kernel waits 2.5 s about one time in three before it is killed
anyway (:func:`_immediate_shutdown`). A kernel that never came up is started once more
(:func:`_never_started`): the TCP ports jupyter-client picks for it are free only until
something else takes them, and with two kernels starting at once, or a page running
torch.distributed (section 15's collectives), a kernel can find a port taken and die
before it answers; nothing of its page has run then, so running it again is safe.
How long each page ran is remembered next to the cache (``roofline-durations.json``)
to order the next build; a page never run here is guessed from what it is (see
:func:`_expected_seconds`).

Every page that fails is reported, each with its cell's error, once the pages
that ran are in the cache; the build then stops, as ``nb_execution_raise_on_error``
asks. With that option off, myst-nb runs a failed page again during the read and
shows the traceback in its usual way.

Written against myst-nb 1.4 and jupyter-cache 1.0 (:data:`SUPPORTED`): the
extension refuses other versions with a clear error rather than misbehave.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging as std_logging
import pathlib
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import PurePosixPath
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

DURATIONS = "roofline-durations.json"
"""Seconds each page took when last executed, in the cache folder."""

SUPPORTED = {"myst-nb": ((1, 4), (1, 5)), "jupyter-cache": ((1, 0), (1, 1))}
"""The versions this module was written against: at least the first, below the second. It
calls myst-nb's reader and cache client and patches the kernel shutdown of its execution."""


def _check_versions() -> None:
    for name, (lowest, above) in SUPPORTED.items():
        found = version(name)
        release = tuple(int(p) for p in re.findall(r"\d+", found)[:2])
        if not lowest <= release < above:
            wanted = f">={'.'.join(map(str, lowest))},<{'.'.join(map(str, above))}"
            raise ExtensionError(
                f"roofline_notebooks needs {name}{wanted} (its reader and cache client), "
                f"found {found}: install the versions in requirements.txt"
            )


@dataclass
class _Job:
    docname: str
    path: pathlib.Path
    notebook: Any
    read_fmt: dict[str, Any] | None
    expected: float
    seconds: float = 0.0
    error: BaseException | None = None


_IMPORTS_TORCH = re.compile(r"^\s*(import [\w., ]*\btorch\b|from torch\b)", re.MULTILINE)


def _expected_seconds(
    app: Sphinx, path: pathlib.Path, text: str, remembered: dict[str, float]
) -> float:
    """The page's last execution time here; for a page never executed here, a guess
    from what slows one down: 2 s to start a kernel and import the package, 4 s more
    if a cell imports torch, 5 s more if the page reads the run file (it measures or
    draws it), and 1 s for each 20 kB of source."""
    key = str(path.relative_to(app.srcdir))
    if key in remembered:
        return remembered[key]
    guess = 2.0 + len(text.encode()) / 20_000
    if _IMPORTS_TORCH.search(text):
        guess += 4.0
    if path.name in getattr(app.config, "roofline_run_pages", ()):
        guess += 5.0
    return guess


def _jobs(
    app: Sphinx, env: Any, docnames: list[str], cache: Any, remembered: dict[str, float]
) -> list[_Job]:
    """The pages to execute, the longest expected first: read with myst-nb's own reader, so
    the notebook (and so its cache hash) is the one the read will look up."""
    from myst_nb.core.read import create_nb_reader

    nb_config = env.mystnb_config
    jobs = []
    for docname in docnames:
        path = pathlib.Path(env.doc2path(docname))
        if path.suffix != ".md" or not path.is_file():
            continue
        text = path.read_text("utf-8")
        if "{code-cell}" not in text:
            continue
        if any(
            PurePosixPath(path.as_posix()).match(p) for p in nb_config.execution_excludepatterns
        ):
            continue
        reader = create_nb_reader(str(path), env.myst_config, nb_config, text)
        if reader is None:
            continue
        notebook = reader.read(text)
        try:
            cache.match_cache_notebook(notebook)
            continue  # cached: the read takes it from there
        except KeyError:
            pass
        expected = _expected_seconds(app, path, text, remembered)
        jobs.append(_Job(docname, path, notebook, reader.read_fmt, expected))
    return sorted(jobs, key=lambda j: -j.expected)


class _PageLogger(std_logging.LoggerAdapter):
    """What myst-nb's client logs about one page: its progress at Sphinx's verbose level
    (``-v``), its warnings as myst-nb's own (``mystnb.exec``), located at the page."""

    def __init__(self, docname: str) -> None:
        super().__init__(logger, {})
        self.docname = docname

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        kwargs.setdefault("location", self.docname)
        kwargs.setdefault("type", "mystnb")
        return msg, kwargs

    def info(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        self.log(logging.VERBOSE, msg, *args, **kwargs)


@contextlib.contextmanager
def _immediate_shutdown() -> Iterator[None]:
    """While the queue runs, myst-nb's client stops each kernel at once when its notebook
    is done (nbclient's ``shutdown_kernel="immediate"``): the client passes no options of
    its own to ``single_nb_execution``, so it is given one with this option bound."""
    from myst_nb.core.execute import cache as client_module

    original = client_module.single_nb_execution
    client_module.single_nb_execution = functools.partial(
        original, shutdown_kernel="immediate", startup_timeout=STARTUP_TIMEOUT
    )
    try:
        yield
    finally:
        client_module.single_nb_execution = original


STARTUP_TIMEOUT = 30
"""Seconds a kernel has to answer after it is started (nbclient's default is 60); one that
does not is started once more (:func:`_never_started`)."""


def _never_started(exc: BaseException) -> bool:
    """Whether ``exc`` is jupyter-client's word that the kernel never answered its first
    request: it died at start (a port taken) or did not come up in time."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "Kernel didn't respond" in text or "Kernel died before replying to kernel_info" in text
    )


def _execute_one(job: _Job, nb_config: Any) -> None:
    """Run one page through myst-nb's cache client, as the read would: on success its
    outputs are in the cache; on failure the error is kept on the job."""
    from myst_nb.core.execute import NotebookClientCache

    start = time.perf_counter()
    for attempt in (1, 2):
        try:
            client = NotebookClientCache(
                job.notebook, job.path, nb_config, _PageLogger(job.docname), read_fmt=job.read_fmt
            )
            with client:
                pass
            metadata = client.exec_metadata or {}
            if metadata.get("error"):  # failed cells, with nb_execution_raise_on_error off
                job.error = RuntimeError(metadata.get("traceback") or metadata["error"])
        except Exception as exc:  # a failing cell, a timeout, a kernel that died
            if attempt == 1 and _never_started(exc):
                logger.info(
                    "%s: its kernel never answered (%s); starting it again", job.docname, exc
                )
                continue
            job.error = exc
        break
    job.seconds = time.perf_counter() - start
    state = "failed" if job.error else "executed"
    logger.info("%s: %s in %.2f s", job.docname, state, job.seconds)


def _run(jobs: list[_Job], processes: int, nb_config: Any) -> None:
    """Every job, ``processes`` at a time, started in the order given (the queue is FIFO)."""
    with _immediate_shutdown(), ThreadPoolExecutor(max_workers=processes) as pool:
        for future in [pool.submit(_execute_one, job, nb_config) for job in jobs]:
            future.result()


def _failure(job: _Job) -> str:
    """One failed page: its path, the error's kind, and the error (for a failing cell,
    nbclient's text: the cell's source and traceback)."""
    error = job.error
    cause = error.__cause__ if error is not None and error.__cause__ is not None else error
    return f"{job.path}: executing the notebook failed ({type(cause).__name__})\n{cause}"


def _execute(app: Sphinx, env: Any, docnames: list[str]) -> None:
    from jupyter_cache import get_cache

    nb_config = getattr(env, "mystnb_config", None)
    if nb_config is None or nb_config.execution_mode != "cache":
        return
    folder = nb_config.execution_cache_path or ".jupyter_cache"
    cache = get_cache(folder)
    durations = pathlib.Path(folder) / DURATIONS
    remembered = json.loads(durations.read_text()) if durations.is_file() else {}
    jobs = _jobs(app, env, docnames, cache, remembered)
    if not jobs:
        return
    processes = max(1, app.parallel)
    logger.info("executing %d notebooks, %d at a time ...", len(jobs), processes)
    start = time.perf_counter()
    _run(jobs, processes, nb_config)
    logger.info("notebooks executed in %.1f s", time.perf_counter() - start)
    for job in jobs:  # every page that ran is kept, even when another one failed
        if job.error is None:
            remembered[str(job.path.relative_to(app.srcdir))] = round(job.seconds, 2)
    durations.write_text(json.dumps(remembered, indent=1, sort_keys=True) + "\n")
    failed = [job for job in jobs if job.error is not None]
    if failed and nb_config.execution_raise_on_error:
        raise ExtensionError(
            f"{len(failed)} of {len(jobs)} notebooks failed:\n\n"
            + "\n\n".join(_failure(job) for job in failed)
        )
    # with the option off, myst-nb executes a failed page again during the read and shows
    # the traceback


def setup(app: Sphinx) -> dict[str, Any]:
    _check_versions()
    # after myst-nb and myst-parser have put their configuration on the environment
    app.connect("env-before-read-docs", _execute)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
