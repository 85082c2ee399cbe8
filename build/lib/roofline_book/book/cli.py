"""The command line as a page shows it: run ``roofline-book`` and print or read what it said."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def _run(args: tuple[str, ...], cwd: str | None, check: bool) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roofline_book", *args],
        capture_output=True,
        text=True,
        check=check,
        cwd=cwd,
    )


def run_cli(*args: str, cwd: str | None = None) -> str:
    """Run ``roofline-book ARGS`` in a subprocess; print the command, then its output.

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
