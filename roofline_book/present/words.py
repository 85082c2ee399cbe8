"""本书在两种语言中的词汇：下界来自的资源、结论的判定。

命令行用英文（``"en"``），书用中文（``"zh"``）；两者按同一组键索引。表格
（:mod:`roofline_book.present.tables`）、图（:mod:`roofline_book.present.plotting`）、
命令行与书都从这里取这些词，谁也不另写一份。
"""

from __future__ import annotations

from .._base.validate import InvalidArgument

LANGUAGES = ("en", "zh")

RESOURCES: dict[str, dict[str, str]] = {
    "en": {
        "compute": "compute",
        "matrix": "matrix units",
        "vector": "vector units",
        "special": "special functions",
        "hbm": "HBM",
        "l1": "L1",
        "l2": "L2",
        "l3": "L3",
        "llc": "last-level cache",
        "dram": "DRAM",
        "memory": "memory",
    },
    "zh": {
        "compute": "计算",
        "matrix": "矩阵单元",
        "vector": "向量单元",
        "special": "特殊函数单元",
        "hbm": "HBM",
        "l1": "L1",
        "l2": "L2",
        "l3": "L3",
        "llc": "末级缓存",
        "dram": "DRAM",
        "memory": "内存",
    },
}
"""下界可能来自的每种资源（计算单元、存储层级；两条 roof 的模型里的 ``compute``、``memory``）
的叫法，按语言索引。"""

VERDICTS: dict[str, dict[str, str]] = {
    "en": {
        "pass": "pass",
        "fail": "fail",
        "inconclusive": "inconclusive",
        "not measured": "not measured",
    },
    "zh": {"pass": "成立", "fail": "不成立", "inconclusive": "无法判定", "not measured": "未测"},
}
"""一条结论的每种判定（``roofline_book.measure.judge.verdicts.VERDICTS``）的叫法，按语言索引。"""


def resource(name: str, language: str = "en") -> str:
    """资源 ``name`` （``"hbm"``、``"matrix"`` 等）在 ``language`` 中的叫法。

    Examples
    --------
    >>> resource("matrix"), resource("matrix", "zh"), resource("llc", "zh")
    ('matrix units', '矩阵单元', '末级缓存')
    >>> resource("dram2")
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: resource must be one of compute, matrix, ...; got 'dram2'
    """
    words = _words(RESOURCES, language)
    if name not in words:
        raise InvalidArgument("resource", f"must be one of {', '.join(words)}; got {name!r}")
    return words[name]


def _words(table: dict[str, dict[str, str]], language: str) -> dict[str, str]:
    if language not in table:
        raise InvalidArgument("language", f"must be one of {', '.join(table)}; got {language!r}")
    return table[language]
