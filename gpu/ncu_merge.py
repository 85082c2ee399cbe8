"""Add the DRAM bytes Nsight Compute measured to a run file, per entry.

Reads the CSV that ``ncu --csv --page raw --nvtx`` wrote while
``gpu/ncu_ops.py`` ran (one row per profiled kernel, a column per metric, a
units row under the header), sums ``dram__bytes_read.sum`` and
``dram__bytes_write.sum`` over the kernels inside each ``rb|<entry id>|`` NVTX
range, and writes them into that entry as ``measured_dram_bytes``:
``{"read": ..., "written": ..., "kernels": ..., "tool": ...}`` (byte).

    python3 gpu/ncu_merge.py RUN.json ncu.csv [--tool "ncu 2025.1"]

The run file is rewritten in place, atomically, and only gains these fields;
entries that already carry measured bytes are not replaced unless ``--force``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from roofline_book.measure.runs import runfile
from roofline_book.measure.runs.records import MeasuredBytes, Run

READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
_RANGE = re.compile(r"rb\|([^|]+)\|")
# Nsight Compute's byte prefixes are decimal (Kbyte = 1000 byte); binary ones are spelled KiB.
_UNITS = {
    "": 1,
    "byte": 1,
    "Kbyte": 10**3,
    "Mbyte": 10**6,
    "Gbyte": 10**9,
    "Tbyte": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}


def _number(text: str, unit: str, where: str) -> int:
    if unit not in _UNITS:
        raise ValueError(f"{where}: unit {unit!r} is not one of {', '.join(map(repr, _UNITS))}")
    try:
        value = float(text.replace(",", "").strip())
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a number") from None
    return round(value * _UNITS[unit])


def parse_ncu_csv(text: str) -> dict[str, dict[str, int]]:
    """DRAM bytes per run entry from ``ncu --csv --page raw --nvtx`` output.

    Returns
    -------
    dict
        ``{entry id: {"read": byte, "written": byte, "kernels": count}}``, over
        the kernels whose NVTX range names an entry; other kernels are ignored.

    Raises
    ------
    ValueError
        If there is no header row, no NVTX column, a metric is missing, or a
        value or unit cannot be read.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError('no CSV header (a row starting with "ID"): was ncu run with --csv?')
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    nvtx = [i for i, name in enumerate(header) if name.startswith("thread Domain:Push/Pop_Range")]
    if not nvtx:
        raise ValueError("no NVTX column: was ncu run with --nvtx?")
    for metric in (READ, WRITE):
        if metric not in header:
            raise ValueError(f"no {metric} column: was ncu run with --metrics {READ},{WRITE}?")
    col = {name: header.index(name) for name in (READ, WRITE)}
    data = rows[1:]
    first = start + 2  # file line (from 1) of data[0]
    units = {READ: "", WRITE: ""}
    if data and not data[0][0].strip().isdigit():  # the units row
        units = {m: data[0][col[m]].strip() for m in (READ, WRITE)}
        data, first = data[1:], first + 1
    out: dict[str, dict[str, int]] = {}
    for number, row in enumerate(data, start=first):
        if not row or not row[0].strip():
            continue
        ranges = [m for i in nvtx for m in _RANGE.findall(row[i])]
        if not ranges:
            continue
        entry = out.setdefault(ranges[-1], {"read": 0, "written": 0, "kernels": 0})
        where = f"CSV line {number}"
        entry["read"] += _number(row[col[READ]], units[READ], f"{where}, {READ}")
        entry["written"] += _number(row[col[WRITE]], units[WRITE], f"{where}, {WRITE}")
        entry["kernels"] += 1
    return out


def merge_dram_bytes(
    run: Run,
    measured: Mapping[str, Mapping[str, int]],
    *,
    tool: str = "ncu",
    force: bool = False,
) -> Run:
    """``run`` with ``measured_dram_bytes`` in each entry ``measured`` names (a new Run).

    Raises
    ------
    ValueError
        If ``measured`` names an id the run lacks or an entry that was not timed,
        or an entry already has measured bytes and ``force`` is false.
    """
    entries = list(run.entries)
    where = {e.id: i for i, e in enumerate(entries)}
    for entry_id, counts in measured.items():
        if entry_id not in where:
            raise ValueError(f"measured bytes for {entry_id!r}, which the run does not have")
        entry = entries[where[entry_id]]
        if not entry.ok:
            raise ValueError(f"measured bytes for {entry_id!r}, which has status {entry.status!r}")
        if entry.measured_dram_bytes is not None and not force:
            raise ValueError(f"{entry_id!r} already has measured_dram_bytes (use --force)")
        bytes_ = MeasuredBytes(
            read=counts["read"], written=counts["written"], kernels=counts["kernels"], tool=tool
        )
        entries[where[entry_id]] = dataclasses.replace(entry, measured_dram_bytes=bytes_)
    merged = dataclasses.replace(run, entries=tuple(entries))
    runfile.validate_run(merged.as_mapping(), require_schema=False)
    return merged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run file")
    parser.add_argument("csv", type=Path, help="ncu --csv --page raw --nvtx output")
    parser.add_argument("--tool", default="ncu", help="the profiler and its version")
    parser.add_argument("--force", action="store_true", help="replace bytes measured before")
    args = parser.parse_args(argv)
    try:
        run = runfile.load_run(args.run, require_schema=False)
        measured = parse_ncu_csv(args.csv.read_text(encoding="utf-8", errors="replace"))
        if not measured:
            raise ValueError(f"no kernel in {args.csv} lies in an rb|...| NVTX range")
        merged = merge_dram_bytes(run, measured, tool=args.tool, force=args.force)
    except (OSError, ValueError) as exc:
        print(f"ncu_merge: {exc}", file=sys.stderr)
        return 1
    runfile.write_run(merged, args.run, force=True)
    for entry_id, counts in measured.items():
        total = counts["read"] + counts["written"]
        print(f"{entry_id}: {total} bytes in {counts['kernels']} kernel(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
