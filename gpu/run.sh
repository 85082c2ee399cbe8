#!/usr/bin/env bash
# Measure one CUDA device for the book's benchmark appendix.
#
#   OUT=/some/folder bash gpu/run.sh [name]
#
# Run from the repository root. Needs Python >= 3.11 with torch (>= 2.1, CUDA)
# and numpy; tqdm, jsonschema, pytest and Nsight Compute (ncu) are used when
# present. Steps, each under its own time limit (about 6 minutes in all on an
# H200; SKIP_TESTS=1, SKIP_NCU=1 or QUICK=1 make it shorter):
#   1. the CUDA tests of tests/test_measure.py (if pytest is installed);
#   2. the full CUDA suite -> $OUT/<name>.json, its summary -> $OUT/<name>.txt;
#   3. Nsight Compute over gpu/ncu_ops.py -> $OUT/<name>.ncu.csv, and the
#      measured DRAM bytes merged into $OUT/<name>.json.
# Nothing is overwritten: an existing $OUT/<name>.json stops the script.
set -uo pipefail

OUT=${OUT:-_build/gpu}
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}

die() { echo "gpu_run: $*" >&2; exit 2; }

[ -f roofline_book/measure/run.py ] || die "run from the repository root"
"$PY" - <<'PYEOF' || die "preflight failed (see above)"
import sys
if sys.version_info < (3, 11):
    sys.exit(f"needs Python >= 3.11, this is {sys.version.split()[0]}")
import numpy, torch
if not torch.cuda.is_available():
    sys.exit(f"torch {torch.__version__} sees no CUDA device")
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda},",
      torch.cuda.get_device_name(), flush=True)
for name in ("tqdm", "jsonschema", "pytest"):
    try:
        __import__(name)
    except ImportError:
        print(f"  ({name} not installed: going without it)")
PYEOF
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv

name=${1:-$("$PY" -c '
import datetime, re, torch
device = re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name().lower()).strip("-")
print(f"{device}-{datetime.datetime.now(datetime.timezone.utc):%Y%m%d-%H%M}")')}
run="$OUT/$name.json"
mkdir -p "$OUT"
[ -e "$run" ] && die "$run exists; choose another name"

if [ "${SKIP_TESTS:-0}" != 1 ] && "$PY" -c 'import pytest, hypothesis' 2>/dev/null; then
  echo "== 1. CUDA tests"
  timeout 120 "$PY" -m pytest -q -p no:cacheprovider -o addopts="" -m cuda tests/test_measure.py \
    || echo "gpu_run: the CUDA tests failed (above); measuring anyway" >&2
fi

echo "== 2. benchmark suite -> $run"
suite=()
[ "${QUICK:-0}" = 1 ] && suite=(--quick)
timeout 330 "$PY" -m roofline_book bench --device cuda "${suite[@]}" --out "$run" \
  | tee "$OUT/$name.txt"
status=${PIPESTATUS[0]}
[ "$status" -le 1 ] || die "the benchmark failed (exit status $status)"
[ -f "$run" ] || run=$(ls -t "$OUT/$name".*.json 2>/dev/null | head -n 1)

if [ "${SKIP_NCU:-0}" != 1 ] && command -v ncu >/dev/null; then
  echo "== 3. DRAM bytes under Nsight Compute"
  csv="$OUT/$name.ncu.csv"
  if timeout 240 ncu --nvtx --profile-from-start off --clock-control none \
       --metrics dram__bytes_read.sum,dram__bytes_write.sum \
       --csv --page raw --print-units base --log-file "$csv" \
       "$PY" gpu/ncu_ops.py "$run"; then
    "$PY" gpu/ncu_merge.py "$run" "$csv" --tool "$(ncu --version | tail -n 1)" \
      || echo "gpu_run: merging the ncu bytes failed; $run keeps the timings" >&2
  else
    echo "gpu_run: ncu failed (no permission for GPU counters?); $run keeps the timings" >&2
  fi
fi
echo "gpu_run: done: $run"
