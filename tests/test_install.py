"""The package as users install it: a wheel and an sdist, and the wheel alone in a fresh venv.

The fresh environment gets the wheel and what it declares (tabulate; the models are pure
Python, so not NumPy), nothing else, and runs outside the repository, so nothing can be imported
from the source tree by accident.
"""

import email
import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from test_nonumpy import RUN_COMMANDS, RUNS, in_process, same_output

import roofline_book
from roofline_book._base.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.install


def _run(*args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT),
                cwd=out)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("roofline_book-*.whl")
    return wheel


def test_build_gives_a_wheel_and_an_sdist_twine_accepts(dist):
    version = roofline_book.__version__
    assert (dist / f"roofline_book-{version}-py3-none-any.whl").is_file()
    assert (dist / f"roofline_book-{version}.tar.gz").is_file()
    done = _run(sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir()),
                cwd=dist)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_wheel_holds_every_module_and_data_file(dist):
    names = set(zipfile.ZipFile(_wheel(dist)).namelist())
    source = ROOT / "roofline_book"
    expected = {
        p.relative_to(ROOT).as_posix()
        for p in source.rglob("*")
        if p.is_file() and p.suffix in (".py", ".toml", ".mplstyle", ".json")
        and "__pycache__" not in p.parts
    }  # fmt: skip
    assert expected <= names, sorted(expected - names)
    assert "roofline_book/devices/data/hardware.toml" in names


def test_the_extras_bring_what_the_package_asks_for(dist):
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        meta_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(wheel.read(meta_name))
    assert meta["Version"] == roofline_book.__version__
    assert sorted(meta.get_all("Provides-Extra")) == sorted(EXTRAS)
    declared: dict[str, set[str]] = {}
    for requirement in meta.get_all("Requires-Dist"):
        # a distribution's name, spelt as its module (noto-cjk-sans-otc: noto_cjk_sans_otc)
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower().replace("-", "_")
        extra = re.search(r'extra == "([^"]+)"', requirement)
        declared.setdefault(extra[1] if extra else "", set()).add(name)
    assert declared[""] == {"tabulate"}  # all the models and the CLI's model commands need
    for extra, modules in EXTRAS.items():
        assert declared[extra] == set(modules), extra


@pytest.fixture(scope="module")
def fresh(dist, tmp_path_factory) -> Path:
    """A virtual environment with the wheel and its one dependency (tabulate) only; its bin.

    The extras' tests, last in this module, install [plot] and [report] into it.
    """
    home = tmp_path_factory.mktemp("fresh")
    venv.EnvBuilder(with_pip=True).create(home / "venv")
    bin_ = home / "venv" / "bin"
    done = _run(str(bin_ / "python"), "-m", "pip", "install", "--quiet", str(_wheel(dist)),
                cwd=home)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return bin_


def test_fresh_install_imports_the_models_without_the_extras(fresh):
    code = (
        "import sys, roofline_book as rb; "
        "print(rb.gemm(4096, 4096, 4096).flops, rb.hardware('h100-sxm').ridge_point('bf16') > 295,"
        " sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib', 'pandas')))"
    )
    done = _run(str(fresh / "python"), "-c", code, cwd=fresh.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["137438953472", "True", "[]"]  # 2 * 4096^3


def test_fresh_install_commands_work(fresh):
    cli = str(fresh / "roofline-book")
    gemm = _run(cli, "op", "gemm", "--m", "4096", "--k", "4096", "--n", "4096", cwd=fresh.parent)
    assert gemm.returncode == 0 and "137.4 GFLOP" in gemm.stdout, gemm.stderr
    block = _run(cli, "block", "--device", "h100-sxm", cwd=fresh.parent)
    assert block.returncode == 0 and "QKV projection" in block.stdout, block.stderr
    devices = _run(cli, "devices", "--dtype", "bf16", cwd=fresh.parent)
    assert devices.returncode == 0 and "h100-sxm" in devices.stdout, devices.stderr
    version = _run(cli, "--version", cwd=fresh.parent)
    assert version.stdout.strip() == f"roofline-book {roofline_book.__version__}"


def test_fresh_install_runs_the_model_commands_without_numpy(fresh):
    # the wheel alone brings no NumPy, and op, block, infer, train and devices print what they
    # print in the book's environment, which has it (test_nonumpy.py's commands)
    numpy = _run(str(fresh / "python"), "-c", "import numpy", cwd=fresh.parent)
    assert numpy.returncode == 1 and "No module named 'numpy'" in numpy.stderr
    done = _run(str(fresh / "python"), "-c", RUN_COMMANDS, json.dumps(RUNS), cwd=fresh.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["loaded"] == []
    for argv, got in zip(RUNS, report["results"], strict=True):
        same_output(argv, got, in_process(argv))


def test_fresh_install_names_the_missing_extra(fresh, tmp_path):
    cli = str(fresh / "roofline-book")
    plot = _run(cli, "plot", "--out", str(tmp_path / "r.svg"), "--point", "add:1M", cwd=tmp_path)
    assert plot.returncode == 2 and plot.stdout == ""
    assert plot.stderr.splitlines() == [
        "roofline-book plot: error: plot needs matplotlib: pip install 'roofline-book[plot]'"
    ]
    bench = _run(cli, "bench", "--quick", "--out", str(tmp_path / "run.json"), cwd=tmp_path)
    assert bench.returncode == 2 and not (tmp_path / "run.json").exists()
    assert bench.stderr.splitlines() == [
        "bench: measuring needs torch: pip install 'roofline-book[bench]'"
    ]
    code = (
        "import roofline_book as rb; rb.table_frame(rb.cost_table([('a', rb.add(8))], rb.EXAMPLE))"
    )
    frame = _run(str(fresh / "python"), "-c", code, cwd=tmp_path)
    assert frame.returncode == 1
    assert frame.stderr.strip().splitlines()[-1] == (
        "roofline_book._base.extras.MissingExtra: table_frame needs pandas: "
        "pip install 'roofline-book[table]'"
    )


def test_the_plot_extra_is_enough_to_plot(dist, fresh, tmp_path):
    done = _run(str(fresh / "python"), "-m", "pip", "install", "--quiet",
                f"{_wheel(dist)}[plot]", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "roofline.svg"
    plot = _run(str(fresh / "roofline-book"), "plot", "--out", str(out), "--point", "add:1M",
                cwd=tmp_path)  # fmt: skip
    assert plot.returncode == 0, plot.stderr
    assert out.read_text().lstrip().startswith("<?xml")


def test_the_report_extra_reads_and_renders_a_run(dist, fresh, tmp_path):
    # [report] brings pandas (so [table]'s frames work too), matplotlib and jsonschema.
    # [bench] is not installed here: an unpinned torch would pull a multi-GB CUDA build;
    # its requirements are checked above and `bench` runs in the book's own environment.
    done = _run(str(fresh / "python"), "-m", "pip", "install", "--quiet",
                f"{_wheel(dist)}[report]", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    fixture = ROOT / "tests" / "data" / "fixture-cpu-pass.json"
    code = (
        "import sys, roofline_book as rb; "
        "from roofline_book.measure.judge import claims, report; "
        "from roofline_book.measure.runs import runfile; "
        f"run = runfile.load_run({str(fixture)!r}); "
        "print(len(report.results(run)), "
        "sum(c.verdict == 'pass' for c in claims.check_claims(run)), "
        "list(rb.table_frame(rb.cost_table([('a', rb.add(8))], rb.EXAMPLE))['bound']))"
    )
    shown = _run(str(fresh / "python"), "-c", code, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["24", "9", "['memory']"]  # 24 entries, 9 claims hold
