"""The chapters' helpers (roofline_book.book): gluing, tables, shares, sweeps; real values."""

import numpy as np
import pytest

from roofline_book import EXAMPLE, add, book, cost_table, gemm, hardware, rmsnorm

ROWS = cost_table(
    [
        ("add", add(4096 * 4096)),
        ("RMSNorm", rmsnorm(4096, 4096)),
        ("GEMM 4096", gemm(4096, 4096, 4096)),
    ],
    EXAMPLE,
)


@pytest.fixture
def glued(monkeypatch):
    """What book.glue hands to myst-nb, as (name, value, display) triples."""
    import myst_nb

    calls = []
    monkeypatch.setattr(
        myst_nb, "glue", lambda name, value, display=True: calls.append((name, value, display))
    )
    return calls


def test_glue_many_values_plain_and_hidden(glued):
    book.glue("fig-x", "figure")
    book.glue(ratio=np.float64(8.0), sms=np.int64(132), bound="memory")
    assert glued == [
        ("fig-x", "figure", False),
        ("ratio", 8.0, False),
        ("sms", 132, False),
        ("bound", "memory", False),
    ]
    assert type(glued[1][1]) is float and type(glued[2][1]) is int  # NumPy scalars made plain
    with pytest.raises(TypeError, match="name"):
        book.glue(None, 1.0)


def test_glue_figure_closes_it(glued):
    from matplotlib import pyplot as plt

    fig, _ = plt.subplots()
    book.glue_figure("fig-y", fig)
    assert glued == [("fig-y", fig, False)]
    assert not plt.fignum_exists(fig.number)


def test_short_keeps_three_digits_then_whole_numbers():
    assert [book.short(v) for v in (1 / 6, 21.333, 99.94, 100.4, 1365.33)] == [
        "0.167",
        "21.3",
        "99.9",
        "100",
        "1365",
    ]


def test_roof_frame_matches_the_rows():
    df = book.roof_frame(ROWS)
    # the headers a reader reads are Chinese; quantities and units may stay English
    assert list(df.columns) == [
        "算子",
        "FLOPs",
        "字节",
        "I [FLOP/byte]",
        "可达性能 [TFLOP/s]",
        "受限于",
    ]
    # add: 4096^2 FLOP, 6 * 4096^2 = 100,663,296 bytes, 1 TB/s / 6 = 0.167 TFLOP/s
    assert df.iloc[0].tolist() == ["add", "16.78 MFLOP", "100.7 MB", "0.167", "0.167", "HBM"]
    # 4096^3 GEMM: I = 2 * 4096 / 6 = 1365.3 FLOP/byte, under the flat 100 TFLOP/s roof
    # (the example device has one peak for every unit: "计算")
    assert df.iloc[2, 3:].tolist() == ["1365", "100", "计算"]
    assert book.roof_frame(ROWS, unit="GFLOP/s").iloc[0, 4] == "167"  # 1e12 / 6 / 1e9 = 166.67
    with pytest.raises(ValueError, match="unit"):
        book.roof_frame(ROWS, unit="TB/s")


def test_markdown_table_alignment_and_index():
    import pandas as pd

    frame = pd.DataFrame({"I": ["0.170", "1365"]}, index=pd.Index(["add", "gemm"], name="operator"))
    lines = book.markdown_table(frame).data.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")[1:3]] == ["operator", "I"]
    assert lines[1] == "|:-----------|------:|"  # names left, numbers right
    assert lines[2] == "| add        | 0.170 |"  # the text "0.170" keeps its trailing zero
    plain = book.markdown_table(pd.DataFrame({"a": ["x"], "b": ["y"]}), align=["center", "left"])
    assert plain.data.splitlines()[1] == "|:---:|:----|"  # unnamed 0, 1, ... index dropped
    with pytest.raises(ValueError, match="align"):
        book.markdown_table(frame, align=["left"])


def test_share_picks_rows_by_name_and_bound():
    times = [r.time.seconds for r in ROWS]
    assert book.share(ROWS, contains=["add", "Norm"]) == pytest.approx(
        (times[0] + times[1]) / sum(times)
    )
    assert book.share(ROWS, bound="memory") == book.share(ROWS, contains=["add", "RMSNorm"])
    assert book.share(ROWS, bound="compute") == pytest.approx(times[2] / sum(times))
    with pytest.raises(ValueError, match="bound"):
        book.share(ROWS, bound="latency")


def test_first_size_of_a_sweep_past_the_ridge():
    ridge = hardware("h100-sxm").ridge_point("bf16")  # 989.4e12 / 3.35e12 = 295.3 FLOP/byte
    sizes = [2**p for p in range(4, 15)]
    # square BF16: I = 2n / 6; 2n/6 >= 295.3 first at 1024 (341.3; 512 gives 170.7)
    assert book.first_size(sizes, ridge, "bf16") == 1024
    assert book.first_size(sizes, ridge, "fp32") == 2048  # I = 2n / 12
    # M x 4096 x 4096 BF16: I = 2 M 4096^2 / (2 (2 M 4096 + 4096^2)); M* = 378.6, so 512
    m_star = 4096 * ridge / (4096 - 2 * ridge)
    assert 256 < m_star < 512
    assert book.first_size([2**p for p in range(17)], ridge, k=4096, n=4096) == 512
    with pytest.raises(ValueError, match="no size"):
        book.first_size([16, 32], ridge)


def test_hardware_tables_read_the_catalog():
    h100 = hardware("h100-sxm")
    peaks = book.peaks_frame()
    # the whitepaper's dense BF16 989.4 TFLOP/s (rated at 1830 MHz), as printed
    assert peaks.loc["h100-sxm", "矩阵 bf16"] == "989.4 TFLOP/s"
    assert peaks.loc["h100-sxm", "向量 fp64"] == "34 TFLOP/s"  # the FP64 Tensor Core rate is 67
    assert peaks.loc["h100-sxm", "向量 bf16x2"] == "133.8 TFLOP/s"  # packed BF16x2 / HFMA2
    # A100 whitepaper: "Peak FP16 (non-Tensor) 78 TFLOPS, Peak BF16 (non-Tensor) 39"
    assert peaks.loc["a100-sxm", "向量 fp16x2"] == "78 TFLOP/s"
    assert peaks.loc["a100-sxm", "向量 bf16x2"] == "39 TFLOP/s"
    assert peaks.loc["h100-sxm", "ridge bf16 [FLOP/B]"] == f"{989.4 / 3.35:.0f}"  # 295
    assert peaks.loc["h100-sxm", "容量"] == "79.65 GiB"  # 81559 MiB / 1024
    assert peaks.loc["h100-sxm", "特殊函数"] == "4.182 T 次/s"  # evaluations, not FLOP
    assert peaks.loc["h20", "可靠性"] == "二手资料"
    assert len(peaks) == len(book.sources_frame().index.get_level_values("设备").unique())
    sparse = book.sparse_frame()
    assert (
        sparse.loc[("h100-sxm", "fp8"), "比值"]
        == f"{h100.sparse_peak_flops('fp8') / h100.peak_flops('fp8'):.2f}"
    )
    caches = book.cache_frame()
    assert caches.loc["h100-sxm", "SM / CU 数"] == h100.sms == 132
    assert caches.loc["mi300x", "末级缓存（L2 之外）"] == "256 MiB"  # AMD Infinity Cache
    assert caches.loc["h100-sxm", "每 SM shared memory"] == "228 KiB"  # 233472 bytes
    special = book.special_frame()
    # 16 results per clock per SM x 132 SMs x 1.98e9 = 4.182e12 evaluations/s
    assert special.loc["h100-sxm", "时钟"] == "1980 MHz"
    assert special.loc["h100-sxm", "特殊函数"] == f"{16 * 132 * 1.98e9 / 1e12:.4g} T 次/s"
    clocks = book.clock_frame()
    assert clocks.loc[("h100-sxm", "bf16"), "厂商所用时钟"] == "1830 MHz"
    assert clocks.loc[("h100-sxm", "bf16"), "每 SM 每时钟"] == "4096"  # 989.4e12/(132 x 1.83e9)
    assert "a100-sxm" not in clocks.index.get_level_values("设备")  # all at 1410 MHz


def test_cpu_run_reads_the_variable_else_the_newest_run_in_build_bench(tmp_path, monkeypatch):
    import json
    import pathlib

    from roofline_book.book import runs

    fixture = json.loads(
        (pathlib.Path(__file__).parent / "data" / "fixture-cpu-pass.json").read_text("utf-8")
    )
    bench = tmp_path / "_build" / "bench"
    bench.mkdir(parents=True)
    for name, date in (("a.json", "2026-01-02T00:00:00Z"), ("b.json", "2025-12-31T00:00:00Z")):
        (bench / name).write_text(json.dumps({**fixture, "date": date}), "utf-8")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")  # a page's folder, below the checkout's root
    monkeypatch.delenv(runs.CPU_RUN_ENV, raising=False)
    assert book.cpu_run().date == "2026-01-02T00:00:00Z"  # the newest, not the last name
    monkeypatch.setenv(runs.CPU_RUN_ENV, str(bench / "b.json"))
    assert book.cpu_run().date == "2025-12-31T00:00:00Z"  # the build's choice comes first
    monkeypatch.delenv(runs.CPU_RUN_ENV)
    monkeypatch.setattr(runs, "BENCH_FOLDER", pathlib.Path("no-such-folder"))
    with pytest.raises(FileNotFoundError, match=r"`make bench`.*roofline-book bench --quick"):
        book.cpu_run()


def test_an_add_from_dram_is_held_to_the_same_add_in_l2_not_to_the_gemm_peak():
    # Chapter 4: an add runs on the vector lanes, so the FP32 GEMM peak is the wrong ceiling for
    # it. Chapter 9 holds the streaming add to the run's own add with its data in L2.
    import copy
    import json
    import pathlib

    from roofline_book.book import measured, runs
    from roofline_book.measure.runs.runfile import validate_run

    data = json.loads(
        (pathlib.Path(__file__).parent / "data" / "fixture-cpu-pass.json").read_text("utf-8")
    )
    fixture = validate_run(data)
    edited = copy.deepcopy(data)
    # the fixture's small add: 2^14 FP32 elements (192 KiB, in L2) in its median 2 us
    l2_add = 2**14 / 2e-6  # 8.192 GFLOP/s
    edited["ceilings"]["vector_flops"] = {
        "fp32": {"value": l2_add, "entry": "add/fp32/add/numel=16384"}
    }
    run = validate_run(edited)
    h = measured.highlights(run)
    # the streaming add: 2^24 FLOPs in its median 9 ms = 1.864 GFLOP/s, 22.8% of 8.192
    assert h["add_of_l2_add_pct"] == pytest.approx(100 * (2**24 / 9e-3) / l2_add)
    assert h["add_of_l2_add_pct"] == pytest.approx(22.76, abs=0.01)
    assert "add_flops_frac_pct" not in h  # no FLOP/s of an add against the GEMM peak
    assert "add_of_l2_add_pct" not in measured.highlights(fixture)  # no L2 add, no ratio
    # the summary row names what the probe measured: an add in L2, not the vector units' peak
    rows = runs.summary_rows(run)
    assert rows["实测 L2 内 add 速率 fp32"] == "8.192 GFLOP/s"
    assert not any("向量" in name for name in rows)


def _chapters_in_reading_order() -> list[str]:
    """The main toctree of docs/index.md (caption 正文), as paths without the suffix."""
    import pathlib

    lines = (pathlib.Path(__file__).parents[1] / "docs" / "index.md").read_text("utf-8")
    block = lines.split(":caption: 正文", 1)[1].split("```", 1)[0]
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith(":")]


def test_the_summary_closes_the_book_and_chapter_numbers_in_prose_follow_the_toctree():
    # DESIGN.md, the book's shape: "... multi-GPU, the DeepSeek-V3 case study, the summary last."
    import pathlib
    import re

    chapters = _chapters_in_reading_order()
    assert chapters[-1] == "chapters/18-summary"
    # Collectives before the multi-GPU chapter that uses their alpha-beta model
    assert chapters.index("chapters/15-collectives") < chapters.index("chapters/16-multi-gpu")
    # File names carry the chapter's number, so a URL says which chapter it is
    assert [int(c.split("/")[1][:2]) for c in chapters] == list(range(1, len(chapters) + 1))
    # A chapter number typed into a link ("第 14 章") must be the one the numbered toctree gives
    docs = pathlib.Path(__file__).parents[1] / "docs"
    number = {docs / f"{c}.md": i for i, c in enumerate(chapters, 1)}
    label = {}
    for page in number:
        for name in re.findall(r"^\(([\w-]+)\)=\s*\n#\s", page.read_text("utf-8"), re.M):
            label[name] = page
    wrong = []
    for page in docs.rglob("*.md"):
        text = page.read_text("utf-8")
        for n, target in re.findall(r"\{doc\}`第 (\d+) 章 <([^>]+)>`", text):
            path = (page.parent / target).resolve().with_suffix(".md")
            if number.get(path) != int(n):
                wrong.append(f"{page.name}: 第 {n} 章 -> {target}")
        for n, target in re.findall(r"\{ref\}`第 (\d+) 章 <([\w-]+)>`", text):
            if target in label and number[label[target]] != int(n):
                wrong.append(f"{page.name}: 第 {n} 章 -> {target}")
    assert not wrong, wrong
