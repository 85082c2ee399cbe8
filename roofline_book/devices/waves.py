"""GEMM 的输出分块怎样一轮一轮（wave）分给 SM：轮数、最后一轮的块数与忙碌的 SM 比例。

模型：输出 $C$（$M\\times N$）切成 $t_M\\times t_N$ 的分块，每块由一个 thread block 算完；每个
SM 同时算一块，所有 SM 各算一块称为一轮。块数不是 SM 数的整数倍时，最后一轮只有一部分 SM 有活干。
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import validate as _validate
from .catalog import hardware
from .device import Hardware

#: 默认的输出分块（行, 列）：本书 wave 的例子所取的 128 x 128；实际 kernel 的分块随形状与库而变。
DEFAULT_TILE = (128, 128)


@dataclass(frozen=True)
class Waves:
    """输出分块在 SM 上排成的轮。

    Attributes
    ----------
    tiles : int
        输出分块数：$\\lceil M/t_M\\rceil\\cdot\\lceil N/t_N\\rceil$。
    sms : int
        SM 数（每轮最多同时算的块数）。
    full_waves : int
        填满的轮数。
    last : int
        最后一轮的块数：不足一轮的余数；整除时为 ``sms``。
    """

    tiles: int
    sms: int
    full_waves: int
    last: int

    @property
    def waves(self) -> int:
        """总轮数 $\\lceil \\text{tiles}/\\text{sms}\\rceil$。"""
        return -(-self.tiles // self.sms)

    @property
    def last_fill(self) -> float:
        """最后一轮里有活干的 SM 的比例。"""
        return self.last / self.sms

    @property
    def efficiency(self) -> float:
        """按整轮计、能用到的算力比例：tiles / (waves x sms)。"""
        return self.tiles / (self.waves * self.sms)


def gemm_waves(
    m: int, n: int, *, tile: tuple[int, int] = DEFAULT_TILE, device: Hardware | str = "h100-sxm"
) -> Waves:
    """$M\\times N$ 的输出按 ``tile`` 切块、每个 SM 同时算一块时，分块在 ``device`` 的 SM 上
    排成的轮。

    Parameters
    ----------
    m, n : int
        输出的行数与列数（GEMM 的 $M$ 与 $N$）。
    tile : (int, int)
        一个输出分块的行数与列数。
    device : Hardware or str
        设备（须有 SM 数）。

    Examples
    --------
    4096 x 4096 的输出、128 x 128 的分块：32 x 32 = 1024 块；H100 有 132 个 SM，
    1024 = 7 x 132 + 100，最后一轮 100 块。

    >>> w = gemm_waves(4096, 4096)
    >>> w.tiles, w.waves, w.full_waves, w.last, round(w.last_fill, 3)
    (1024, 8, 7, 100, 0.758)
    >>> gemm_waves(4096, 4096, device="a100-sxm").last    # 1024 = 9 x 108 + 52
    52
    """
    m = _validate.size("m", m)
    n = _validate.size("n", n)
    if not isinstance(tile, tuple) or len(tile) != 2:
        raise _validate.InvalidArgumentType("tile", f"must be a pair (rows, cols), got {tile!r}")
    tm = _validate.size("tile rows", tile[0])
    tn = _validate.size("tile cols", tile[1])
    dev = hardware(device) if isinstance(device, str) else device
    if dev.sms is None:
        raise _validate.InvalidArgument("device", f"{dev.key} publishes no SM count")
    tiles = -(-m // tm) * -(-n // tn)
    full, rest = divmod(tiles, dev.sms)
    return Waves(tiles=tiles, sms=dev.sms, full_waves=full, last=rest or dev.sms)
