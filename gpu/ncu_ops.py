"""Run the memory-bound cases of a CUDA run once each, for Nsight Compute to count DRAM bytes.

For each memory-bound operator, precision and implementation of the run
(copy, triad, add, ReLU, RMSNorm, softmax, AdamW) and for both attention
variants, the largest size the run timed is built, checked and warmed up
outside the profiled region; then one call runs between cudaProfilerStart and
cudaProfilerStop, inside an NVTX range named ``rb|<entry id>|``. Under

    ncu --nvtx --profile-from-start off --clock-control none \\
        --metrics dram__bytes_read.sum,dram__bytes_write.sum \\
        --csv --page raw --print-units base --log-file ncu.csv \\
        python3 gpu/ncu_ops.py RUN.json

only those calls are profiled, and ``gpu/ncu_merge.py`` adds the bytes to
the run file. Nsight Compute flushes the caches before each kernel it
profiles (its default ``--cache-control all``), so each kernel's bytes are
what it moves from a cold cache.

Run from the repository root with ``PYTHONPATH=.``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from roofline_book.measure.bench import cases
from roofline_book.measure.runs import runfile
from roofline_book.measure.runs.records import Entry, Run

RANGE = "rb|{}|"
"""NVTX range name around an entry's profiled call; ``ncu_merge.py`` parses it back."""


def chosen(run: Run, *, every: bool = False) -> list[Entry]:
    """The timed entries to profile: memory-bound ones and attention, largest per variant.

    With ``every``, all timed memory-bound entries and attention entries.
    """
    entries = [e for e in run.results() if e.name != "gemm"]
    if every:
        return entries
    largest: dict[tuple[str, str, str], Entry] = {}
    for e in entries:
        key = (e.name, e.precision, e.impl)
        if key not in largest or e.cost.bytes > largest[key].cost.bytes:
            largest[key] = e
    return list(largest.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run", help="run file written by `python -m roofline_book bench --device cuda`"
    )
    parser.add_argument(
        "--every", action="store_true", help="every size, not the largest per variant"
    )
    parser.add_argument("--list", action="store_true", help="print the entry ids and exit")
    args = parser.parse_args(argv)
    try:
        run = runfile.load_run(args.run, require_schema=False)
    except (OSError, ValueError) as exc:
        print(f"ncu_ops: {exc}", file=sys.stderr)
        return 2
    if run.device.type != "cuda":
        print(f"ncu_ops: {args.run} is a {run.device.type} run, not cuda", file=sys.stderr)
        return 2
    todo = chosen(run, every=args.every)
    if args.list:
        print("\n".join(e.id for e in todo))
        return 0

    import torch

    device = torch.device("cuda", torch.cuda.current_device())
    for e in todo:
        case = cases.case_for(e.name, e.shape, e.precision, e.impl)
        prepared = case.build(device)
        try:
            prepared.check()
            prepared.fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            torch.cuda.nvtx.range_push(RANGE.format(case.id))
            prepared.fn()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            torch.cuda.profiler.stop()
        finally:
            prepared.close()
            del prepared
            torch.cuda.empty_cache()
        print(f"ncu_ops: ran {case.id}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
