"""``roofline-book claims RUN.json``：一次已保存 run 的结论清单与预测误差。"""

from __future__ import annotations

import argparse
from typing import Any

from .common import emit_json, read_run_file


def run(args: argparse.Namespace) -> int:
    """``claims`` 子命令。"""
    from ..measure.judge import claims as checks
    from ..measure.judge import predict
    from ..measure.judge.verdicts import tolerance

    data = read_run_file(args.run)
    result = checks.check_claims(data)
    predictions = predict.predictions(data)
    kept = [p for p in predictions if not p.excluded]
    stable = None if data.stability is None else data.stability.stable
    median = predict.median_error(predictions)
    excluded = [{"id": p.id, "why": p.excluded} for p in predictions if p.excluded]
    if args.json:
        emit_json(
            "claims",
            {
                "run": args.run,
                "claims": [
                    {
                        "id": c.key,
                        "claim": c.claim,
                        "verdict": c.verdict,
                        "rule": c.rule,
                        "figures": [f.as_mapping() for f in c.figures],
                        "missing": c.missing or None,
                    }
                    for c in result
                ],
                "prediction": {
                    "median_error": median,
                    "entries": len(kept),
                    "excluded": excluded,
                    "per_entry": [
                        {
                            "id": p.id,
                            "predicted_s": p.predicted_s,
                            "measured_s": p.measured_s,
                            "time_lower_bound_s": p.bound_s,
                            "level": p.level,
                        }
                        for p in kept
                    ],
                },
                "stable": stable,
                "tolerance": tolerance(data),
            },
        )
        return 0
    print(checks.format_checks(result))
    if median is not None:
        print(
            f"roofline prediction: median |predicted - measured| / measured = {median:.0%} "
            f"over {len(kept)} entries ({len(excluded)} left out: the ceilings themselves "
            "and the cases the fixed cost is fitted on)"
        )
    stability = data.stability
    if stability is None:
        print("stability: not recorded (the run predates the stability sentinel)")
    else:
        spread = abs(stability.drift - 1) if stability.spread is None else stability.spread
        print(
            f"stability: {'stable' if stable else 'UNSTABLE'} (sentinel {stability.probe}: "
            f"its checkpoints spread {spread:.0%}, last / first {stability.drift:.2f})"
        )
    return 0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``claims`` 加到 ``sub`` 中。"""
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
