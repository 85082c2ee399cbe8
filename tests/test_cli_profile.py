"""roofline-book profile: a good script, a failing one, a missing one, an empty one."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from roofline_book.cli import main  # noqa: E402

GOOD = """\
import sys
import torch

n = int(sys.argv[sys.argv.index("--n") + 1])
a, b = torch.ones(n, 2 * n), torch.ones(2 * n, 3 * n)
for _ in range(2):
    c = a @ b
"""


@pytest.fixture
def script(tmp_path):
    def write(text: str, name: str = "script.py") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_json_rows_of_a_good_script(script, capsys):
    assert main(["profile", "--json", "--device", "h100-sxm", script(GOOD), "--n", "16"]) == 0
    out = json.loads(capsys.readouterr().out)
    (mm,) = [op for op in out["ops"] if op["id"] == "aten::mm"]
    keys = {"id", "shapes", "calls", "self_time_s", "flops", "bytes", "intensity",
            "fraction_of_roof", "bound"}  # fmt: skip
    assert keys <= set(mm)
    assert mm["shapes"] == [[16, 32], [32, 48]] and mm["calls"] == 2
    assert mm["flops"] == 2 * 2 * 16 * 32 * 48  # two calls of 2MKN
    assert mm["bytes"] == 2 * 4 * (16 * 32 + 32 * 48 + 16 * 48)
    assert mm["profiler_flops"] == mm["flops"]
    # I = 2*16*32*48 / (4 * 2816) = 4.4 FLOP/byte, left of any ridge; its 11 KiB may sit in
    # the L2 a previous op wrote them to, so the L2 (not HBM) holds it
    assert mm["bound"] == "l2"
    assert out["args"] == ["--n", "16"] and 0 < out["explained_share"] <= 1
    ops = sorted(out["ops"], key=lambda op: -op["self_time_s"])
    assert [op["id"] for op in ops] == [op["id"] for op in out["ops"]]  # by time share


def test_text_table_and_double_dash(script, capsys, tmp_path):
    plot = tmp_path / "ops.svg"
    args = ["profile", "--device", "h100-sxm", "--plot", str(plot), "--", script(GOOD), "--n", "8"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "aten::mm" in out and "explained by modelled ops:" in out
    assert plot.read_text().startswith("<?xml")


def test_run_file_ceilings(script, capsys):
    run = str(pathlib.Path(__file__).parent / "data" / "fixture-cpu-pass.json")
    assert main(["profile", "--device-ceilings", run, "--json", script(GOOD), "--n", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    roof = out["roof"]
    assert roof["name"].endswith("(measured 2026-01-01T00:00:00Z)")
    assert [lv["name"] for lv in roof["levels"]] == ["l2", "dram"]
    assert roof["levels"][0]["bandwidth_Bps"] is None  # the fixture measured no cache roof
    (mm,) = [op for op in out["ops"] if op["id"] == "aten::mm"]
    # 8x16x24 in FP32 moves 2.8 kB, which the fixture's 16 MiB cache holds and whose rate it
    # did not measure: no memory term, and the matrix peak alone holds the row
    assert mm["bound"] == "matrix"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("import torch\nraise ValueError('bad input')\n", "raised ValueError: bad input (line 2)"),
        ("import sys\nsys.exit(3)\n", "exited with status 3"),
        ("x = 1 + 1\n", "ran no torch operator"),
        (None, "does not exist"),
    ],
)
def test_bad_scripts_one_line_exit_2(script, capsys, tmp_path, text, message):
    path = str(tmp_path / "missing.py") if text is None else script(text)
    assert main(["profile", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline-book profile: error:")
    assert message in lines[0] and "Traceback" not in captured.err


def test_bad_device_names_the_argument(script, capsys):
    assert main(["profile", "--device", "h1000", script(GOOD), "--n", "4"]) == 2
    err = capsys.readouterr().err
    assert "--device 'h1000' is not in the catalog" in err and "h100-sxm" in err


def test_device_and_run_file_together_refused(script, capsys):
    args = ["profile", "--device", "h100-sxm", "--device-ceilings", "x.json", script(GOOD)]
    assert main(args) == 2
    assert "not both" in capsys.readouterr().err


PRINTS = """\
import torch
print("epoch 1")
torch.randn(32, 32) @ torch.randn(32, 32)
"""


def test_json_stands_alone_when_the_script_prints(script, capsys):
    """repro 06: the script's own print used to sit in front of the JSON."""
    assert main(["profile", "--json", script(PRINTS)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "epoch 1" in captured.err and "epoch" not in captured.out
    (mm,) = [op for op in out["ops"] if op["id"] == "aten::mm"]
    assert mm["kind"] == "model" and mm["flops"] == 2 * 32**3
    assert 0.95 <= out["explained_share"] <= 1 and out["operator_self_time_s"] > 0


ROOT = pathlib.Path(__file__).resolve().parent.parent
# Hide modules from the command line, as an install without that extra would lack them
HIDE = """\
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hide())
from roofline_book.cli import main  # noqa: E402
sys.exit(main(sys.argv[1:]))
"""


def _cli(args, cwd, hidden=()):
    env = dict(os.environ, PYTHONPATH=str(ROOT), KINETO_LOG_LEVEL="6")
    command = [sys.executable, "-c", HIDE.format(hidden=tuple(hidden)), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_users_project_profiled_from_its_parent_folder(tmp_path):
    """repros 01, 06 and 07 together: a script that imports a sibling, prints and chdirs;
    --json parses, and --plot lands where the caller asked, not where the script went."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "helper_mod.py").write_text(
        "import torch\ndef work():\n    return torch.randn(32, 32) @ torch.randn(32, 32)\n"
    )
    (project / "train.py").write_text(
        "import os\nfrom helper_mod import work\nprint('epoch 1')\n"
        "os.makedirs('elsewhere', exist_ok=True)\nos.chdir('elsewhere')\nwork()\n"
    )
    done = _cli(["profile", "--json", "--plot", "mine.svg", "project/train.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)  # the JSON alone
    assert any(op["id"] == "aten::mm" for op in out["ops"]) and "epoch 1" in done.stderr
    assert (tmp_path / "mine.svg").read_text().startswith("<?xml")
    assert not (tmp_path / "elsewhere" / "mine.svg").exists()


RUNS = "import pathlib\npathlib.Path(__file__).with_name('ran').touch()\nimport torch\n"


@pytest.mark.parametrize(
    ("hidden", "args", "message"),
    [
        (("torch",), [], "profile needs torch: pip install 'roofline-book[bench]'"),
        (("matplotlib",), ["--plot", "x.svg"],
         "profile --plot needs matplotlib: pip install 'roofline-book[plot]'"),
    ],
)  # fmt: skip
def test_a_missing_extra_is_one_line_before_the_script_runs(tmp_path, hidden, args, message):
    """repro 03 (no torch: a traceback) and --plot without matplotlib (refused after the run)."""
    (tmp_path / "s.py").write_text(RUNS)
    done = _cli(["profile", *args, "s.py"], tmp_path, hidden)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"roofline-book profile: error: {message}"]
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("plot", "message"),
    [("missing/ops.svg", "does not exist"), ("adir.svg", "is a folder")],
)
def test_plot_path_checked_before_the_script_runs(script, capsys, tmp_path, plot, message):
    (tmp_path / "adir.svg").mkdir()
    path = script(RUNS)
    assert main(["profile", "--plot", str(tmp_path / plot), path]) == 2
    err = capsys.readouterr().err
    assert "--plot" in err and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ran").exists()


def test_keyboard_interrupt_in_the_script_is_one_line(script, capsys):
    assert main(["profile", script("import torch\nraise KeyboardInterrupt\n")]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"roofline-book profile: error: script {err.split(chr(39))[1]!r} raised KeyboardInterrupt: "
        "(line 2)"
    ]


# torch/_inductor/output_code.py records each call of a compiled graph under this name
COMPILED = """\
import torch
a = torch.ones(64, 64)
a @ a
with torch.profiler.record_function("## Call CompiledFxGraph fabc123def456 ##"):
    sum(range(300_000))  # Inductor's fused kernels record no operator
"""


def test_a_compiled_graph_is_counted_unexplained_in_text_and_json(script, capsys):
    """The review's finding 4: the graph's time was filed outside any operator, and the headline
    said 98-100% explained."""
    path = script(COMPILED)
    assert main(["profile", path]) == 0
    out = capsys.readouterr().out
    assert "compiled graph fabc123d" in out and "in compiled graphs (Inductor" in out
    assert main(["profile", "--json", path]) == 0
    data = json.loads(capsys.readouterr().out)
    (graph,) = [op for op in data["ops"] if op["kind"] == "compiled"]
    assert data["compiled_self_time_s"] == graph["self_time_s"] > 0
    # the graph is in the operators' time and not in the explained part
    done = sum(op["self_time_s"] for op in data["ops"] if op["kind"] in ("model", "composite"))
    assert data["explained_share"] == pytest.approx(done / data["operator_self_time_s"])
    assert data["explained_share"] <= 1 - graph["self_time_s"] / data["operator_self_time_s"] + 1e-9


def test_rows_faster_than_their_bound_are_a_warning():
    from roofline_book import gemm, hardware
    from roofline_book.cli import profile
    from roofline_book.measure.profile import profiling
    from roofline_book.roofline.bounds import Ceilings

    h100 = Ceilings.of(hardware("h100-sxm"))
    cost = gemm(256, 512, 512, "fp32")
    held = profiling.row_bound(cost, h100, "fp32")
    row = profiling.OpRow("aten::mm", ((256, 512), (512, 512)), ("float",) * 2, 8,
                          held.seconds / 2.08, 1.0, cost, "fp32", held, None)  # fmt: skip
    lines = profile._summary(profiling.Attribution((row,), row.self_time_s, h100, "cpu"))
    (warning,) = [line for line in lines if line.startswith("WARNING")]
    assert "1 row(s) ran faster than their lower bound: aten::mm 256x512,512x512 (2.08x)" in warning


def test_a_run_whose_l3_is_slower_than_its_dram_is_reported(script, capsys, tmp_path):
    """Class 6: the run file's L3 measured 12 GB/s, its DRAM 32.2 GB/s (3 * 4 * 2^25 B in
    12.5 ms): the text and the JSON say so, and the L3 is held to DRAM's roof."""
    from test_profiling import inverted_l3_run

    run = tmp_path / "loaded.json"
    run.write_text(json.dumps(inverted_l3_run()))
    path = script(GOOD)
    assert main(["profile", "--device-ceilings", str(run), path, "--n", "8"]) == 0
    out = capsys.readouterr().out
    assert "note: the run measured L3 at 12 GB/s, slower than DRAM at 32.21 GB/s" in out
    assert "l3 (33.55 MB, 32.21 GB/s), dram (32.21 GB/s)" in out
    assert main(["profile", "--json", "--device-ceilings", str(run), path, "--n", "8"]) == 0
    data = json.loads(capsys.readouterr().out)
    (slow,) = data["inverted_levels"]
    assert slow["level"] == "l3" and slow["outer"] == "dram"
    assert slow["bandwidth_Bps"] == pytest.approx(12e9)
    assert slow["outer_bandwidth_Bps"] == pytest.approx(3 * 4 * 2**25 / 0.0125)
    levels = {lv["name"]: lv["bandwidth_Bps"] for lv in data["roof"]["levels"]}
    assert levels["l3"] == levels["dram"]


def test_a_gpu_roof_over_cpu_times_is_a_warning(script, capsys):
    """Section 3 of the new-user review: '--device h100-sxm' on CPU timings ran with no word
    that the roof is a GPU's. Every catalog device is a GPU
    (roofline_book/devices/data/hardware.toml)."""
    assert main(["profile", "--device", "h100-sxm", script(GOOD), "--n", "8"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the roof is h100-sxm's, a GPU's, but the times are CPU self times" in out
    assert main(["profile", script(GOOD), "--n", "8"]) == 0
    assert "a GPU's" not in capsys.readouterr().out  # no roof, nothing to warn about


@pytest.mark.parametrize(
    "args",
    [
        ["--plot", "a.svg", "--plot", "b.svg"],
        ["--device", "h100-sxm", "--device", "a100-sxm"],
        ["--limit", "5", "--limit", "9"],
    ],
)
def test_an_option_given_twice_is_refused(script, capsys, tmp_path, args):
    """argparse keeps the last of a repeated option; here '--plot a.svg --plot b.svg' wrote only
    b.svg and said nothing. Refused in one line before the script runs."""
    path = script(RUNS)
    assert main(["profile", *args, path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{args[0]} given twice" in err[0]
    assert not (tmp_path / "ran").exists()
