"""Every word a figure of the book writes is Chinese, a unit, a symbol or a kept term.

Walks the built SVGs (``svg.fonttype: none`` leaves their text as text) and
splits each text element into Latin words; a word outside :data:`ALLOWED`,
the device names and the operator names is English a Chinese reader must read.
The command-line appendix shows the CLI's own (English) figure and is left out.
Without a built book, the plotting functions' own labels are checked the same way.
"""

from __future__ import annotations

import html
import json
import re

import matplotlib
import pytest
from conftest import BUILD

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import catalog, gemm, hardware  # noqa: E402
from roofline_book.llm.inference import models  # noqa: E402
from roofline_book.measure.profile.atenops import ATEN_MODELS  # noqa: E402
from roofline_book.present import plotting  # noqa: E402
from roofline_book.roofline.roofs import time_lower_bound  # noqa: E402

HTML = BUILD / "html"

#: Latin words a figure may write, lower case: units, precisions and memory levels,
#: and the technical terms the book keeps in English (its prose uses them too).
ALLOWED = {
    # units
    *("flop", "flops", "byte", "bytes", "tflop", "gflop", "s", "ms", "tb", "gb", "mb", "kb"),
    "mib",
    # precisions, memory levels, hardware
    *("bf16", "fp32", "fp8", "hbm", "l2", "l3", "sram", "tensor", "cuda", "core", "dense"),
    # the memory-hierarchy figure's levels and units (shared memory, L1, SFU, KiB)
    *("l1", "shared", "sfu", "kib", "gib", "mib", "fma"),
    # the GPU chapter's terms (chip, SM and waves diagrams)
    *("sm", "warp", "scheduler", "lane", "gpu", "cpu"),
    # the kernel diagrams' terms (Python dispatch, thread-block cluster, TMA multicast)
    *("python", "thread", "cluster", "tma", "multicast"),
    # the roofline's own terms
    *("roof", "roofline", "ridge", "point", "memory", "compute", "bound", "datasheet", "traffic"),
    # operators and their implementations, as the book names them
    *("gemm", "mm", "attention", "flashattention", "softmax", "rmsnorm", "layernorm", "gelu"),
    "relu",
    *("add", "div", "triad", "inplace", "adamw", "residual", "mlp", "qkv", "up", "aten"),
    *("eager", "materialized", "flash", "fused", "foreach", "loop", "master", "weight"),
    *("linear", "layer", "kernel", "head", "mask", "block"),
    # inference
    *("batch", "token", "tokens", "prefill", "decode", "kv", "cache", "trace"),
    # many devices: the links and the splits, as the book names them
    *("nvlink", "infiniband", "ndr", "pcie", "fsdp", "zero"),
    # collectives: the operation, its algorithms and nccl-tests' bandwidth
    *("all", "reduce", "ring", "tree", "rank", "busbw", "gloo", "nccl"),
    # the ring diagrams and the splits: reduce-scatter, all-gather, all-to-all, NVLS, MoE
    *("scatter", "gather", "to", "nvls", "moe"),
    # the alpha-beta model, named in English as the prose names it
    *("alpha", "beta"),
    # the DeepSeek-V3 chapter: attention's forms and the MoE layer's all-to-all
    *("query", "gqa", "mla", "flashmla", "latent", "rope", "mtp", "dispatch", "combine", "rdma"),
}

#: The CLI's page: its figure is the command line's output, in the CLI's language.
ENGLISH_PAGES = {"appendix/cli.html"}

TEXT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.S)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
TIMES = re.compile(r"(?<=\d)x(?=\d)")


def _names() -> set[str]:
    """Words of names: catalog devices and models, the run files' devices (a CPU's model),
    and the aten operators the profiling figures name (those the package models)."""
    names = [d.name for d in catalog().values()] + [m.name for m in models().values()]
    names += [op.removeprefix("aten::") for op in ATEN_MODELS]
    for path in (BUILD / "bench").glob("*.json"):
        names.append(json.loads(path.read_text(encoding="utf-8"))["device"]["name"])
    return {w.lower() for name in names for w in WORD.findall(name)}


#: A figure the site writes into its page (docs/_ext/roofline_fonts.py).
FIGURE = re.compile(r'<div class="roofline-figure">(<svg\b.*?</svg>)</div>', re.S)


def _figures() -> dict[str, str]:
    """The SVGs the book's pages show, less those of :data:`ENGLISH_PAGES`, by page and number."""
    shown: dict[str, str] = {}
    for page in HTML.rglob("*.html"):
        rel = page.relative_to(HTML).as_posix()
        if rel not in ENGLISH_PAGES:
            for i, svg in enumerate(FIGURE.findall(page.read_text(encoding="utf-8")), start=1):
                shown[f"{rel} #{i}"] = svg
    return shown


def english_words(svg: str, allowed: set[str]) -> list[str]:
    """Latin words in ``svg``'s text that are neither symbols nor ``allowed``.

    A symbol is one letter (``n``, ``I``) or a product of two upper-case ones (``KN``);
    an ``x`` between digits is a times sign (``32x128x128``).
    """
    words = []
    for raw in TEXT.findall(svg):
        line = TIMES.sub("×", html.unescape(re.sub(r"<[^>]+>", "", raw)))
        for word in WORD.findall(line):
            symbol = len(word) == 1 or (len(word) == 2 and word.isalpha() and word.isupper())
            if not symbol and word.lower() not in allowed:
                words.append(word)
    return words


def test_the_checker_finds_english():
    # the labels the book's figures carried before: each English word is found
    svg = "<text>Arithmetic intensity [FLOP/byte]</text><text>H100 SXM 的 ridge point</text>"
    assert english_words(svg, ALLOWED | {"h100", "sxm"}) == ["Arithmetic", "intensity"]
    svg = "<text>GEMM 32x128x128</text><text>2KN/(s(K+N))</text><text>Sequence length N</text>"
    assert english_words(svg, ALLOWED) == ["Sequence", "length"]


def _labels(fig) -> str:
    """Every axis label, title and legend entry of ``fig``, as SVG-like text elements."""
    texts = [fig._suptitle.get_text()] if fig._suptitle else []
    for ax in fig.axes:
        texts += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
        texts += [t.get_text() for t in ax.texts]
        legend = ax.get_legend()
        texts += [t.get_text() for t in legend.get_texts()] if legend else []
    return "".join(f"<text>{t}</text>" for t in texts if t)


def test_plotting_labels_are_chinese_in_the_book_language():
    h100 = hardware("h100-sxm")
    plotting.set_language("zh")
    try:
        fig, axes = plt.subplots(2, 4)
        plotting.ceilings(axes[0][0], h100)
        plotting.roofline(axes[0][1], 100e12, 1e12)
        plotting.gemm_intensity(axes[0][2], [64, 128], "bf16", label="BF16")
        plotting.attention_sweep(axes[0][3], axes[1][0], [512, 1024], 8, 64, {"flash": "k"})
        plotting.square_gemm_fraction(axes[1][1], h100, [64, 128], {"bf16": "b"})
        plotting.device_rooflines(axes[1][2], [(h100, "H100 SXM", None)], {"bf16": "-"})
        plotting.time_bars(axes[1][3], [("add", time_lower_bound(gemm(8, 8, 8), 1e12, 1e12))])
        for ax in axes.flat:
            if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
                ax.legend()
        labels = _labels(fig)
        plt.close(fig)
    finally:
        plotting.set_language("en")
    assert "可达性能" in labels and "算术强度" in labels and "序列长度" in labels
    assert english_words(labels, ALLOWED | _names()) == []


@pytest.mark.site
def test_figures_write_no_english():
    figures = _figures()
    assert len(figures) >= 15, "build the book first"
    allowed = ALLOWED | _names()
    found = {}
    for name, svg in figures.items():
        words = english_words(svg, allowed)
        if words:
            found[name] = sorted(set(words))
    assert not found
