"""The book's build extension (docs/_ext/roofline_build.py): what decides that a cached page
is stale, and where the kernels find the GPU runs."""

from __future__ import annotations

import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys

from sphinx_book import extension

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CUDA_PAGE = ROOT / "docs" / "appendix" / "cuda-benchmarks.md"


def _extension():
    return extension("roofline_build")


def test_the_package_digest_follows_content_not_file_times(tmp_path):
    build = _extension()
    package = tmp_path / "pkg"
    (package / "data").mkdir(parents=True)
    (package / "a.py").write_text("X = 1\n")
    (package / "data" / "t.toml").write_text("x = 1\n")
    first = build.package_digest(package)
    os.utime(package / "a.py", (0, 0))  # a checkout or a copy touches the times only
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (package / "notes.txt").write_text("not a source")
    assert build.package_digest(package) == first
    (package / "data" / "t.toml").write_text("x = 2\n")  # one byte of data
    assert build.package_digest(package) != first
    (package / "data" / "t.toml").write_text("x = 1\n")
    assert build.package_digest(package) == first  # back as it was
    (package / "data" / "t.toml").rename(package / "t.toml")  # the same bytes elsewhere
    assert build.package_digest(package) != first


def _first_cell(page: pathlib.Path) -> str:
    match = re.search(r"```\{code-cell\} ipython3\n(.*?)```", page.read_text("utf-8"), re.S)
    assert match, page
    return match[1]


def test_the_cuda_appendix_finds_the_gpu_runs_from_its_own_folder(tmp_path):
    """The kernel runs in docs/appendix; the runs copied into docs/data reach it through
    $ROOFLINE_GPU_RUNS, which conf.py points at docs/data (code-and-house.md F3)."""
    conf = runpy.run_path(str(ROOT / "conf.py"))
    assert pathlib.Path(conf["roofline_gpu_runs"]) == ROOT / "docs" / "data"
    runs = tmp_path / "data"
    runs.mkdir()
    shutil.copy(DATA / "fixture-cpu-pass.json", runs / "a-gpu.json")  # any valid run file
    shutil.copy(DATA / "fixture-cpu-fail.json", runs / "b-gpu.json")
    code = _first_cell(CUDA_PAGE).replace(":tags: [remove-cell]\n", "")
    # the runs are the point here, not glue or the figures' fonts: a preamble that does nothing
    stub = "from roofline_book import book\nbook.preamble = lambda: (lambda *a, **k: None,) * 3\n"
    env = os.environ | {
        "ROOFLINE_GPU_RUNS": str(runs),
        "ROOFLINE_CPU_RUN": str(DATA / "fixture-cpu-pass.json"),
        "PYTHONPATH": str(ROOT),
        "MPLBACKEND": "Agg",
    }
    done = subprocess.run(
        [sys.executable, "-c", stub + code + "\nprint('runs:', len(gpu_runs))"],
        cwd=CUDA_PAGE.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "runs: 2" in done.stdout
