"""Measurement: timing real hardware against the models, and judging the book's claims.

One idea per module:

- :mod:`~roofline_book.measure.registry`: what a case is; the operator registry.
- :mod:`~roofline_book.measure.cases`: each benchmarked operator, registered once.
- :mod:`~roofline_book.measure.suites`: which sizes a run measures.
- :mod:`~roofline_book.measure.timing`: CPU and CUDA timing; a ``Timing`` keeps its samples.
- :mod:`~roofline_book.measure.machine`: device, caches, memory, software versions.
- :mod:`~roofline_book.measure.run`: check, then time, each case; assemble the run.
- :mod:`~roofline_book.measure.runfile`: the run file's schema, reading and writing.
- :mod:`~roofline_book.measure.claims`: the claims checklist, judged from a run.
- :mod:`~roofline_book.measure.report`: a run as the book shows it.

torch is imported inside the functions that need it, so ``import
roofline_book.measure`` stays light.
"""

from .cases import OPERATORS, case_for, shape_text
from .registry import Case, Incorrect, Operator, Prepared, Unsupported
from .run import measure, run_suite, summary_table
from .runfile import read_run, write_run
from .suites import Suite, suite_spec
from .timing import Timing, time_cpu, time_cuda

__all__ = [
    "OPERATORS",
    "Case",
    "Incorrect",
    "Operator",
    "Prepared",
    "Suite",
    "Timing",
    "Unsupported",
    "case_for",
    "measure",
    "read_run",
    "run_suite",
    "shape_text",
    "suite_spec",
    "summary_table",
    "time_cpu",
    "time_cuda",
    "write_run",
]
