"""The command line as a page shows it: run ``roofline-book`` and print or read what it said."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from typing import Any


def _run(args: tuple[str, ...], cwd: str | None, check: bool) -> subprocess.CompletedProcess:
    """Run ``roofline-book ARGS`` in this process: the ``main`` the console script calls,
    with its output captured (a page runs a dozen commands; a fresh interpreter for each
    would cost a second or two apiece)."""
    from .. import cli

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(list(args))
            except SystemExit as exc:  # argparse exits on a usage error
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(before)
    done = subprocess.CompletedProcess(
        ["roofline-book", *args], status, out.getvalue(), err.getvalue()
    )
    if check and status:
        raise subprocess.CalledProcessError(status, done.args, done.stdout, done.stderr)
    return done


def run_cli(*args: str, cwd: str | None = None) -> str:
    """Run ``roofline-book ARGS``; print the command, then its output.

    Parameters
    ----------
    *args : str
        The arguments, as typed after ``roofline-book``.
    cwd : str, optional
        Working folder of the command (where ``plot --out`` writes).

    Returns
    -------
    str
        What the command printed on stdout.

    Raises
    ------
    subprocess.CalledProcessError
        If the command exits with a status other than 0.
    """
    done = _run(args, cwd, check=True)
    print("$ roofline-book", " ".join(args))
    print(done.stdout)
    return done.stdout


def cli_json(*args: str) -> Any:
    """The same command with ``--json``: its output read back (base units), printing nothing.

    Examples
    --------
    >>> cli_json("op", "add", "--numel", "8", "--peak", "1T", "--bandwidth", "1T")["bytes"]
    48
    """
    return json.loads(_run((*args, "--json"), None, check=True).stdout)


def cli_error(*args: str) -> tuple[int, str]:
    """Run a command that should fail; its exit status and what it wrote on stderr.

    Examples
    --------
    >>> status, err = cli_error("op", "add", "--numel", "-1")
    >>> status, len(err.splitlines())
    (2, 1)
    """
    done = _run(args, None, check=False)
    return done.returncode, done.stderr
