"""The label check every book figure passes (book.glue_figure refuses a figure that fails it)."""

import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

from roofline_book.book.notebook import glue_figure  # noqa: E402
from roofline_book.present.plotting.layout import overlaps  # noqa: E402


def test_a_label_over_a_point_is_found_and_one_beside_it_is_not():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot([1, 2, 3], [1, 2, 3], "o")
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 4)
    ax.text(2, 2, "here", ha="center", va="center")  # centred on the point (2, 2)
    ax.text(0.2, 3.5, "far away")
    assert overlaps(fig) == [("'here'", "Line2D '_child0'")]


def test_an_annotation_arrow_crossing_a_label_is_not_an_overlap_but_its_words_are():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.text(5, 5, "middle", ha="center", va="center")
    # the arrow runs from (1, 1) through the middle label to (9, 9): only words count
    ax.annotate("start", xy=(9, 9), xytext=(1, 1), arrowprops={"arrowstyle": "->"})
    assert overlaps(fig) == []
    ax.annotate("on top", xy=(9, 1), xytext=(5, 5), ha="center", va="center")
    assert overlaps(fig) == [("'middle'", "'on top'")]


def test_the_book_refuses_to_glue_a_figure_whose_labels_overlap(monkeypatch):
    monkeypatch.setattr("IPython.get_ipython", lambda: object())  # as in a chapter's kernel
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "ridge point")
    ax.text(0.52, 0.5, "compute roof")
    with pytest.raises(ValueError, match=r"figure 'fig-x': labels overlap \(1\)"):
        glue_figure("fig-x", fig)


def test_tick_labels_outside_the_view_are_not_drawn_so_not_counted():
    fig = Figure(figsize=(3, 3))
    ax = fig.add_axes((0.3, 0.1, 0.6, 0.4))
    ax.set_yticks([0, 10, 20])  # 20 lies outside the view: its label is never drawn
    ax.set_ylim(0, 10)
    # where the label of 20 would sit: left of the axes, at 0.1 + 2 x 0.4 of the height
    fig.text(0.27, 0.9, "title", ha="right", va="center")
    assert overlaps(fig) == []
    fig.text(0.27, 0.5, "top", ha="right", va="center")  # beside the drawn label of 10
    assert [sorted(pair) for pair in overlaps(fig)] == [["'10'", "'top'"]]


def test_a_reference_line_moves_its_words_off_a_measured_point():
    # measured points sit where the words of a horizontal line would go (right edge, below it):
    # the words move to the first clear spot, so a figure of another machine's data stays legible
    from matplotlib.figure import Figure

    from roofline_book.present.plotting import reference_line
    from roofline_book.present.plotting.layout import overlaps

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.plot([0.8, 0.85, 0.9, 0.95], [0.47, 0.47, 0.47, 0.47], "o")
    _, words = reference_line(ax, 0.5, "fitted fixed time", side="right", below=True, avoid=True)
    assert overlaps(fig) == []
    assert (words.get_horizontalalignment(), words.get_verticalalignment()) != ("right", "top")
