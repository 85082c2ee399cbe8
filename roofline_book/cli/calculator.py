"""命令行在书的计算器页面上：在本进程中运行一条命令，把它的 JSON 结果排成中文表格与图中的点。

计算器页面（``docs/calculator.md``）在读者的浏览器里用 Pyodide 运行本包：页面的
``window.rooflineBook.run(argv)`` 调用 :func:`run`，与安装后的 ``roofline-book`` 得到同样的
stdout；:func:`tables` 与 :func:`points` 读 ``--json`` 的结果，给出页面上的表格和 roofline
图中的点。这里只用标准库和本包的纯 Python 部分（浏览器里没有 NumPy）。

页面上粘贴的 ``config.json`` 经 ``run(argv, config=text)`` 写成一个临时文件夹里的
:data:`CONFIG_FILE`，命令行照常以 ``--model config.json`` 读它
（:func:`roofline_book.llm.config.model_from_config`）：与把同样的内容存为 ``config.json``、
在那个文件夹里运行同一条命令，输出相同，错误也是命令行的那一行。

Examples
--------
>>> done = run(["op", "softmax", "--rows", "4096", "--cols", "4096", "--json"])
>>> done["code"], done["stderr"]
(0, '')
>>> import json
>>> result = json.loads(done["stdout"])
>>> [row[0] for row in tables(result)[0]["rows"]][:3]
['FLOPs', '读取的字节', '写入的字节']
>>> run(["op", "softmax", "--rows", "0", "--cols", "8"])["code"]
2
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..present.tables import RESOURCE_ZH
from ..units import si
from . import calculator_serve
from .common import number as _number

#: 限制类型的中文叫法（JSON 的 ``bound_kind``）。
BOUND_KINDS_ZH = {"compute": "compute-bound", "memory": "memory-bound"}

#: 粘贴的配置在命令行中的文件名（``--model config.json``）。
CONFIG_FILE = "config.json"


@contextlib.contextmanager
def _pasted(config: str | None) -> Iterator[None]:
    """``config`` 不为 None 时：在一个临时文件夹里把它写成 :data:`CONFIG_FILE`，期间以那里为
    工作目录（命令行按相对路径读它，错误信息里也只有这个文件名）。"""
    if config is None:
        yield
        return
    if not isinstance(config, str):
        raise TypeError(f"config must be the text of a config.json, got {type(config).__name__}")
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, CONFIG_FILE).write_text(config, "utf-8")
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(here)


def run(argv: Sequence[str], config: str | None = None) -> dict[str, Any]:
    """在本进程中运行 ``roofline-book ARGV``，捕获它的输出。

    Parameters
    ----------
    argv : sequence of str
        ``roofline-book`` 之后的参数。
    config : str, optional
        粘贴的 ``config.json`` 的文本：命令在一个只有这个文件（:data:`CONFIG_FILE`）的文件夹里
        运行，``--model config.json`` 读它。

    Returns
    -------
    dict
        ``code`` （退出状态，int）、``stdout`` 与 ``stderr`` （str）：与在终端里运行
        安装后的命令相同。
    """
    from . import main

    if isinstance(argv, str) or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a sequence of str, e.g. ['op', 'gemm', '--m', '64']")
    out, err = io.StringIO(), io.StringIO()
    with _pasted(config), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse exits on a usage error and on --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _resource(name: str) -> str:
    return RESOURCE_ZH.get(name, name)


def _bound(result: Mapping[str, Any]) -> str:
    kind = BOUND_KINDS_ZH.get(result["bound_kind"], result["bound_kind"])
    return f"{_resource(result['bound'])}（{kind}）"


def _rate(device: Mapping[str, Any], resource: str) -> str:
    """The rate the resource's time divides by: a unit's peak, or a memory level's bandwidth."""
    peaks = device["peaks_per_s"]
    if resource == "special":  # evaluations of sin, exp, ..., not FLOPs
        return f"{si(peaks[resource])} 次/s"
    if resource in peaks:
        return si(peaks[resource], "FLOP/s")
    if resource == "compute":  # an ad-hoc device: one peak for every unit
        return si(max(peaks.values()), "FLOP/s")
    return si(device["bandwidths_Bps"][resource], "B/s")


def _op_tables(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    device = result["device"]
    rows = [
        ["FLOPs", si(result["flops"], "FLOP")],
        ["读取的字节", si(result["bytes_read"], "B")],
        ["写入的字节", si(result["bytes_written"], "B")],
        ["必需字节数", si(result["bytes"], "B")],
    ]
    if result["reread_bytes"]:
        rows.append(["重复读取的字节", si(result["reread_bytes"], "B")])
    ridge = "ridge point" if device["adhoc"] else "ridge point（矩阵单元对 HBM）"
    rows += [
        ["kernel 数", str(result["kernels"])],
        ["算术强度", f"{_number(result['intensity'])} FLOP/B"],
        [ridge, f"{_number(device['ridge_point'])} FLOP/B"],
        ["受限于", _bound(result)],
    ]
    unit = result["attainable_unit"]
    if unit is not None:
        rate = result["attainable_per_s"]
        shown = f"{si(rate)} 次/s" if unit == "special" else si(rate, "FLOP/s")
        rows.append([f"可达性能（{_resource(unit)}）", shown])
    rows.append(["时间下界", si(result["time_lower_bound_s"], "s")])
    times = [
        [
            _resource(name),
            _rate(device, name),
            si(seconds, "s"),
            "是" if name == result["bound"] else "",
        ]
        for name, seconds in result["time_by_resource_s"].items()
    ]
    return [
        {
            "title": f"{result['operator']} 的代价与时间下界",
            "header": ["项目", "数值"],
            "rows": rows,
        },
        {
            "title": "每种资源所需的时间",
            "header": ["资源", "峰值或带宽", "时间", "决定下界"],
            "rows": times,
        },
    ]


def _layer_table(title: str, layer_ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "title": title,
        "header": ["算子", "FLOPs", "字节", "算术强度（FLOP/B）", "受限于", "时间下界"],
        "rows": [
            [
                op["name"],
                si(op["flops"], "FLOP"),
                si(op["bytes"], "B"),
                _number(op["intensity"]),
                _resource(op["bound"]),
                si(op["time_lower_bound_s"], "s"),
            ]
            for op in layer_ops
        ],
    }


def _infer_tables(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    prefill, decode = result["prefill"], result["decode"]
    fits = result["max_batch"]
    rows = [
        ["参数量", si(result["parameters"])],
        ["权重", si(result["weight_bytes"], "B")],
        ["每个 token 的 KV cache", si(result["kv_cache_bytes_per_token"], "B")],
        ["每条序列的 KV cache", si(result["kv_cache_bytes_per_sequence"], "B")],
        ["整个 batch 的 KV cache", si(result["kv_cache_bytes"], "B")],
    ]
    split = result["devices"] > 1
    if result["precisions"]["source"] == "checkpoint":
        p = result["precisions"]
        block = p["weight_block"]
        scales = f"，每 {block}×{block} 块一个 FP32 scale" if block else ""
        rows.insert(
            2,
            [
                "精度（取自 config.json 的 quantization_config）",
                f"权重 {p['weights']}、激活 {p['activations']}（{p['scheme']}）{scales}",
            ],
        )
    if split:
        nodes = result["nodes"]
        where = "一个节点" if nodes == 1 else f"{nodes} 个节点"
        rows.append(
            [
                "设备数",
                f"{result['devices']}（max(TP {result['tp']}, EP {result['ep']}) × PP "
                f"{result['pp']}，{where}）",
            ]
        )
        if result["attention_dp"] > 1:
            rows.append(
                [
                    "每块设备的 attention 处理的序列数（DP attention）",
                    f"{result['batch_per_device']}（{result['attention_dp']} 组数据并行）",
                ]
            )
        rows += [
            ["每块设备的权重", si(result["weight_bytes_per_device"], "B")],
            [
                "每块设备上每条序列的 KV cache",
                si(result["kv_cache_bytes_per_sequence_per_device"], "B"),
            ],
        ]
    rows += [
        ["显存装得下的最大 batch", "—" if fits is None else str(fits)],
        ["prefill 的时间下界（算子逐个执行）", si(prefill["time_lower_bound_s"], "s")],
        [
            "prefill 的时间下界（任何实现）",
            si(prefill["any_implementation_time_lower_bound_s"], "s"),
        ],
        ["decode 一步的时间下界（算子逐个执行）", si(decode["time_lower_bound_s"], "s")],
        [
            "decode 一步的时间下界（任何实现）",
            si(decode["any_implementation_time_lower_bound_s"], "s"),
        ],
        # as the text output words them: a count of tokens, a batch
        ["decode 每秒 token 数的上限（算子逐个执行）", f"{decode['tokens_per_s']:,.0f}"],
        ["权重 GEMM 达到 ridge point 的 decode batch", f"{result['decode_batch_to_ridge']:.0f}"],
    ]
    if split:
        rows.append(["decode 一步的通信时间（带宽项）", si(result["communication_time_s"], "s")])
    # the layer's operators are the whole layer's, as the text output's "before the split":
    # with TP (or EP) each device runs a share of them
    where = "（整层，拆分到各设备之前）" if split or result["ep"] > 1 else ""
    return [
        {"title": f"{result['model']} 的推理", "header": ["项目", "数值"], "rows": rows},
        _layer_table(f"一层的算子：prefill{where}", prefill["layer_ops"]),
        _layer_table(f"一层的算子：decode 一步{where}", decode["layer_ops"]),
    ]


def tables(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``op --json``、``infer --json`` 或 ``serve --json`` 的结果，排成页面上的中文表格。

    Parameters
    ----------
    result : mapping
        命令 JSON 输出解析后的对象。

    Returns
    -------
    list of dict
        每张表一个 ``{"title", "header", "rows"}``，单元格都是 str，数字与命令行文本输出
        一样由 :func:`roofline_book.units.si` 写出。

    Raises
    ------
    ValueError
        ``result`` 不是 ``op``、``infer`` 或 ``serve`` 的结果。
    """
    command = result.get("command") if isinstance(result, Mapping) else None
    if command == "op":
        return _op_tables(result)
    if command == "infer":
        return _infer_tables(result)
    if command == "serve":
        return calculator_serve.tables(result)
    raise ValueError(
        f"result must be the JSON of `op`, `infer` or `serve`; got command {command!r}"
    )


def serve_figures(argv: Sequence[str], config: str | None = None) -> dict[str, Any]:
    """``serve ARGV`` 的 Pareto 曲线与时间线要的数（:func:`.calculator_serve.figures`）；
    ``config`` 与 :func:`run` 的相同：粘贴的 ``config.json``。"""
    if isinstance(argv, str) or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a sequence of str, e.g. ['serve', '--model', 'llama-3-8b']")
    with _pasted(config):
        return calculator_serve.figures(argv)


def points(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """roofline 图上的点：每个算子的算术强度与它可达的算力。

    横坐标与书中的图一样，是决定下界的那个计算单元自己的算术强度 ``I_u = F_u / bytes``
    （第 4 章），纵坐标是它在该处的可达速率，所以点落在这个单元的 roof 上或其下。

    Returns
    -------
    list of dict
        ``{"label", "group", "unit", "intensity" (FLOP/B), "rate" (FLOP/s)}``；``group`` 为
        ``"op"``、``"prefill"`` 或 ``"decode"``。不做 FLOP 的算子（如 KV cache write）与受特殊
        函数单元限制的算子（它的速率按每秒求值次数计，不在 FLOP/s 轴上）不在图上。
    """
    command = result.get("command") if isinstance(result, Mapping) else None
    if command == "op":
        found = [(result["operator"], "op", result)]
    elif command == "infer":
        found = [
            (op["name"], phase, op)
            for phase in ("prefill", "decode")
            for op in result[phase]["layer_ops"]
        ]
    else:
        raise ValueError(f"result must be the JSON of `op` or `infer`; got command {command!r}")
    placed = []
    for label, group, item in found:
        unit = item["attainable_unit"]
        if unit is None or unit == "special" or item["bytes"] == 0:
            continue
        flops = item["flops"] if unit == "compute" else item["flops_by_unit"][unit]
        if flops > 0:
            intensity, rate = flops / item["bytes"], item["attainable_per_s"]
            placed.append(
                {
                    "label": label,
                    "group": group,
                    "unit": unit,
                    "intensity": intensity,
                    "rate": rate,
                    "text": f"{label}：{_number(intensity)} FLOP/B，{si(rate, 'FLOP/s')}",
                }
            )
    return placed


def roofs(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """roofline 图上的 roof：各存储层级的带宽（斜线）与各计算单元的峰值（水平线）。

    特殊函数单元按每秒求值次数计，不在 FLOP/s 轴上；ad-hoc 设备的各单元共用一个峰值，只画一条
    ``"compute"``。

    Returns
    -------
    list of dict
        ``{"kind" ("memory" 或 "compute"), "name", "rate" (B/s 或 FLOP/s), "label"}``，
        存储层级在前。

    Examples
    --------
    >>> done = run(["op", "add", "--numel", "1M", "--peak", "100T", "--bandwidth", "1T", "--json"])
    >>> import json
    >>> [r["label"] for r in roofs(json.loads(done["stdout"]))]
    ['HBM 1 TB/s', '计算 100 TFLOP/s']
    """
    device = result["device"]
    memory = [
        {"kind": "memory", "name": n, "rate": b, "label": f"{_resource(n)} {si(b, 'B/s')}"}
        for n, b in device["bandwidths_Bps"].items()
        if b
    ]
    peaks = {n: p for n, p in device["peaks_per_s"].items() if p and n != "special"}
    if device["adhoc"]:
        peaks = {"compute": max(peaks.values())}
    compute = [
        {"kind": "compute", "name": n, "rate": p, "label": f"{_resource(n)} {si(p, 'FLOP/s')}"}
        for n, p in peaks.items()
    ]
    return memory + compute
