"""Do the claims hold still? Quick CPU runs back to back, one beside a busy core, tabulated.

Runs ``python -m roofline_book bench --quick --no-progress`` ``--runs`` times back to back,
then once more while another process keeps a core busy (a ``--busy-seconds`` spin loop started
first), and prints, per run: its wall time, the FP32 and BF16 peaks, the copy bandwidth, the
sentinel's spread and the tolerance the verdicts used, and each claim's verdict
(``roofline-book claims RUN.json --json``). Last, each claim whose verdicts went from pass to
fail or back between runs: the goal is none (a verdict inside the noise is "inconclusive").

    .venv/bin/python tools/claims_stability.py --out /tmp/stability

Run it on an idle machine: a run beside other people's work is the busy case, not the idle one.
The runs stay in ``--out`` (``idle-1.json`` ... ``busy.json``), and ``--table-only`` tabulates
them again without measuring.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\n"
SHORT = {
    "large_gemm_is_compute_bound": "1 large GEMM",
    "elementwise_is_memory_bound": "2 elementwise",
    "small_gemm_is_far_from_peak": "3 small GEMM",
    "gemm_rises_with_n": "4 rises with n",
    "fused_adamw_is_fastest": "5 AdamW",
    "sdpa_beats_materialized": "6 SDPA",
    "bf16_beats_fp32": "7 BF16",
    "roofline_bounds_time": "8 bound",
    "write_allocate_explains_bandwidths": "9 write-allocate",
}


def bench(python: str, out: Path) -> float:
    """One quick run into ``out``; its wall time in seconds."""
    start = time.monotonic()
    subprocess.run(
        [python, "-m", "roofline_book", "bench", "--quick", "--no-progress", "--force"]
        + ["--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - start


def row(python: str, path: Path, wall: float | None) -> dict:
    """What one run file says: its ceilings, its stability and each claim's verdict."""
    run = json.loads(path.read_text())
    claims = json.loads(
        subprocess.run(
            [python, "-m", "roofline_book", "claims", str(path), "--json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    peaks, bandwidth = run["ceilings"]["peak_flops"], run["ceilings"]["bandwidth"]
    spread = (run.get("stability") or {}).get("spread")
    return {
        "run": path.stem,
        "wall_s": wall,
        "fp32_gflops": peaks["fp32"]["value"] / 1e9 if "fp32" in peaks else None,
        "bf16_gflops": peaks["bf16"]["value"] / 1e9 if "bf16" in peaks else None,
        "copy_gbs": bandwidth["copy"]["value"] / 1e9 if "copy" in bandwidth else None,
        "sentinel_spread": spread,
        "tolerance": claims["tolerance"],
        "verdicts": {c["id"]: c["verdict"] for c in claims["claims"]},
    }


def _cell(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def table(rows: list[dict]) -> str:
    """The runs as a Markdown table, then the claims that flipped between pass and fail."""
    ids = list(rows[0]["verdicts"])
    head = ["run", "wall s", "FP32 GFLOP/s", "BF16 GFLOP/s", "copy GB/s", "sentinel", "tol"]
    head += [SHORT.get(i, i) for i in ids]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r["run"],
            _cell(r["wall_s"], ".0f"),
            _cell(r["fp32_gflops"], ".1f"),
            _cell(r["bf16_gflops"], ".1f"),
            _cell(r["copy_gbs"], ".2f"),
            _cell(None if r["sentinel_spread"] is None else 100 * r["sentinel_spread"], ".1f")
            + "%",
            f"{100 * r['tolerance']:.1f}%",
        ]
        cells += [r["verdicts"][i] for i in ids]
        lines.append("| " + " | ".join(cells) + " |")
    flips = [i for i in ids if {"pass", "fail"} <= {r["verdicts"][i] for r in rows}]
    lines.append("")
    lines.append(
        "pass <-> fail flips: " + (", ".join(SHORT.get(i, i) for i in flips) if flips else "none")
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the run files")
    parser.add_argument("--runs", type=int, default=3, help="back-to-back idle runs (default 3)")
    parser.add_argument("--busy-seconds", type=int, default=45, help="the busy loop's length")
    parser.add_argument("--python", default=".venv/bin/python", help="the venv's python")
    parser.add_argument(
        "--table-only", action="store_true", help="tabulate the run files in --out, measure none"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    walls: dict[str, float] = {}
    if not args.table_only:
        for i in range(1, args.runs + 1):
            walls[f"idle-{i}"] = bench(args.python, args.out / f"idle-{i}.json")
            print(f"idle-{i}: {walls[f'idle-{i}']:.0f} s", file=sys.stderr)
        spin = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=args.busy_seconds)])
        try:
            walls["busy"] = bench(args.python, args.out / "busy.json")
        finally:
            spin.kill()
            spin.wait()
        print(f"busy: {walls['busy']:.0f} s", file=sys.stderr)
    paths = sorted(args.out.glob("idle-*.json")) + sorted(args.out.glob("busy*.json"))
    rows = [row(args.python, p, walls.get(p.stem)) for p in paths]
    if not rows:
        parser.error(f"no run files in {args.out}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
