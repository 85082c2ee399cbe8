"""按页面的样子展示命令行：运行 ``roofline-book``，打印或读取它的输出；以及命令行附录正文里
的数，都读自命令的 ``--json`` 输出（``*_figures`` 各返回一个 dict，键就是粘贴时用的名字）。"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any


def _run(args: tuple[str, ...], cwd: str | None, check: bool) -> subprocess.CompletedProcess:
    """在本进程中运行 ``roofline-book ARGS``：调用 console script 所调用的 ``main``，并捕获它的输出
    （一页要运行十几条命令；每条都启动一个新解释器，每条要多花一两秒）。
    """
    from ..cli import calculator

    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        done = calculator.run(list(args))
    finally:
        os.chdir(before)
    status = done["code"]
    completed = subprocess.CompletedProcess(
        ["roofline-book", *args], status, done["stdout"], done["stderr"]
    )
    if check and status:
        raise subprocess.CalledProcessError(
            status, completed.args, completed.stdout, completed.stderr
        )
    return completed


def run_cli(*args: str, cwd: str | None = None) -> str:
    """运行 ``roofline-book ARGS``；先打印命令，再打印它的输出。

    Parameters
    ----------
    *args : str
        参数，即在 ``roofline-book`` 之后键入的内容。
    cwd : str, optional
        命令的工作目录（``plot --out`` 写到这里）。

    Returns
    -------
    str
        命令打印到 stdout 的内容。

    Raises
    ------
    subprocess.CalledProcessError
        命令以非 0 状态退出。
    """
    done = _run(args, cwd, check=True)
    print("$ roofline-book", " ".join(args))
    print(done.stdout)
    return done.stdout


def cli_json(*args: str) -> Any:
    """加上 ``--json`` 运行同一条命令：读回它的输出（基本单位），什么也不打印。

    Examples
    --------
    >>> cli_json("op", "add", "--numel", "8", "--peak", "1T", "--bandwidth", "1T")["bytes"]
    48
    """
    return json.loads(_run((*args, "--json"), None, check=True).stdout)


def cli_error(*args: str) -> tuple[int, str]:
    """运行一条应当失败的命令；返回它的退出状态和写到 stderr 的内容。

    Examples
    --------
    >>> status, err = cli_error("op", "add", "--numel", "-1")
    >>> status, len(err.splitlines())
    (2, 1)
    """
    done = _run(args, None, check=False)
    return done.returncode, done.stderr


def json_fields(
    schema: dict, prefix: str = "", *, collapse: bool = True
) -> list[tuple[str, str, str]]:
    """``schema`` 的每个键，展开嵌套的对象与列表：``(路径, 类型, 说明)``。

    设备对象（:class:`~roofline_book.cli.results.Device`）写成一行 ``device``，代价的各键
    （:class:`~roofline_book.cli.results.CostOn`）合成一行 ``(cost)``：它们各自列一次
    （``collapse=False`` 时照样展开）。

    Examples
    --------
    >>> from roofline_book.cli.schema import SCHEMAS
    >>> [path for path, _, _ in json_fields(SCHEMAS["op"])]
    ['roofline_book_version', 'command', 'operator', 'arguments', 'device', '(cost)']
    >>> json_fields(SCHEMAS["block"])[-2]
    ('optimizer.ops[].(cost)', 'cost', 'the cost fields, as in op')
    """
    from .._base.records import json_schema
    from ..cli.results import CostOn, Device

    device, cost = json_schema(Device), json_schema(CostOn)["properties"]
    out = []
    properties = schema.get("properties", {})
    has_cost = collapse and all(properties.get(k) == v for k, v in cost.items())
    for key, sub in properties.items():
        if has_cost and key in cost:
            if key == next(iter(cost)):
                out.append((f"{prefix}(cost)", "cost", "the cost fields, as in op"))
            continue
        path = f"{prefix}{key}"
        if collapse and sub == device:
            out.append((path, "device", device["description"]))
            continue
        kind = sub.get("type", "const" if "const" in sub else "")
        kinds = kind if isinstance(kind, list) else [kind]
        out.append((path, " | ".join(kinds), sub.get("description", "")))
        if "object" in kinds:
            out += json_fields(sub, f"{path}.", collapse=collapse)
        elif "array" in kinds and "properties" in sub.get("items", {}):
            out += json_fields(sub["items"], f"{path}[].", collapse=collapse)
    return out


def json_fields_md(schema: dict | type, *, collapse: bool = True) -> Any:
    """``--json`` 的一份 schema （或一个记录类，取它的 schema）写成 Markdown 表格（供 ``glue``，
    同 :func:`markdown_table`）：每个键一行，写明类型和 schema 的说明。

    见 :func:`json_fields` （``collapse``：设备对象与代价的各键各写成一行）。

    Examples
    --------
    >>> from roofline_book.cli.schema import SCHEMAS
    >>> print(json_fields_md(SCHEMAS["op"]).data.splitlines()[2])
    | `roofline_book_version` | string | version of the roofline-book package that wrote this |
    """
    from .._base.records import json_schema
    from .tables import markdown_table

    if isinstance(schema, type):
        schema = json_schema(schema)
    rows = [
        {"键": f"`{path}`", "类型": kind.replace(" | ", " 或 "), "说明（schema 的原文）": text}
        for path, kind, text in json_fields(schema, collapse=collapse)
    ]
    return markdown_table(rows, align=["left", "left", "left"])


def gemm_figures(*args: str) -> dict[str, float]:
    """一条 ``op gemm`` 命令（``args``，不带 ``--json``）的 FLOPs、字节、算术强度与时间下界，
    单位按附录的写法：GFLOP、MB、FLOP/byte、ms。

    Returns
    -------
    dict
        ``cli_gemm_gflop``、``cli_gemm_mb``、``cli_gemm_intensity``、``cli_ex_ridge``
        （设备的 ridge point）、``cli_gemm_ms`` （时间下界）、``cli_gemm_mem_ms``
        （HBM 所需的时间）。

    Examples
    --------
    >>> f = gemm_figures("op", "gemm", "--m", "64", "--k", "64", "--n", "64",
    ...                  "--peak", "1T", "--bandwidth", "1T")
    >>> f["cli_gemm_gflop"], f["cli_gemm_mb"]   # 2 x 64^3 FLOPs; 3 x 64^2 x 2 bytes
    (0.000524288, 0.024576)
    """
    g = cli_json(*args)
    return dict(
        cli_gemm_gflop=g["flops"] / 1e9,
        cli_gemm_mb=g["bytes"] / 1e6,
        cli_gemm_intensity=g["intensity"],
        cli_ex_ridge=g["device"]["ridge_point"],
        cli_gemm_ms=g["time_lower_bound_s"] * 1e3,
        cli_gemm_mem_ms=g["time_memory_s"] * 1e3,
    )


def add_figures(*args: str) -> dict[str, float]:
    """一条 elementwise ``op`` 命令（``args``）每 FLOP 的字节、算术强度，以及它能达到的性能
    （GFLOP/s）占矩阵峰值的百分比。

    Returns
    -------
    dict
        ``cli_add_bytes_per_flop``、``cli_add_intensity``、``cli_add_gflops``、``cli_add_percent``。

    Examples
    --------
    >>> f = add_figures("op", "add", "--numel", "8", "--peak", "1T", "--bandwidth", "1T")
    >>> f["cli_add_bytes_per_flop"], f["cli_add_gflops"]   # 1 TB/s / 6 bytes a FLOP
    (6.0, 166.66666666666666)
    """
    a = cli_json(*args)
    return dict(
        cli_add_bytes_per_flop=a["bytes"] / a["flops"],
        cli_add_intensity=a["intensity"],
        cli_add_gflops=a["attainable_per_s"] / 1e9,
        cli_add_percent=100 * a["attainable_per_s"] / a["device"]["peaks_per_s"]["matrix"],
    )


def operators_table() -> dict[str, Any]:
    """``op`` 能用的每个算子与它的参数写成 Markdown 表格（``cli-ops-md``），以及算子的个数
    （``cli_n_ops``）。

    Examples
    --------
    >>> from roofline_book.cli import OPERATORS
    >>> t = operators_table()
    >>> t["cli_n_ops"] == len(OPERATORS), t["cli-ops-md"].data.splitlines()[0].split("|")[1]
    (True, ' 算子                 ')
    """
    from ..cli import OPERATORS
    from .tables import markdown_table

    rows = [{"算子": f"`{name}`", "参数": f"`{spec.usage()}`"} for name, spec in OPERATORS.items()]
    return {"cli-ops-md": markdown_table(rows, align=["left", "left"]), "cli_n_ops": len(OPERATORS)}


def ridge_points(dtype: str) -> dict[str, float]:
    """``devices --dtype DTYPE`` 列出的每台设备的 ridge point（FLOP/byte），键为目录中的设备名。

    Examples
    --------
    >>> round(ridge_points("bf16")["h100-sxm"], 1)   # 989.4 TFLOP/s / 3.35 TB/s
    295.3
    """
    devices = cli_json("devices", "--dtype", dtype)["devices"]
    return {d["key"]: d["ridge_points"][dtype] for d in devices}


def block_figures(*args: str) -> dict[str, float]:
    """一条 ``block`` 命令：五个投影 GEMM 占时间下界总和的百分比，受 HBM 限制的算子数；
    再加上 ``--seq 1`` 跑一次，每条序列只剩一个 token 时受 HBM 限制的算子数。

    Returns
    -------
    dict
        ``cli_block_gemm_share`` （%）、``cli_block_memory_ops``、``cli_block_ops``、
        ``cli_seq1_memory_ops``。

    Examples
    --------
    >>> f = block_figures("block", "--device", "h100-sxm")
    >>> f["cli_block_ops"], f["cli_seq1_memory_ops"]
    (12, 12)
    """
    rows = cli_json(*args)["ops"]
    one = cli_json(*args, "--seq", "1")["ops"]
    return dict(
        cli_block_gemm_share=100 * sum(r["share"] for r in rows if "projection" in r["name"]),
        cli_block_memory_ops=sum(r["bound_kind"] == "memory" for r in rows),
        cli_block_ops=len(rows),
        cli_seq1_memory_ops=sum(r["bound_kind"] == "memory" for r in one),
    )


def infer_figures(*args: str) -> dict[str, float]:
    """一条 ``infer`` 命令的整个模型的量：能放下的最大 batch 与它的各项（vLLM 留出的显存比例、
    权重、激活峰值、每个 token 的 KV cache），以及 decode 到达 ridge point 的 batch。

    Returns
    -------
    dict
        ``cli_inf_fits``、``cli_inf_ridge_batch``、``cli_inf_context`` （token）、
        ``cli_inf_reserve`` 与 ``cli_inf_use`` （显存中留出与可用的比例）、``cli_inf_weights_gb``、
        ``cli_inf_kv_kb`` （每个 token，kB）、``cli_inf_act_gb``。

    Examples
    --------
    >>> f = infer_figures("infer", "--model", "llama-3-8b", "--device", "h100-sxm")
    >>> f["cli_inf_kv_kb"]   # 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes
    131.072
    """
    from ..llm.serving import MEMORY_RESERVE

    inf = cli_json(*args)
    return dict(
        cli_inf_fits=inf["max_batch"],
        cli_inf_ridge_batch=inf["decode_batch_to_ridge"],
        cli_inf_context=inf["context"],
        cli_inf_reserve=MEMORY_RESERVE,
        cli_inf_use=1 - MEMORY_RESERVE,
        cli_inf_weights_gb=inf["weight_bytes"] / 1e9,
        cli_inf_kv_kb=inf["kv_cache_bytes_per_token"] / 1e3,
        cli_inf_act_gb=inf["activation_peak_bytes"] / 1e9,
    )


def serve_steady() -> int:
    """``serve --max-rate`` 要求请求总数至少是系统中同时有的请求数的几倍，结果才算到了稳态。

    Examples
    --------
    >>> serve_steady()
    3
    """
    from ..cli.serve import STEADY

    return STEADY


def size_figures(*texts: str) -> dict[str, int]:
    """命令行怎样读每个尺寸 ``texts``：键为 ``cli_`` 加小写的原文。

    Examples
    --------
    >>> size_figures("4k", "64Ki")
    {'cli_4k': 4000, 'cli_64ki': 65536}
    """
    from ..units import parse_size

    return {f"cli_{text.lower()}": parse_size(text) for text in texts}


def json_tables() -> dict[str, Any]:
    """``--json`` 的格式：设备对象、代价的各键与每个子命令的 schema 各一张 Markdown 表格
    （``cli-json-device-md``、``cli-json-cost-md``、``cli-json-COMMAND-md``），以及有 schema 的
    子命令个数 ``cli_json_commands``。

    Examples
    --------
    >>> from roofline_book.cli.schema import SCHEMAS
    >>> t = json_tables()
    >>> t["cli_json_commands"] == len(SCHEMAS), "cli-json-op-md" in t
    (True, True)
    """
    from ..cli.results import CostOn, Device
    from ..cli.schema import SCHEMAS

    tables: dict[str, Any] = {
        "cli-json-device-md": json_fields_md(Device),
        "cli-json-cost-md": json_fields_md(CostOn, collapse=False),
    }
    for command, schema in SCHEMAS.items():
        tables[f"cli-json-{command}-md"] = json_fields_md(schema)
    return tables | {"cli_json_commands": len(SCHEMAS)}
