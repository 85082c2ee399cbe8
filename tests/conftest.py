"""Shared fixtures: where the built book is, and the values its pages glued."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import sys

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (no example database, a fixed seed), so
# a rare draw cannot fail one run of CI and pass the next; HYPOTHESIS_PROFILE=explore searches
# afresh each run, to look for new failing inputs by hand.
settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


_STYLE = "roofline_book.present.plotting.style"


@pytest.fixture(autouse=True)
def _figure_language_restored():
    """A test that draws in the book's Chinese (``setup_notebook("zh")``) leaves the figures'
    language as it found it: ``rc_context`` restores the fonts but not the words, and a later
    test drawing Chinese words in the default font fails on missing glyphs. Imports nothing
    (a test may be about what importing the package loads)."""
    style = sys.modules.get(_STYLE)
    before = style._LANGUAGE["current"] if style is not None else "en"
    yield
    style = sys.modules.get(_STYLE)
    if style is not None:
        style.set_language(before)


@pytest.fixture
def chinese_figures():
    """The book's style and Chinese font, as a page draws (``setup_notebook("zh")``): the
    rcParams are restored and the figures closed afterwards. A module asks for it with
    ``pytestmark = pytest.mark.usefixtures("chinese_figures")``."""
    import matplotlib
    from matplotlib import pyplot as plt

    from roofline_book.present.plotting import style

    with matplotlib.rc_context():
        style.setup_notebook("zh")
        yield
    plt.close("all")


@pytest.fixture
def zh(caplog):
    """The book's Chinese font for the test's drawing; fails on any font warning, as the
    build does."""
    import logging
    import warnings

    import matplotlib
    import matplotlib.pyplot

    pytest.importorskip("noto_cjk_sans_otc", reason="the [zh] extra (noto-cjk-sans-otc)")
    from roofline_book.present import plotting

    plotting.use_cjk_font()
    with matplotlib.rc_context({"font.family": plotting.CJK_FONTS}):
        with caplog.at_level(logging.WARNING, logger="matplotlib"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                yield
    # a glyph missing from mathtext, a missing font weight: matplotlib logs each; a glyph
    # missing from the text fonts: a UserWarning. The book's build fails on either.
    warned = [r.getMessage() for r in caplog.get_records("call")]
    warned += [str(w.message) for w in caught]
    matplotlib.pyplot.close("all")
    assert not warned, warned[:3]


ROOT = pathlib.Path(__file__).resolve().parent.parent
#: The build folder: html/ and jupyter_execute/ live under it (override with BOOK_BUILD).
BUILD = pathlib.Path(os.environ.get("BOOK_BUILD", ROOT / "_build"))


def _glued_values(page: str) -> dict[str, object]:
    path = BUILD / "jupyter_execute" / f"{page}.glue.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: build the book first (make html)")
    values = {}
    for name, output in json.loads(path.read_text("utf-8")).items():
        text = output["data"].get("text/plain")
        if text is None:
            continue
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[name] = text  # a figure or other object: keep its repr
    return values


@pytest.fixture(scope="session")
def glued():
    """``glued("chapters/01-flops")`` -> {glue name: value} as the built page shows it."""
    cache: dict[str, dict[str, object]] = {}

    def load(page: str) -> dict[str, object]:
        if page not in cache:
            cache[page] = _glued_values(page)
        return cache[page]

    return load


# The profiling corpus (tests/profile_corpus/) holds programs written as users write them, run
# by test_profiling.py; they are not test modules, and collecting them would import (and so run)
# them. A conftest.py of their own would shadow this one's name for `from conftest import ...`.
collect_ignore = ["profile_corpus"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that reads the built book must say so (``site``): `make check` leaves those out
    and runs on a clone that was never built."""

    def reads_the_book(item: pytest.Item) -> bool:
        info = getattr(item, "_fixtureinfo", None)  # a test module may define its own `glued`
        defs = list(info.name2fixturedefs.get("glued", ())) if info is not None else []
        return bool(defs) and defs[-1].func is glued.__wrapped__  # type: ignore[attr-defined]

    unmarked = [
        item.nodeid
        for item in items
        if reads_the_book(item) and item.get_closest_marker("site") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "these tests read the built book but are not marked site: " + ", ".join(unmarked)
        )
