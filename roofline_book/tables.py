"""Costs on a device as tables: rows, frames and the one text-table renderer.

:func:`cost_table` sets named costs against a device (roof, bound, time lower
bound, share); :func:`block_table` and :func:`optimizer_table` do it for a
decoder block (:mod:`roofline_book.transformer`). :func:`table_frame` and
:func:`readable_frame` turn rows into pandas DataFrames (pandas imported when
called). :func:`text_table` and :func:`markdown_table` render any rows of
text: the command line, the benchmark summary and the book's Markdown tables
all go through them (``tabulate``).

Examples
--------
>>> print(text_table(["op", "time"], [["add", "6 us"], ["gemm", "1.37 ms"]], right={1}))
op       time
add      6 us
gemm  1.37 ms
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .dtypes import Precision
from .extras import require
from .hardware import Hardware
from .ops import DEFAULT_SRAM_BYTES, Cost, FlashTile, fa3_tile
from .roofline import Bound, TimeBound, main_unit, time_bound, unit_rates
from .transformer import DecoderConfig, block_ops, optimizer_ops
from .units import si


@dataclass(frozen=True)
class Row:
    """One operator on one device: its cost, which roof binds, and its time lower bound."""

    name: str
    cost: Cost
    time: TimeBound
    share: float
    """Fraction of the table's summed time lower bounds."""

    @property
    def bound(self) -> Bound:
        """Whether a memory level or a compute unit sets the bound."""
        return self.time.bound

    @property
    def resource(self) -> str:
        """The unit or memory level that sets the bound (``"matrix"``, ``"hbm"``, ...)."""
        return self.time.resource

    @property
    def rates(self) -> dict[str, float]:
        """Each compute unit's FLOPs over the time lower bound, by unit.

        See :func:`roofline_book.roofline.unit_rates`.
        """
        return unit_rates(self.cost, self.time)

    @property
    def unit(self) -> str | None:
        """The unit :attr:`attainable` is reported on, the one doing most FLOPs."""
        return main_unit(self.cost, self.time)

    @property
    def attainable(self) -> float:
        """The best rate the operator's main unit can reach, its FLOPs over the time
        lower bound (FLOP/s): ``min(P, B I)`` for work on one unit, and never above
        that unit's peak. 0 for an operator that does no FLOPs."""
        unit = self.unit
        return 0.0 if unit is None else self.rates[unit]


def cost_table(
    named: Mapping[str, Cost] | Iterable[tuple[str, Cost]],
    device: Hardware,
    dtype: Precision = "bf16",
) -> list[Row]:
    """Named costs on ``device``: roof, bound, time lower bound and share of each, in order.

    Each operator is held to every ceiling it uses
    (:func:`roofline_book.roofline.time_bound`): its matrix FLOPs to the
    device's matrix peak in ``dtype``, vector and special-function FLOPs to
    those units' rates, its bytes to HBM (and L2 where modelled). For your
    own figures, build the device with :func:`roofline_book.hardware.adhoc`.

    Parameters
    ----------
    named : mapping or list of tuple
        The operators, ``{name: Cost}`` or ``[(name, Cost), ...]``; at least
        one, each moving at least one byte.
    device : roofline_book.hardware.Hardware
        Where they run.
    dtype : str or torch.dtype
        The operators' precision, which picks the ceilings.

    Returns
    -------
    list of Row
        One per operator, in the order given; the shares sum to 1.
        :func:`table_frame` turns them into a ``pandas.DataFrame``.

    Examples
    --------
    On the example device (100 TFLOP/s, 1 TB/s): the BF16 add moves 6 bytes per
    FLOP, so its roof is 1 TB/s / 6; the 4096^3 GEMM is under the flat roof.

    >>> from roofline_book.hardware import EXAMPLE
    >>> from roofline_book.ops import add, gemm
    >>> rows = cost_table({"add": add(4096 * 4096), "gemm": gemm(4096, 4096, 4096)}, EXAMPLE)
    >>> [(r.name, r.bound, round(r.attainable / 1e12, 3)) for r in rows]
    [('add', 'memory', 0.167), ('gemm', 'compute', 100.0)]

    The add's bound is ``6 * 4096**2 / 1e12`` s = 100.7 us, the GEMM's
    ``2 * 4096**3 / 100e12`` s = 1374.4 us:

    >>> [round(r.time.seconds * 1e6, 1) for r in rows]
    [100.7, 1374.4]
    >>> round(rows[0].share, 3)                 # 100.7 / (100.7 + 1374.4)
    0.068
    """
    if not isinstance(device, Hardware):
        raise TypeError(f"device must be a Hardware, got {type(device).__name__}")
    pairs = _named_costs(named)
    times = [time_bound(c, device, dtype) for _, c in pairs]
    total = sum(t.seconds for t in times)
    return [
        Row(name, cost, t, t.seconds / total) for (name, cost), t in zip(pairs, times, strict=True)
    ]


def _named_costs(named: object) -> list[tuple[str, Cost]]:
    """``named`` as a non-empty list of (name, Cost) pairs, each Cost moving some bytes."""
    if isinstance(named, Mapping):
        items = list(named.items())
    elif isinstance(named, (str, bytes)) or not isinstance(named, Iterable):
        raise TypeError(
            f"named must be a mapping of name to Cost or an iterable of (name, Cost) pairs, "
            f"got {type(named).__name__}"
        )
    else:
        items = list(named)
    if not items:
        raise ValueError("named must hold at least one (name, Cost) pair, got none")
    pairs = []
    for i, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"named[{i}] must be a (name, Cost) pair, got {item!r}")
        name, cost = item
        if not isinstance(name, str):
            raise TypeError(f"named[{i}]: the name must be a str, got {type(name).__name__}")
        if not isinstance(cost, Cost):
            raise TypeError(
                f"named[{i}] ({name!r}): the cost must be a roofline_book.Cost, "
                f"got {type(cost).__name__}"
            )
        if cost.bytes == 0:
            raise ValueError(f"named[{i}] ({name!r}) moves no bytes, so it has no intensity")
        pairs.append((name, cost))
    return pairs


def table_frame(rows: Iterable[Row]):
    """The rows as a ``pandas.DataFrame`` (pandas must be installed), one column per figure.

    Columns: operator, FLOPs, bytes, intensity (FLOP/byte), attainable
    (FLOP/s), bound, time lower bound (microsecond), share of the table's time.
    """
    rows = list(rows)
    for i, r in enumerate(rows):
        if not isinstance(r, Row):
            raise TypeError(f"rows[{i}] must be a Row (see cost_table), got {type(r).__name__}")
    pd = require("pandas", "table_frame")

    return pd.DataFrame(
        {
            "operator": [r.name for r in rows],
            "FLOPs": [r.cost.flops for r in rows],
            "bytes": [r.cost.bytes for r in rows],
            "intensity [FLOP/B]": [r.cost.intensity for r in rows],
            "attainable [FLOP/s]": [r.attainable for r in rows],
            "bound": [r.bound for r in rows],
            "resource": [r.resource for r in rows],
            "time bound [us]": [r.time.seconds * 1e6 for r in rows],
            "share": [r.share for r in rows],
        }
    )


def readable_frame(rows: Iterable[Row], digits: int = 3):
    """The rows for reading: SI-prefixed text, one row per operator (a pandas DataFrame).

    Columns: FLOPs, bytes, I [FLOP/B], bound, time bound, share; the index is
    the operator name. Numbers and units are joined by a no-break space, so a
    narrow table column never splits them.

    Examples
    --------
    >>> from roofline_book import EXAMPLE, add, gemm
    >>> df = readable_frame(cost_table([("add", add(2**20)), ("gemm", gemm(4096, 4096, 4096))],
    ...                                EXAMPLE))
    >>> df.loc["gemm", "FLOPs"].replace("\\u00a0", " "), df.loc["add", "I [FLOP/B]"]
    ('137 GFLOP', '0.17')
    """
    pd = require("pandas", "table_frame")

    df = table_frame(rows)

    def unit(value: float, name: str) -> str:
        return si(value, name, digits=digits).replace(" ", "\u00a0")

    return pd.DataFrame(
        {
            "FLOPs": [unit(v, "FLOP") for v in df["FLOPs"]],
            "bytes": [unit(v, "B") for v in df["bytes"]],
            "I [FLOP/B]": [f"{v:.2f}" if v < 10 else f"{v:.0f}" for v in df["intensity [FLOP/B]"]],
            "bound": list(df["bound"]),
            "time bound": [unit(t * 1e-6, "s") for t in df["time bound [us]"]],
            "share": [f"{v:.1%}" for v in df["share"]],
        },
        index=pd.Index(df["operator"], name="operator"),
    )


def device_sram_bytes(device: Hardware) -> int:
    """On-chip memory a flash kernel's block can use on ``device`` (byte).

    The device's shared memory per SM, or :data:`roofline_book.ops.DEFAULT_SRAM_BYTES`
    (the A100's 192 KB) where the catalog gives none.

    Examples
    --------
    >>> from roofline_book.hardware import EXAMPLE, hardware
    >>> device_sram_bytes(hardware("h100-sxm")) // 1024, device_sram_bytes(EXAMPLE) // 1024
    (228, 192)
    """
    smem = device.shared_memory_per_sm
    return DEFAULT_SRAM_BYTES if smem is None else int(smem)


#: Catalog devices built on Hopper SMs (compute capability 9.0), where FlashAttention-3's
#: tile table (:func:`roofline_book.ops.fa3_tile`) applies.
HOPPER_DEVICES = frozenset({"h100-sxm", "h800-sxm", "h20", "h200-sxm"})


def device_flash_tile(
    device: Hardware, head_dim: int, dtype: Precision = "bf16", causal: bool = False
) -> FlashTile | None:
    """The tile of the flash kernel ``device`` runs: FlashAttention-3's on Hopper, else None.

    None means no published tile table for the device, so
    :func:`roofline_book.ops.attention` falls back on its on-chip memory rule
    (``sram_bytes``, :func:`device_sram_bytes`). A head dim or precision FA3
    does not run (above 256, FP32) also gets None.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> device_flash_tile(hardware("h100-sxm"), 128)
    FlashTile(block_m=128, block_n=176, cluster_m=2)
    >>> device_flash_tile(hardware("a100-sxm"), 128) is None
    True
    """
    if device.key not in HOPPER_DEVICES:
        return None
    try:
        return fa3_tile(head_dim, dtype, causal)
    except ValueError:
        return None


def block_table(
    config: DecoderConfig,
    device: Hardware,
    *,
    attention_impl: str = "flash",
    sram_bytes: int | None = None,
) -> list[Row]:
    """The block's forward operators on ``device``, each with bound, time lower bound and share.

    Each operator is held to the ceilings of the units and levels it uses
    (:func:`cost_table`), in ``config.dtype``. The flash kernel's tile is
    the one ``device`` runs (:func:`device_flash_tile`: FlashAttention-3's
    on Hopper); where there is none, or when ``sram_bytes`` is given, its
    query blocks follow the on-chip memory rule, ``sram_bytes`` defaulting
    to the device's shared memory per SM (the A100's 192 KB where the
    device gives none).

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> from roofline_book.transformer import LLAMA2_7B
    >>> rows = {r.name: r for r in block_table(LLAMA2_7B, hardware("h100-sxm"))}
    >>> rows["MLP up projection"].resource, rows["residual add"].resource
    ('matrix', 'hbm')
    >>> round(sum(r.share for r in rows.values()), 6)
    1.0
    """
    if not isinstance(device, Hardware):
        raise TypeError(f"device must be a Hardware, got {type(device).__name__}")
    tile = None
    if sram_bytes is None:
        sram_bytes = device_sram_bytes(device)
        tile = device_flash_tile(device, config.head_dim, config.dtype, config.causal)
    return cost_table(
        block_ops(config, attention_impl=attention_impl, sram_bytes=sram_bytes, tile=tile),
        device,
        config.dtype,
    )


def optimizer_table(
    config: DecoderConfig,
    device: Hardware,
    *,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
    model_dtype: Precision | None = None,
) -> list[Row]:
    """One AdamW step over the block's parameters, in each implementation, on ``device``.

    The compute roof is the device's peak in ``param_dtype``; the share column
    compares the three implementations with each other.

    Examples
    --------
    >>> from roofline_book.hardware import hardware
    >>> from roofline_book.transformer import LLAMA2_7B
    >>> rows = optimizer_table(LLAMA2_7B, hardware("h100-sxm"), grad_dtype="bf16",
    ...                        model_dtype="bf16")
    >>> [r.name for r in rows], {r.bound for r in rows}
    (['AdamW (loop)', 'AdamW (foreach)', 'AdamW (fused)'], {'memory'})
    """
    named = optimizer_ops(
        config,
        param_dtype=param_dtype,
        grad_dtype=grad_dtype,
        state_dtype=state_dtype,
        model_dtype=model_dtype,
    )
    return cost_table(named, device, param_dtype)


# --------------------------------------------------------------------------
# Rendering


_ALIGN = ("left", "right", "center")


def _aligned(
    header: Sequence[str] | None,
    rows: Sequence[Sequence[object]],
    right: Collection[int],
    align: Sequence[str] | None = None,
) -> tuple[list[list[str]], list[str]]:
    lines = ([list(header)] if header else []) + [[str(c) for c in r] for r in rows]
    if not lines:
        raise ValueError("a table needs a header or at least one row")
    width = len(lines[0])
    for i, line in enumerate(lines):
        if len(line) != width:
            raise ValueError(f"row {i} has {len(line)} cells, the table has {width} columns")
    if align is None:
        return lines, ["right" if i in right else "left" for i in range(width)]
    if len(align) != width or not set(align) <= set(_ALIGN):
        raise ValueError(
            f"align must hold {width} of 'left', 'right', 'center'; got {list(align)!r}"
        )
    return lines, list(align)


def text_table(
    header: Sequence[str] | None, rows: Sequence[Sequence[str]], right: Collection[int] = ()
) -> str:
    """Rows of text as aligned plain text, two spaces between columns.

    Parameters
    ----------
    header : sequence of str or None
        The first line; None for none.
    rows : sequence of sequence of str
        One per line, each with as many cells as the header.
    right : set of int
        Indices of the columns to right-align (numbers); the others are left-aligned.
    """
    from tabulate import tabulate

    lines, align = _aligned(header, rows, right)
    # the header goes in as a row: tabulate pads a separate header line differently
    text = tabulate(lines, tablefmt="plain", colalign=align, disable_numparse=True)
    return "\n".join(line.rstrip() for line in text.splitlines())


def markdown_table(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    right: Collection[int] = (),
    *,
    align: Sequence[str] | None = None,
) -> str:
    """Rows as a Markdown (pipe) table; a ``|`` inside a cell is escaped.

    Cells are written as ``str(cell)``. ``align`` (``"left"``, ``"right"`` or
    ``"center"`` per column) overrides ``right``.

    Examples
    --------
    >>> print(markdown_table(["op", "n"], [["a|b", "12"]], right={1}))
    | op   |   n |
    |:-----|----:|
    | a\\|b |  12 |
    """
    from tabulate import tabulate

    escaped = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    lines, colalign = _aligned([str(h) for h in header], escaped, right, align)
    return tabulate(
        lines[1:], headers=lines[0], tablefmt="pipe", colalign=colalign, disable_numparse=True
    )
