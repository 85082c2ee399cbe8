"""The GPU diagrams (chip, SM, memory hierarchy, waves), against the vendors' figures and hand
arithmetic.

NVIDIA H100 whitepaper / "Hopper Architecture In-Depth": H100 SXM5 has 132 SMs, 128 FP32 CUDA
cores and 4 Tensor Cores per SM, 50 MB L2, 256 KB register file per SM. A100 whitepaper: 108
SMs, 64 FP32 cores per SM, 40 MB L2. CUDA C++ Programming Guide, compute capability 8.0 and 9.0:
4 warp schedulers and 16 special function units per SM, warp size 32. Hopper tuning guide: 64
resident warps per SM.
"""

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline_book import InvalidArgument  # noqa: E402
from roofline_book.devices.sm import (  # noqa: E402
    SMFacts,
    load_architectures,
    resident_warps,
    sm_facts,
    warp_load_bytes,
)
from roofline_book.devices.waves import gemm_waves  # noqa: E402
from roofline_book.present.diagrams import hardware as hw  # noqa: E402
from roofline_book.present.plotting.layout import overlaps  # noqa: E402

pytestmark = pytest.mark.usefixtures("chinese_figures")


def _texts(fig):
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_text()]


def _gid(fig, gid):
    return [p for p in fig.axes[0].patches if p.get_gid() == gid]


def _drawn(fig):
    fig.canvas.draw()
    return fig


# ------------------------------------------------------------------ the catalog's SM facts


def test_sm_facts_are_the_vendors():
    h100, a100 = sm_facts("h100-sxm"), sm_facts("a100-sxm")
    for facts in (h100, a100):
        assert facts.warp_size == 32
        assert facts.sub_partitions == 4  # 4 warp schedulers per SM
        assert facts.tensor_cores_per_sm == 4
        assert facts.max_warps_per_sm == 64
        assert facts.max_threads_per_sm == 2048  # 64 warps x 32 threads
        assert facts.max_threads_per_block == 1024
        assert facts.memory_transaction_bytes == 32  # Best Practices Guide 10.2.1
        assert all(s.firmness == "vendor" for s in facts.sources.values())
    assert "Hopper Tuning Guide" in h100.sources["max_warps_per_sm"].title
    # 132 SMs x 4 Tensor Cores = 528 per GPU (whitepaper's unit list)
    assert 132 * h100.tensor_cores_per_sm == 528


def test_sm_facts_refuse_an_architecture_the_catalog_lacks():
    with pytest.raises(InvalidArgument, match="cdna3"):
        sm_facts("mi300x")
    with pytest.raises(InvalidArgument, match="cdna3"):
        hw.sm_detail(device="mi300x")


def test_an_architecture_without_a_source_is_refused():
    text = "\n".join(
        [
            '[sources.g]\ntitle = "guide"',
            "[architectures.x]",
            "warp_size = 32\nsub_partitions = 4\ntensor_cores_per_sm = 4",
            "max_warps_per_sm = 64\nmax_threads_per_block = 1024\nmemory_transaction_bytes = 32",
            '[architectures.x.sources]\nwarp_size = "g"',
        ]
    )
    with pytest.raises(ValueError, match="sub_partitions without a source"):
        load_architectures(text)
    with pytest.raises(ValueError, match="unknown key 'lanes'"):
        load_architectures(text.replace("warp_size = 32", "warp_size = 32\nlanes = 4"))
    with pytest.raises(ValueError, match="warp_size"):
        SMFacts("x", 0, 4, 4, 64, 1024, 32)


@pytest.mark.parametrize(
    ("regs", "threads", "warps"),
    [
        # 65536 registers / (64 x 256) = 4 blocks x 8 warps = 32 warps (occupancy 50%)
        (64, 256, 32),
        # 65536 / (128 x 256) = 2 blocks x 8 warps = 16 warps (25%)
        (128, 256, 16),
        # 65536 / (255 x 1024) = 0.25: not even one block of 1024 threads fits
        (255, 1024, 0),
        # 65536 / (32 x 128) = 16 blocks x 4 warps = 64 warps, the cap
        (32, 128, 64),
        # 65536 / (40 x 96) = 17 blocks x 3 warps = 51 warps
        (40, 96, 51),
    ],
)
def test_resident_warps_by_registers(regs, threads, warps):
    assert resident_warps("h100-sxm", registers_per_thread=regs, threads_per_block=threads) == warps


def test_resident_warps_refuses_a_block_too_large():
    with pytest.raises(InvalidArgument, match="threads_per_block must be at most 1024"):
        resident_warps("h100-sxm", registers_per_thread=32, threads_per_block=2048)


@pytest.mark.parametrize(
    ("element", "stride", "moved"),
    [
        (4, 1, 128),  # Best Practices Guide: adjacent floats, four 32-byte transactions
        (2, 1, 64),  # 32 BF16 values: 64 bytes, two transactions
        (4, 2, 256),  # every other float: 8 transactions, half of each used
        (4, 8, 1024),  # 32 bytes apart: one transaction per thread
        (4, 4096, 1024),  # a column of a row-major 4096-wide FP32 matrix: the same
        (16, 1, 512),  # float4 loads: 16 transactions, nothing wasted
    ],
)
def test_warp_load_bytes_by_hand(element, stride, moved):
    assert warp_load_bytes("h100-sxm", element_bytes=element, stride=stride) == moved


# ------------------------------------------------------------------ waves


@pytest.mark.parametrize(
    ("device", "m", "n", "tiles", "waves", "last"),
    [
        # 4096/128 = 32, 32 x 32 = 1024 tiles = 7 x 132 + 100
        ("h100-sxm", 4096, 4096, 1024, 8, 100),
        # 1024 = 9 x 108 + 52
        ("a100-sxm", 4096, 4096, 1024, 10, 52),
        # ceil(4000/128) = 32, ceil(100/128) = 1: 32 tiles, one wave of 32
        ("h100-sxm", 4000, 100, 32, 1, 32),
        # 264 = 2 x 132 exactly: the last wave is full
        ("h100-sxm", 128 * 12, 128 * 22, 264, 2, 132),
    ],
)
def test_gemm_waves_by_hand(device, m, n, tiles, waves, last):
    w = gemm_waves(m, n, device=device)
    assert (w.tiles, w.waves, w.last) == (tiles, waves, last)
    assert w.last_fill == last / w.sms
    assert w.efficiency == tiles / (waves * w.sms)


def test_gemm_waves_refuses_bad_input():
    with pytest.raises(InvalidArgument, match="^m "):
        gemm_waves(0, 128)
    with pytest.raises(InvalidArgument, match="tile"):
        gemm_waves(128, 128, tile=(128,))
    with pytest.raises(InvalidArgument, match="SM count"):
        gemm_waves(128, 128, device="b200")  # the catalog has no SM count for B200


def test_waves_diagram_fills_the_last_wave_in_part():
    fig = _drawn(hw.waves(4096, 4096))
    busy = _gid(fig, "wave-busy")
    # 8 waves shown as 1, 2, (3..6 folded), 7, 8: four bars, the last 100/132 of the others
    assert len(busy) == 4
    full = busy[0].get_width()
    assert [b.get_width() / full for b in busy[:3]] == [1.0, 1.0, 1.0]
    assert busy[-1].get_width() / full == pytest.approx(100 / 132)
    texts = _texts(fig)
    assert "100/132 个 SM 忙（76%）" in texts
    assert any("1024 块" in t and "共 8 轮" in t for t in texts)
    assert overlaps(fig) == []


def test_waves_diagram_with_few_waves_shows_each():
    # 1024 x 2048: 8 x 16 = 128 tiles, one wave, 128 of 132 SMs busy
    fig = _drawn(hw.waves(1024, 2048))
    (busy,) = _gid(fig, "wave-busy")
    assert "128/132 个 SM 忙（97%）" in _texts(fig)
    assert overlaps(fig) == []


# ------------------------------------------------------------------ chip, SM, hierarchy


@pytest.mark.parametrize(("device", "sms"), [("h100-sxm", 132), ("a100-sxm", 108)])
def test_chip_draws_every_sm(device, sms):
    fig = _drawn(hw.gpu_chip(device=device))
    assert len(_gid(fig, "sm")) == sms
    text = "\n".join(_texts(fig))
    assert f"{sms} 个 SM" in text
    assert overlaps(fig) == []


def test_h100_chip_labels_are_the_catalogs():
    text = "\n".join(_texts(_drawn(hw.gpu_chip())))
    assert "50 MiB" in text  # L2, 50 MB in the whitepaper's binary sense
    assert "3.35 TB/s" in text  # HBM3, datasheet
    assert "79.6 GiB" in text  # 81559 MiB, the total nvidia-smi reports
    assert "每个方向 450 GB/s" in text  # NVLink 900 GB/s both directions / 2


def test_sm_detail_draws_four_sub_partitions():
    fig = _drawn(hw.sm_detail())
    assert len(_gid(fig, "tensor-core")) == 4  # one per sub-partition
    assert len(_gid(fig, "sfu")) == 4
    assert len(_gid(fig, "cuda-core")) == 128  # 4 x 32 CUDA cores
    texts = _texts(fig)
    assert texts.count("warp scheduler") == 4
    assert texts.count("寄存器 64 KiB") == 4  # 256 KiB / 4
    assert texts.count("4 个 SFU") == 4  # 16 per SM / 4
    # the unit is a CUDA core; "lane" stays a thread's place in a warp
    assert texts.count("32 个 CUDA core（FP32）") == 4 and not any("lane" in t for t in texts)
    assert any("256 KiB" in t and "228 KiB" in t for t in texts)
    assert overlaps(fig) == []
    # A100: 64 FP32 CUDA cores per SM, 16 per sub-partition
    assert len(_gid(_drawn(hw.sm_detail(device="a100-sxm")), "cuda-core")) == 64


def test_memory_hierarchy_levels_and_figures():
    fig = _drawn(hw.memory_hierarchy())
    levels = _gid(fig, "level")
    assert len(levels) == 4  # registers, L1/shared, L2, HBM: the link is not a level
    # each level at least as wide as the one above it: larger and slower going down
    widths = [p.get_width() for p in levels]
    assert widths == sorted(widths)
    text = "\n".join(_texts(fig))
    assert "每个 SM 256 KiB，全卡 33 MiB" in text  # 256 KiB x 132 = 33 MiB
    assert "全卡 50 MiB" in text and "带宽 3.35 TB/s" in text
    assert "带宽 8.43 TB/s" in text  # L2: the highest rate measured by others
    assert "每个方向 450 GB/s" in text
    # NVLink drawn apart, below every level, as a link and not a box
    (link,) = [a for a in fig.axes[0].texts if a.get_gid() == "link"]
    assert link.xy[1] < min(p.get_y() for p in levels)
    assert "NVLink：连到其他 GPU，不是一层存储" in text
    assert overlaps(fig) == []


def test_diagrams_draw_on_a_given_axes():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    assert hw.memory_hierarchy(ax=ax) is fig
    assert hw.waves(512, 512, ax=fig.add_subplot(2, 1, 2)) is fig
