"""图上的文字是否互相压住，或压住一个数据点：画出图后按像素比较各段文字的外框。"""

from __future__ import annotations

from typing import Any

#: 两段文字的外框各向内收缩这么多像素后仍相交，才算压住（抗锯齿与字形留白不算）。
SHRINK_PX = 1.0


def _undrawn_tick_labels(fig: Any) -> set[int]:
    """刻度标签中没有画出的（刻度在坐标范围之外）：它们“可见”，却不在图上。"""
    undrawn: set[int] = set()
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            drawn = {id(tick) for tick in axis._update_ticks()}
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if id(tick) not in drawn:
                    undrawn.update((id(tick.label1), id(tick.label2)))
    return undrawn


def _texts(fig: Any) -> list[Any]:
    """图中画出的、非空的文字：标注、标题、轴标签、刻度标签、图例文字。"""
    from matplotlib.text import Text

    found = []
    undrawn = _undrawn_tick_labels(fig)
    # Text only: a legend's TextArea also has get_text, but its words are the Text inside it
    for text in fig.findobj(lambda a: isinstance(a, Text)):
        if not text.get_visible() or not str(text.get_text()).strip() or id(text) in undrawn:
            continue
        axes = text.axes
        if axes is not None and not axes.get_visible():
            continue
        found.append(text)
    return found


def _points(fig: Any) -> list[tuple[float, float, Any]]:
    """每个数据点（带 marker 的线与散点）在画布上的像素坐标，以及画出它的对象。"""
    from matplotlib.collections import PathCollection

    out = []
    for axes in fig.axes:
        for line in axes.get_lines():
            if not line.get_visible() or line.get_marker() in (None, "", "None", " ", "none"):
                continue
            xy = line.get_xydata()
            for x, y in axes.transData.transform(xy):
                out.append((float(x), float(y), line))
        for coll in axes.collections:
            if isinstance(coll, PathCollection) and coll.get_visible():
                for x, y in coll.get_offset_transform().transform(coll.get_offsets()):
                    out.append((float(x), float(y), coll))
    return out


def _box(text: Any, renderer: Any) -> Any:
    from matplotlib.text import Text

    # An annotation's own extent includes its arrow; only its words can hide other words.
    bbox = Text.get_window_extent(text, renderer)
    return bbox.expanded(1.0, 1.0).padded(-SHRINK_PX)


def _drawn(fig: Any) -> Any:
    """Draw ``fig`` once (words have extents only once drawn) and return the renderer used."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    renderer = canvas.get_renderer() if hasattr(canvas, "get_renderer") else None
    if renderer is None:
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.set_canvas(canvas)  # keep the figure's own canvas: it may be pyplot's
    fig.draw(renderer)
    return renderer


def _name(artist: Any) -> str:
    if hasattr(artist, "get_text"):
        return repr(str(artist.get_text()))
    return f"{type(artist).__name__} {artist.get_label()!r}"


def overlaps(fig: Any) -> list[tuple[str, str]]:
    """``fig`` 中互相压住的文字对，以及压住数据点的文字。

    先把图画一遍（文字的外框要画过才知道），再两两比较可见文字的外框（各向内收缩
    :data:`SHRINK_PX` 像素）；数据点是带 marker 的线与散点的各个点。
    图例框里的文字与其示例 marker 不算。

    Parameters
    ----------
    fig : matplotlib.figure.Figure

    Returns
    -------
    list of (str, str)
        每对压住的（文字，文字或数据点）；为空表示没有。

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(3, 2)); ax = fig.add_subplot()
    >>> _ = ax.text(0.5, 0.5, "ridge point"); _ = ax.text(0.52, 0.5, "compute roof")
    >>> overlaps(fig)
    [("'ridge point'", "'compute roof'")]
    >>> fig = Figure(figsize=(3, 2)); ax = fig.add_subplot()
    >>> _ = ax.text(0.1, 0.8, "memory roof"); _ = ax.text(0.6, 0.1, "compute roof")
    >>> overlaps(fig)
    []
    """
    from matplotlib.legend import Legend

    renderer = _drawn(fig)
    texts = _texts(fig)
    in_legend: set[int] = set()
    for legend in fig.findobj(Legend):
        in_legend.update(id(t) for t in legend.get_texts())
        if legend.get_title() is not None:
            in_legend.add(id(legend.get_title()))
    boxes = [(t, _box(t, renderer)) for t in texts]
    found = []
    for i, (a, box_a) in enumerate(boxes):
        if box_a.width <= 0 or box_a.height <= 0:
            continue
        for b, box_b in boxes[i + 1 :]:
            if box_b.width > 0 and box_b.height > 0 and box_a.overlaps(box_b):
                found.append((_name(a), _name(b)))
    for x, y, artist in _points(fig):
        for t, box in boxes:
            if id(t) in in_legend or t.axes is None:
                continue
            if box.x0 < x < box.x1 and box.y0 < y < box.y1:
                found.append((_name(t), _name(artist)))
    return found


#: Where :func:`place_labels` tries a label, in points from its point: right-up first.
OFFSETS = ((4, 4), (4, -4), (-4, 4), (-4, -4), (6, 10), (-6, -12))


def place_labels(
    ax: Any,
    labels: Any,
    *,
    offsets: Any = OFFSETS,
    fontsize: float = 7,
    color: str = "#222222",
) -> list[Any]:
    """把每个 ``(文字, (x, y))`` 标在它的点旁：依次试 ``offsets``，取第一个不压住已有文字、
    也不压住任何数据点的位置；哪个位置都不行的标签不画。

    用于位置由数据决定的图（例如实测的点）：换一台机器，点的位置变了，标签也不会互相压住。
    已经画好的文字（标题、轴、图例）都算障碍，所以图例要先画。

    Returns
    -------
    list of matplotlib.text.Annotation
        画出的标签。

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(3, 2)); ax = fig.add_subplot()
    >>> _ = ax.plot([1, 1.02], [1, 1.0], "o"); _ = ax.set_xlim(0, 2); _ = ax.set_ylim(0, 2)
    >>> drawn = place_labels(ax, [("first", (1, 1)), ("second", (1.02, 1.0))])
    >>> [a.get_text() for a in drawn], overlaps(fig)
    (['first', 'second'], [])
    """
    fig = ax.figure
    renderer = _drawn(fig)
    taken = [_box(t, renderer) for t in _texts(fig)]
    points = [(x, y) for x, y, _ in _points(fig)]
    drawn = []
    for name, xy in labels:
        for dx, dy in offsets:
            ann = ax.annotate(
                name, xy, xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                color=color, ha="left" if dx >= 0 else "right", va="bottom" if dy >= 0 else "top",
            )  # fmt: skip
            ann.update_positions(renderer)  # an annotation finds its place only when drawn
            box = _box(ann, renderer)
            area = ax.get_window_extent(renderer)
            inside = area.contains(box.x0, box.y0) and area.contains(box.x1, box.y1)
            clear = not any(box.overlaps(t) for t in taken)
            free = not any(box.x0 < x < box.x1 and box.y0 < y < box.y1 for x, y in points)
            if inside and clear and free:
                taken.append(box)
                drawn.append(ann)
                break
            ann.remove()
    return drawn
