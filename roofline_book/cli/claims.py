"""``roofline-book claims RUN.json``: a stored run's checklist and prediction error."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from .common import UsageError, emit


def run(args: argparse.Namespace) -> int:
    """The ``claims`` subcommand."""
    from ..measure import claims as checks
    from ..measure import runfile

    try:
        data = runfile.read_run(args.run)
    except OSError as exc:
        raise UsageError(f"cannot read the run file {args.run!r}: {exc.strerror}") from None
    result = checks.check_claims(data)
    predictions = checks.roofline_predictions(data)
    stability = data.get("stability")
    stable = None if stability is None else bool(stability["stable"])
    median = statistics.median(p.error for p in predictions) if predictions else None
    if args.json:
        emit(
            {
                "claims": [
                    {
                        "id": c.key,
                        "claim": c.claim,
                        "verdict": c.verdict,
                        "rule": c.rule,
                        "figures": [
                            {"label": f.label, "value": f.value, "unit": f.unit} for f in c.figures
                        ],
                    }
                    for c in result
                ],
                "prediction": {"median_error": median, "entries": len(predictions)},
                "stable": stable,
            }
        )
        return 0
    print(checks.format_checks(result))
    if median is not None:
        print(
            f"roofline prediction: median |predicted - measured| / measured = {median:.0%} "
            f"over {len(predictions)} entries"
        )
    if stability is None:
        print("stability: not recorded (the run predates the drift probe)")
    else:
        print(
            f"stability: {'stable' if stable else 'UNSTABLE'} ({stability['probe']} took "
            f"{stability['drift']:.2f}x its first time at the end of the run)"
        )
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``claims`` to ``sub``."""
    claims = sub.add_parser(
        "claims",
        parents=[common],
        help="the claims checklist of a stored benchmark run",
        description=(
            "Judge the book's claims on a run file (from 'roofline-book bench'): pass, fail, "
            "inconclusive (the timings compared lie within each other's spread, or the run "
            "was unstable) or not measured; and the roofline's median prediction error."
        ),
    )
    claims.add_argument("run", metavar="RUN.json", help="a run file written by 'bench'")
    claims.set_defaults(handler=run)
