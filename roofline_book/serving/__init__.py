"""serving：请求按步调度，每一步取它那个 batch 的下界，连成一项服务的延迟与吞吐。

- :mod:`~roofline_book.serving.steps`：一步混合 batch 的下界（:class:`StepModel`）；
- :mod:`~roofline_book.serving.workload`：请求与它们的长度；
- :mod:`~roofline_book.serving.engine`：一个引擎的调度与 KV cache 的 block；
- :mod:`~roofline_book.serving.simulate`：部署与离散事件的模拟（:func:`simulate`）；
- :mod:`~roofline_book.serving.search`：满足 SLO 的最高到达率，聚合与分离的比较。

Examples
--------
>>> from roofline_book import hardware
>>> from roofline_book.llm.config import model
>>> requests = generate(100, 5.0, Lengths.parse("prompt", 1000), Lengths.parse("output", 200))
>>> r = simulate(Deployment(model("llama-3-8b"), hardware("h100-sxm")), requests)
>>> r.ttft_s.p50 < 0.05 and r.tpot_s.p50 < 0.01   # lower bounds, in seconds
True
"""

from .search import Load, Slo, compare, max_rate, sweep
from .simulate import Deployment, ServeResult, simulate
from .steps import StepModel
from .workload import Lengths, Request, generate, read_trace

__all__ = [
    "Deployment",
    "Lengths",
    "Load",
    "Request",
    "ServeResult",
    "Slo",
    "StepModel",
    "compare",
    "generate",
    "max_rate",
    "read_trace",
    "simulate",
    "sweep",
]
