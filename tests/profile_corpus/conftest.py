"""The profiling corpus: scripts written as users write them, run by tests/test_profiling.py.

They are programs, not test modules: pytest's doctest collection must not import (and so run)
them, and ``sibling/train.py`` imports its neighbour as a top-level module, as ``python train.py``
lets it.
"""

collect_ignore_glob = ["*.py"]
