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

torch is imported inside the functions that need it, so importing any of
them stays light. The package itself imports nothing: ``from
roofline_book.measure import runfile`` loads just what it names.
"""
