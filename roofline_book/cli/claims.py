"""``roofline-book claims RUN.json``：一次已保存 run 的结论清单与预测误差。"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .._base.records import record_field
from .common import emit_result, read_run_file
from .results import Result, command_field

if TYPE_CHECKING:  # measure/ loads only when the command runs
    from ..measure.judge.predict import Prediction
    from ..measure.judge.verdicts import Check, Figure
    from ..measure.runs.records import Run


@dataclass(frozen=True, kw_only=True)
class ClaimFigure:
    """判定所依据的一个数。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one figure"}

    subject: Mapping[str, str] = record_field(
        description="what the figure is of: {entry: ID} or {kind, name} (a precision, a "
        "probe, the run)"
    )
    quantity: str = record_field(description="a stable key of the quantity")
    label: str = record_field(description="what the figure is, in English")
    value: float | None = record_field(nullable=True, description="in unit")
    unit: str | None = record_field(nullable=True, description="FLOP/s, B/s, s, ...")

    @classmethod
    def of(cls, f: Figure) -> ClaimFigure:
        """判定的数字 ``f``。"""
        mapping = f.as_mapping()
        return cls(
            subject=mapping["subject"], quantity=f.quantity, label=f.label, value=f.value,
            unit=f.unit,
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Claim:
    """一条结论的判定。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one claim"}

    id: str = record_field(description="stable identifier of the claim")
    claim: str = record_field(description="the claim")
    verdict: str = record_field(description="pass, fail, inconclusive or not measured")
    rule: str = record_field(description="how it is judged")
    figures: tuple[ClaimFigure, ...] = record_field(description="figures the verdict rests on")
    missing: str | None = record_field(
        nullable=True, description="what the run lacks (a key), if not measured"
    )

    @classmethod
    def of(cls, c: Check) -> Claim:
        """检验 ``c`` 的判定。"""
        return cls(
            id=c.key,
            claim=c.claim,
            verdict=c.verdict,
            rule=c.rule,
            figures=tuple(ClaimFigure.of(f) for f in c.figures),
            missing=c.missing or None,
        )


@dataclass(frozen=True, kw_only=True)
class Excluded:
    """不计入预测误差的一个条目。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one left out"}

    id: str = record_field(description="entry")
    why: str = record_field(description="reason")


@dataclass(frozen=True, kw_only=True)
class Predicted:
    """一个条目的预测时间与实测时间。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one entry"}

    id: str = record_field(description="the run entry")
    predicted_s: float = record_field(minimum=0, unit="s")
    measured_s: float = record_field(minimum=0, unit="s")
    time_lower_bound_s: float | None = record_field(nullable=True, minimum=0, unit="s")
    level: str = record_field(description="the memory level the bound uses: l2, l3, dram, ...")


@dataclass(frozen=True, kw_only=True)
class PredictionError:
    """roofline 模型的预测误差。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "the roofline's prediction error"}

    median_error: float | None = record_field(
        nullable=True, minimum=0, unit="1", description="median |predicted - measured| / measured"
    )
    entries: int = record_field(minimum=0, unit="1", description="entries compared")
    excluded: tuple[Excluded, ...] = record_field(description="entries left out")
    per_entry: tuple[Predicted, ...] = record_field(description="each entry compared")

    @classmethod
    def of(cls, predictions: list[Prediction], median: float | None) -> PredictionError:
        """各条目的预测 ``predictions`` 与其中计入误差者的中位误差 ``median``。"""
        kept = [p for p in predictions if not p.excluded]
        return cls(
            median_error=median,
            entries=len(kept),
            excluded=tuple(Excluded(id=p.id, why=p.excluded) for p in predictions if p.excluded),
            per_entry=tuple(
                Predicted(id=p.id, predicted_s=p.predicted_s, measured_s=p.measured_s,
                          time_lower_bound_s=p.bound_s, level=p.level)
                for p in kept
            ),
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ClaimsResult(Result):
    """``claims --json``：一次 run 的结论清单与预测误差。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "the claims checklist of a run file"}

    command: str = command_field("claims")
    run: str = record_field(description="the run file judged")
    claims: tuple[Claim, ...] = record_field(description="the book's claims")
    prediction: PredictionError = record_field()
    stable: bool | None = record_field(nullable=True, description="the stability sentinel held")
    tolerance: float = record_field(
        minimum=0, unit="1", description="the timing tolerance every comparison of this run uses"
    )


RESULT = ClaimsResult


def _judge(path: str, data: Run) -> tuple[ClaimsResult, list[Check]]:
    """run file ``path`` （已读成 ``data``）的判定：结果记录，与给文本用的检验。"""
    from ..measure.judge import claims as checks
    from ..measure.judge import predict
    from ..measure.judge.verdicts import tolerance

    result = checks.check_claims(data)
    predictions = predict.predictions(data)
    stable = None if data.stability is None else data.stability.stable
    return ClaimsResult(
        run=path,
        claims=tuple(Claim.of(c) for c in result),
        prediction=PredictionError.of(predictions, predict.median_error(predictions)),
        stable=stable,
        tolerance=tolerance(data),
    ), result


def run(args: argparse.Namespace) -> int:
    """``claims`` 子命令。"""
    from ..measure.judge import claims as checks

    data = read_run_file(args.run)
    judged, result = _judge(args.run, data)
    if args.json:
        emit_result(judged)
        return 0
    prediction, stable = judged.prediction, judged.stable
    median = prediction.median_error
    print(checks.format_checks(result))
    if median is not None:
        print(
            f"roofline prediction: median |predicted - measured| / measured = {median:.0%} "
            f"over {prediction.entries} entries ({len(prediction.excluded)} left out: the "
            "ceilings themselves and the cases the fixed cost is fitted on)"
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
