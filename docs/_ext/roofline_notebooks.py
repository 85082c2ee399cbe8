"""Notebook execution for the book: every page Sphinx will read that has no cached
outputs is executed before the read, as many at once as the build has processes
(``-j``), the longest first; the read then takes each page from jupyter-cache.

myst-nb executes a notebook while its page is read, and Sphinx hands pages to its
reader processes in fixed alphabetical batches, so the slow pages fall to one
process while the other idles. Here a queue keeps every process busy until the
last notebook is done. A kernel is stopped at once when its notebook has run,
where a polite shutdown of an ipykernel 7 kernel waits 2.5 s about one time in
three before it is killed anyway. How long each page ran is remembered next to
the cache (``roofline-durations.json``) to order the next build; a page never run
here is guessed from what it is (see :func:`_expected_seconds`).

A notebook that fails stops the build with its cell's error, as
``nb_execution_raise_on_error`` asks, once the pages that ran are in the cache;
with that option off, myst-nb runs it again during the read and records the
traceback in its usual way.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

DURATIONS = "roofline-durations.json"
"""Seconds each page took when last executed, in the cache folder."""


@dataclass
class _Job:
    docname: str
    path: pathlib.Path
    notebook: Any
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
        jobs.append(_Job(docname, path, notebook, expected))
    return sorted(jobs, key=lambda j: -j.expected)


async def _run(jobs: list[_Job], processes: int, timeout: int | None) -> None:
    from nbclient import NotebookClient

    slots = asyncio.Semaphore(processes)

    async def execute(job: _Job) -> None:
        async with slots:  # waiters are woken in order: the longest expected first
            client = NotebookClient(
                job.notebook,
                timeout=timeout,
                allow_errors=False,
                record_timing=False,  # cell metadata is part of the cache's hash
                resources={"metadata": {"path": str(job.path.parent)}},
                shutdown_kernel="immediate",
            )
            start = time.perf_counter()
            try:
                await client.async_execute()
            except Exception as exc:  # a failing cell, a timeout, a kernel that died
                job.error = exc
            job.seconds = time.perf_counter() - start
            state = "failed" if job.error else "executed"
            logger.info("%s: %s in %.2f s", job.docname, state, job.seconds)

    await asyncio.gather(*(execute(job) for job in jobs))


def _execute(app: Sphinx, env: Any, docnames: list[str]) -> None:
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

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
    asyncio.run(_run(jobs, processes, nb_config.execution_timeout))
    logger.info("notebooks executed in %.1f s", time.perf_counter() - start)
    failed = [job for job in jobs if job.error is not None]
    for job in jobs:  # every page that ran is kept, even when another one failed
        if job.error is not None:
            continue
        record = cache.add_nb_to_project(str(job.path))
        cache.cache_notebook_bundle(
            CacheBundleIn(job.notebook, record.uri, data={"execution_seconds": job.seconds}),
            check_validity=False,
            overwrite=True,
        )
        remembered[str(job.path.relative_to(app.srcdir))] = round(job.seconds, 2)
    durations.write_text(json.dumps(remembered, indent=1, sort_keys=True) + "\n")
    if failed and nb_config.execution_raise_on_error:
        job = failed[0]
        raise ExtensionError(
            f"{job.path}: executing the notebook failed ({type(job.error).__name__})\n{job.error}"
        )
    # with the option off, myst-nb executes a failed page again during the read and keeps
    # the traceback


def setup(app: Sphinx) -> dict[str, Any]:
    # after myst-nb and myst-parser have put their configuration on the environment
    app.connect("env-before-read-docs", _execute)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
