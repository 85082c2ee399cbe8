"""请求从哪里来：到达过程（Poisson、匀速、一次全到、trace 文件）与 prompt、输出的长度。

长度可以是固定的 ``"1000"``，也可以从分布中抽：``"uniform:500:1500"``（两端都含）、
``"exponential:1000"``（均值）、``"normal:1000:200"``（均值与标准差，截到至少 1）。同一个
``seed`` 给出同一串请求。
"""

from __future__ import annotations

import csv
import io
import math
import random
from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument

#: 长度分布的名字。
DISTRIBUTIONS = ("uniform", "exponential", "normal")


@dataclass(frozen=True)
class Request:
    """一个请求：到达时间（秒）、prompt 的 token 数、要生成的 token 数。"""

    arrival: float
    prompt: int
    output: int


@dataclass(frozen=True)
class Lengths:
    """一种长度：固定值，或一个分布（:data:`DISTRIBUTIONS`）及其参数。

    Examples
    --------
    >>> Lengths.parse("prompt", "1000").draw(random.Random(0))
    1000
    >>> Lengths.parse("prompt", "uniform:10:20").mean
    15.0
    >>> Lengths.parse("output", "zipf:3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: output ('zipf:3') must be a token count or one of ...
    """

    kind: str
    params: tuple[float, ...]

    @classmethod
    def parse(cls, name: str, text: str | int) -> Lengths:
        allowed = "a token count or one of uniform:LO:HI, exponential:MEAN, normal:MEAN:STD"
        if isinstance(text, int) and not isinstance(text, bool):
            return cls("fixed", (_validate.size(name, text),))
        parts = str(text).strip().split(":")
        try:
            if len(parts) == 1:
                return cls("fixed", (_validate.size(name, int(parts[0])),))
            kind, values = parts[0], tuple(float(x) for x in parts[1:])
        except (ValueError, InvalidArgument):
            raise InvalidArgument(name, f"({text!r}) must be {allowed}") from None
        arity = {"uniform": 2, "exponential": 1, "normal": 2}
        if kind not in arity or len(values) != arity[kind]:
            raise InvalidArgument(name, f"({text!r}) must be {allowed}")
        if any(not math.isfinite(v) or v < 0 for v in values) or values[0] < 1:
            raise InvalidArgument(name, f"({text!r}) needs finite parameters, the first >= 1")
        if kind == "uniform" and values[1] < values[0]:
            raise InvalidArgument(name, f"({text!r}): HI must be >= LO")
        return cls(kind, values)

    @property
    def mean(self) -> float:
        """分布的均值（token）；截断与取整不计。"""
        if self.kind == "uniform":
            return (self.params[0] + self.params[1]) / 2
        return self.params[0]

    def draw(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return int(self.params[0])
        if self.kind == "uniform":
            return rng.randint(math.ceil(self.params[0]), math.floor(self.params[1]))
        if self.kind == "exponential":
            return max(1, round(rng.expovariate(1 / self.params[0])))
        return max(1, round(rng.gauss(self.params[0], self.params[1])))

    def __str__(self) -> str:
        if self.kind == "fixed":
            return str(int(self.params[0]))
        return ":".join([self.kind, *(f"{v:g}" for v in self.params)])


def parse_rate(text: str | float) -> float:
    """``--rate`` 的值：每秒请求数，或 ``inf`` （全部在时刻 0 到达）。"""
    if isinstance(text, str) and text.strip().lower() in ("inf", "infinity"):
        return math.inf
    try:
        rate = float(text)
    except (TypeError, ValueError):
        raise InvalidArgument("rate", f"({text!r}) must be requests per second or 'inf'") from None
    if math.isnan(rate) or rate <= 0:
        raise InvalidArgument("rate", f"({text!r}) must be above 0, or 'inf'")
    return rate


def generate(
    count: int,
    rate: float,
    prompt: Lengths,
    output: Lengths,
    *,
    arrivals: str = "poisson",
    seed: int = 0,
) -> list[Request]:
    """``count`` 个请求，每秒 ``rate`` 个（``arrivals``：``"poisson"`` 或 ``"constant"``）。

    ``rate`` 为无穷时全部在时刻 0 到达。间隔用单位速率的抽样除以 ``rate``，所以同一个 ``seed`` 下
    换一个速率只是把时间轴伸缩，长度不变。

    Examples
    --------
    >>> rs = generate(3, 2.0, Lengths.parse("prompt", 100), Lengths.parse("output", 10),
    ...               arrivals="constant")
    >>> [r.arrival for r in rs]
    [0.0, 0.5, 1.0]
    """
    count = _validate.size("requests", count)
    if arrivals not in ("poisson", "constant"):
        raise InvalidArgument("arrivals", f"({arrivals!r}) must be 'poisson' or 'constant'")
    rng = random.Random(seed)
    lengths = random.Random(seed + 1)
    out, t = [], 0.0
    for i in range(count):
        if i:
            gap = rng.expovariate(1.0) if arrivals == "poisson" else 1.0
            t += 0.0 if math.isinf(rate) else gap / rate
        out.append(Request(t, prompt.draw(lengths), output.draw(lengths)))
    return out


def read_trace(text: str) -> list[Request]:
    """trace 文件的内容（CSV，表头含 ``arrival_s``、``prompt_tokens``、``output_tokens``）。

    Examples
    --------
    >>> read_trace("arrival_s,prompt_tokens,output_tokens\\n0.5,100,20\\n0,50,10\\n")
    [Request(arrival=0.0, prompt=50, output=10), Request(arrival=0.5, prompt=100, output=20)]
    """
    rows = list(csv.DictReader(io.StringIO(text)))
    need = ("arrival_s", "prompt_tokens", "output_tokens")
    if not rows or any(k not in rows[0] for k in need):
        raise InvalidArgument("trace", f"must be CSV with a header naming {', '.join(need)}")
    out = []
    for i, row in enumerate(rows, start=2):
        try:
            arrival = float(row["arrival_s"])
            prompt, output = int(row["prompt_tokens"]), int(row["output_tokens"])
        except (TypeError, ValueError):
            raise InvalidArgument("trace", f"line {i}: {dict(row)} is not numbers") from None
        if not math.isfinite(arrival) or arrival < 0 or prompt < 1 or output < 1:
            raise InvalidArgument(
                "trace", f"line {i}: arrival must be >= 0 and token counts >= 1, got {dict(row)}"
            )
        out.append(Request(arrival, prompt, output))
    return sorted(out, key=lambda r: r.arrival)


__all__ = ["DISTRIBUTIONS", "Lengths", "Request", "generate", "parse_rate", "read_trace"]
