"""The hardware catalog: dense peaks only as roofs, every figure sourced."""

import pytest

from roofline_book import InvalidArgument, hardware
from roofline_book.devices.catalog import EXAMPLE, adhoc, catalog, load_catalog


def test_catalog_has_required_devices():
    assert {"a100-sxm", "h100-sxm", "h200-sxm", "b200", "mi300x"} <= set(catalog())
    # the parts engineers in China use, each marked with how firm its sources are
    china = {"a800-sxm", "h800-sxm", "h20", "l20", "l40s", "rtx-4090"}
    assert china <= set(catalog())
    assert {catalog()[k].firmness for k in catalog()} <= {"vendor", "secondary"}
    assert catalog()["h20"].firmness == "secondary"


@pytest.mark.parametrize("key", list(catalog()))
def test_every_figure_has_a_source(key):
    dev = catalog()[key]
    for figure in ("peak_flops", "vector_peaks", "memory_bandwidth"):
        src = dev.source(figure)
        assert src.title and src.date and src.firmness in ("vendor", "paper", "secondary")
        # a vendor or paper source is a document one can open; a secondary one says
        # in its note where its figures were taken from
        if src.firmness == "secondary":
            assert len(src.note) > 40
        else:
            assert src.url.startswith(("https://", "http://"))
    for figure in (
        "memory_capacity",
        "l2_cache",
        "l2_bandwidth",
        "shared_memory_per_sm",
        "sms",
        "special_peak",
        "clock_hz",
    ):
        if getattr(dev, figure) is not None:
            assert dev.source(figure).title
    if dev.firmness == "vendor":  # a vendor device's compute ceilings come from the vendor
        assert dev.source("peak_flops").firmness == "vendor"


@pytest.mark.parametrize("key", list(catalog()))
def test_sparse_is_twice_dense(key):
    # The commonest error in this field is a sparse figure used as the peak:
    # every sparse figure in the catalog must be about twice its dense twin
    # (the L40S datasheet prints 362.05 dense and 733 sparse: 2.02; the catalog takes 366.4).
    dev = catalog()[key]
    for precision, sparse in dev.sparse_peaks.items():
        assert sparse / dev.peak_flops(precision) == pytest.approx(2.0, rel=0.025)


@pytest.mark.parametrize("key", list(catalog()))
def test_units_are_ordered(key):
    # no vector (CUDA core) rate above its device's matrix (Tensor Core) rate, and the
    # special function units below the FP32 lanes
    dev = catalog()[key]
    for precision, vector in dev.vector_peaks.items():
        if precision in dev.dense_peaks:
            assert vector <= dev.dense_peaks[precision]
    assert dev.vector_peak("fp32") <= dev.peak_flops("bf16")
    assert dev.special_peak_flops() <= dev.vector_peak("fp32")


def test_mixed_unit_entries_are_split():
    # A100 and H100 print FP64 twice: the Tensor Core rate is the matrix ceiling, the
    # plain FP64 rate the vector one
    a100, h100 = hardware("a100-sxm"), hardware("h100-sxm")
    assert (a100.peak_flops("fp64"), a100.vector_peak("fp64")) == (19.5e12, 9.7e12)
    assert (h100.peak_flops("fp64"), h100.vector_peak("fp64")) == (67e12, 34e12)
    b200 = hardware("b200")
    assert b200.vector_peak("fp32") == 600e12 / 8
    mi = hardware("mi300x")
    assert mi.l2_cache == 32 * 2**20 and mi.last_level_cache == 256 * 2**20


def test_special_function_rate_is_derived_at_the_device_clock():
    # 16 results per clock per SM (FlashAttention-3, citing the CUDA guide) x 132 SMs x
    # 1980 MHz = 4.18176e12 evaluations/s; FlashAttention-3 quotes 3.9 T/s at 1830 MHz
    # (16 x 132 x 1.83e9 = 3.865e12): the same count at the lower clock
    h100 = hardware("h100-sxm")
    assert h100.special_peak_flops() == pytest.approx(16 * 132 * 1.98e9)
    assert "16 results/clock/SM x 132 SMs x 1980 MHz" in h100.derivations["special_peak"]
    assert h100.special_peak_flops() * 1.83 / 1.98 == pytest.approx(3.865e12, rel=1e-3)
    # A100: 16 x 108 x 1410 MHz
    assert hardware("a100-sxm").special_peak_flops() == pytest.approx(16 * 108 * 1.41e9)
    # a device without the published inputs falls back to its FP32 lane operations, half
    # the FMA-counted FP32 peak: a transcendental costs at least one lane slot
    b200 = hardware("b200")
    assert b200.special_peak_flops() == b200.vector_peak("fp32") / 2 == 37.5e12


def test_two_units_of_one_sm_compare_at_one_clock():
    # Both units run on the SM clock, so per attention score the ratio of Tensor Core time
    # to exp time is the ratio of per-clock rates (Shah et al. 2024, section 3.1: "989
    # TFLOPS of FP16 matmul but only 3.9 TFLOPS of special functions", both at 1830 MHz):
    # at head dim 64 a score costs 4 x 64 = 256 matrix FLOP against 1 exp, and an SM does
    # 4096 dense BF16 FLOP (989.4e12 / (132 x 1.83e9) = 4096.0) and 16 exps per clock:
    # 256 / 4096 = 1 / 16 clock each, a ratio of exactly 1
    h100 = hardware("h100-sxm")
    assert h100.per_sm_clock("matrix", "bf16") == pytest.approx(4096, rel=1e-4)
    assert h100.per_sm_clock("special") == 16
    matrix_clocks = 256 / h100.per_sm_clock("matrix", "bf16")
    exp_clocks = 1 / h100.per_sm_clock("special")
    assert matrix_clocks / exp_clocks == pytest.approx(1.0, rel=1e-4)
    # the two ceilings are rated at different clocks, so their plain ratio is not 256:
    # 989.4e12 / (16 x 132 x 1.98e9 = 4.18176e12) = 236.6 = 256 x 1830 / 1980
    ratio = h100.peak_flops("bf16") / h100.special_peak_flops()
    assert ratio == pytest.approx(256 * 1830 / 1980, rel=1e-4)


def test_each_ceiling_carries_the_clock_its_vendor_figure_is_rated_at():
    # H100 SXM5: the 16/8-bit and TF32 Tensor Core rows at 1830 MHz (FlashAttention-3
    # appendix C.1: "1830MHz (clock speed used to calculate the 989 TFLOPS)"); FP64 Tensor
    # Core 67 = 132 x 256 FLOP/clk x 1.98 GHz = 66.9; the vector rates at 1980 MHz
    # (128 lanes x 2 x 132 x 1.98e9 = 66.9e12, datasheet "FP32 67")
    h100 = hardware("h100-sxm")
    clocks = {(c.resource, c.precision): c.clock_hz for c in h100.ceilings() if not c.is_memory}
    assert clocks[("matrix", "bf16")] == clocks[("matrix", "fp8")] == 1.83e9
    assert clocks[("matrix", "tf32")] == clocks[("matrix", "int8")] == 1.83e9
    assert clocks[("matrix", "fp64")] == clocks[("vector", "fp32")] == 1.98e9
    assert clocks[("vector", "bf16")] == clocks[("special", "fp32")] == 1.98e9
    assert {c.clock_hz for c in h100.ceilings() if c.is_memory} == {None}
    # the devices state the boost clock their vector figures use
    boost = {k: d.clock_hz for k, d in catalog().items()}
    assert boost["a100-sxm"] == 1.41e9 and boost["mi300x"] == 2.1e9
    assert boost["h200-sxm"] == boost["h800-sxm"] == boost["h100-sxm"] == 1.98e9
    assert boost["l40s"] == boost["rtx-4090"] == 2.52e9


@pytest.mark.parametrize(
    "key", [k for k, d in catalog().items() if d.clock_hz and d.fp32_lanes_per_sm and d.sms]
)
def test_vendor_fp32_peaks_are_at_the_recorded_clock(key):
    # FP32 lanes x 2 FLOP (an FMA) x SMs x clock: e.g. H100 128 x 2 x 132 x 1.98e9 =
    # 66.9e12 (datasheet 67), A100 64 x 2 x 108 x 1.41e9 = 19.49e12 (19.5), L40S
    # 128 x 2 x 142 x 2.52e9 = 91.6e12; a figure at another clock would be off by its ratio
    dev = catalog()[key]
    lanes = dev.fp32_lanes_per_sm * 2 * dev.sms * dev.clock_hz
    assert dev.vector_peak("fp32") == pytest.approx(lanes, rel=0.005)


def test_hopper_tensor_cores_are_the_vendor_figures_at_1830_mhz():
    # The roof is NVIDIA's dense figure as printed (H100 whitepaper table: BF16 989.4,
    # FP8 1978.9, TF32 494.7 TFLOPS dense; the datasheet prints 1,979 BF16 "with
    # sparsity", 1979 / 2 = 989.5), the figure MFU is measured against (Llama 3 paper,
    # MAMF). It is 4096 FLOP/clock/SM x 132 SMs x 1.83e9 = 989.43e12, not rescaled to the
    # 1980 MHz max SM clock (989.4 x 1980 / 1830 = 1070.5 would be)
    h100 = hardware("h100-sxm")
    assert h100.peak_flops("bf16") == 989.4e12
    assert h100.peak_flops("bf16") == pytest.approx(4096 * 132 * 1.83e9, rel=1e-4)
    assert h100.peak_flops("fp8") == 1978.9e12 and h100.peak_flops("tf32") == 494.7e12
    assert h100.peak_flops("fp64") == 67e12  # the FP64 Tensor Core figure, at 1980 MHz
    assert h100.matrix_clock_hz["bf16"] == 1.83e9 and h100.clock_hz == 1.98e9
    assert h100.rated_clock("matrix", "fp8") == 1.83e9
    assert h100.rated_clock("matrix", "fp64") == h100.rated_clock("vector", "bf16") == 1.98e9
    # the H200 and H800 share the GH100 Tensor Cores and the clock
    for key in ("h200-sxm", "h800-sxm"):
        assert hardware(key).peak_flops("bf16") == 989.4e12
        assert hardware(key).rated_clock("matrix", "bf16") == 1.83e9
    # sparse figures (reference only) stay the vendor's: twice dense (1978.9 / 989.4)
    assert h100.sparse_peak_flops("bf16") == 1978.9e12
    # devices whose vendor figures are all at one clock record no matrix clock
    for key in ("a100-sxm", "mi300x", "l40s", "rtx-4090"):
        assert not hardware(key).matrix_clock_hz
    assert hardware("a100-sxm").peak_flops("bf16") == 312e12


def test_devices_json_gives_the_vendor_peak_and_its_ridge(capsys):
    # `roofline-book devices --device h100-sxm --json`: BF16 matrix 989.4 TFLOP/s (H100
    # whitepaper, dense), ridge 989.4e12 / 3.35e12 (datasheet HBM3) = 295.34 FLOP/byte
    import json

    from roofline_book.cli import main

    assert main(["devices", "--device", "h100-sxm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["devices"][0]
    assert out["matrix_peaks_per_s"]["bf16"] == 989.4e12
    assert out["ridge_points"]["bf16"] == pytest.approx(989.4e12 / 3.35e12)
    assert out["ridge_points"]["bf16"] == pytest.approx(295.34, abs=0.01)
    bf16 = next(c for c in out["ceilings"] if (c["resource"], c["precision"]) == ("matrix", "bf16"))
    assert bf16["value"] == 989.4e12 and bf16["clock_hz"] == 1.83e9


def test_capacity_is_what_the_device_exposes():
    # nvidia-smi totals: H100 80GB HBM3 81559 MiB, H200 143771 MiB, A100-SXM4-80GB 81920 MiB
    h100, h200, a100 = hardware("h100-sxm"), hardware("h200-sxm"), hardware("a100-sxm")
    assert h100.memory_capacity == 81559 * 2**20 == 85_520_809_984
    assert h200.memory_capacity == 143771 * 2**20 == 150_754_820_096
    assert a100.memory_capacity == 81920 * 2**20 == 80 * 2**30
    assert (
        h100.memory_capacity_basis == "driver"
        and "nvidia-smi" in h100.source("memory_capacity").title
    )
    # where no driver total is cited, the nominal capacity read as GiB: MI300X's 192 GiB
    # (ROCm's table prints GiB), B200's 1,440 GB / 8 = 180 GiB
    assert hardware("mi300x").memory_capacity == 192 * 2**30
    assert hardware("b200").memory_capacity == 180 * 2**30
    for key, dev in catalog().items():
        assert dev.memory_capacity_basis in ("driver", "nominal"), key
        assert dev.derivations["memory_capacity"]


def test_b200_takes_the_higher_of_two_vendor_bandwidths():
    # DGX B200: 64 TB/s for 8 GPUs = 8 TB/s; the Blackwell Tech Brief: 7.7 TB/s per GPU. A
    # lower bound takes the higher, and keeps the other source beside it
    b200 = hardware("b200")
    assert b200.memory_bandwidth == max(64e12 / 8, 7.7e12) == 8e12
    assert "DGX B200" in b200.source("memory_bandwidth").title
    (other,) = b200.compared_sources["memory_bandwidth"]
    assert "Technical Brief" in other.title and b200.compared_figures["memory_bandwidth"] == (
        7.7e12,
    )
    assert "7.7 TB/s" in b200.derivations["memory_bandwidth"]


def test_l2_bandwidth_is_the_highest_published_or_measured():
    # A100 whitepaper p. 35: "The A100 L2 read bandwidth is 5120 Bytes/clk": x 1.41e9 (the
    # boost clock) = 7219.2 GB/s, above the 1.5 sectors per clock x 32 B x 80 slices x
    # 1.41 GHz = 5414.4 GB/s others measured; the roof takes the higher, the vendor's.
    # NVIDIA publishes no H100 L2 rate: an L2-resident cp.async copy at 8428.6 GB/s
    # (smallscientist1/cuda_microbenchmark) against 3574 GB/s for an __ldcg/__stcg copy in
    # another study: the roof takes the higher
    h100, a100 = hardware("h100-sxm"), hardware("a100-sxm")
    assert h100.bandwidth("l2") == 8.4286e12 > max(h100.compared_figures["l2_bandwidth"])
    assert h100.compared_figures["l2_bandwidth"] == (3.574e12,)
    assert h100.source("l2_bandwidth").firmness in ("paper", "secondary")
    assert "NVIDIA publishes none" in h100.derivations["l2_bandwidth"]
    assert a100.bandwidth("l2") == pytest.approx(5120 * 1.41e9)
    assert a100.compared_figures["l2_bandwidth"] == (pytest.approx(1.5 * 32 * 80 * 1.41e9),)
    assert a100.source("l2_bandwidth").firmness == "vendor"
    assert "5120 B/clock" in a100.derivations["l2_bandwidth"]
    # FlashAttention-3 at 740-840 TFLOP/s (d = 256) must stream 5.7-6.5 TB/s out of L2
    # (review M5): the roof must be above what the kernel does
    assert h100.bandwidth("l2") > 6.5e12
    assert hardware("h200-sxm").bandwidth("l2") is None


def test_l40s_takes_the_rate_its_own_datasheet_implies():
    # AD102 Tensor Cores: 1024 dense FP16 FLOP per clock per SM (RTX 4090, FP16 accumulate:
    # 128 SMs x 1024 x 2.52e9 = 330.3e12, the Ada whitepaper's figure). L40S: 142 x 1024 x
    # 2.52e9 = 366.4e12 = its datasheet's sparse 733 / 2 = its FP8 733 / 2; the dense 362.05
    # it prints is below both, and a bound takes the higher
    l40s = hardware("l40s")
    assert 142 * 1024 * 2.52e9 == pytest.approx(366.4e12, rel=1e-4)
    assert l40s.peak_flops("bf16") == l40s.peak_flops("fp16") == 366.4e12
    assert l40s.peak_flops("bf16") == pytest.approx(733e12 / 2, rel=1e-3)
    assert "362.05" in l40s.derivations["peak_flops.bf16"]
    # RTX 4090: the FP32-accumulate rate (Ada whitepaper: FP16 165.2 with FP32 accumulate,
    # 330.3 with FP16 accumulate); the assumption is stated with the figure
    rtx = hardware("rtx-4090")
    assert rtx.peak_flops("fp16") == 165.2e12 and rtx.peak_flops("fp8") == 330.3e12
    assert "FP16-accumulate" in rtx.derivations["peak_flops.fp16"]


def test_packed_16_bit_vector_math_is_a_higher_roof():
    # H100 whitepaper: non-Tensor FP16 and BF16 133.8 TFLOP/s (HFMA2 / BF16x2), twice the
    # FP32 lanes; A100 whitepaper: FP16 78, BF16 39 non-Tensor against FP32 19.5
    h100, a100 = hardware("h100-sxm"), hardware("a100-sxm")
    assert h100.vector_peak("bf16") == h100.vector_peak("fp16") == 133.8e12
    assert (a100.vector_peak("fp16"), a100.vector_peak("bf16")) == (78e12, 39e12)
    assert h100.vector_peak("fp32") == 67e12 and h100.vector_peak("fp8") == 67e12
    # no packed figure: the FP32 lanes
    assert hardware("h20").vector_peak("bf16") == hardware("h20").vector_peak("fp32")
    # an add is one lane slot, not an FMA: half the FMA-counted peak
    assert h100.vector_op_rate("fp32") == 33.5e12 and a100.vector_op_rate("fp32") == 9.75e12


def test_special_ceilings_are_evaluations_per_second():
    h100 = hardware("h100-sxm")
    special = next(c for c in h100.ceilings() if c.resource == "special")
    assert special.unit == "evaluations/s" and "FLOP" not in str(special)
    assert str(special) == "special fp32: 4.182 T evaluations/s at 1980 MHz"
    matrix = next(c for c in h100.ceilings() if c.precision == "int8")
    assert matrix.unit == "OP/s"


def test_bad_unit_or_level_names_the_allowed_values():
    h100 = hardware("h100-sxm")
    with pytest.raises(ValueError, match="unit must be one of matrix, vector, special"):
        h100.ceiling("tensor")
    with pytest.raises(ValueError, match="level must be one of hbm, l2"):
        h100.ridge_point(level="smem")
    with pytest.raises(InvalidArgument, match="^level 'l2' has no published bandwidth on h200"):
        hardware("h200-sxm").ridge_point(level="l2")


def test_known_datasheet_figures():
    h100 = hardware("h100-sxm")
    assert h100.peak_flops("bf16") == 989.4e12  # the whitepaper's dense figure, at 1830 MHz
    assert h100.peak_flops("fp8_e5m2") == h100.peak_flops("fp8")
    assert h100.peak_flops("fp32") == 67e12
    h200 = hardware("h200-sxm")
    assert h200.peak_flops("bf16") == h100.peak_flops("bf16")
    assert h200.memory_bandwidth == 4.8e12
    assert hardware("a100-sxm").memory_bandwidth == 2.039e12


def test_ridge_points():
    # vendor dense BF16 989.4e12 / 3.35e12 (H100 HBM3) = 295.34; / 4.8e12 (H200) = 206.13
    assert hardware("h100-sxm").ridge_point("bf16") == pytest.approx(295.34, abs=0.01)
    assert hardware("h200-sxm").ridge_point("bf16") == pytest.approx(206.13, abs=0.01)
    # BF16 moves the ridge right of FP32 on every NVIDIA part with Tensor Cores
    for key in ("a100-sxm", "h100-sxm", "h200-sxm"):
        dev = hardware(key)
        assert dev.ridge_point("bf16") > 4 * dev.ridge_point("fp32")


def test_names_are_forgiving_but_strict():
    assert hardware("H100_SXM") is hardware(" h100 sxm ")
    with pytest.raises(ValueError, match="allowed: a100-sxm"):
        hardware("h100")
    with pytest.raises(TypeError, match="name"):
        hardware(100)


def test_missing_precision_is_an_error_not_a_number():
    with pytest.raises(InvalidArgument, match="^dtype 'tf32' has no published dense peak on l20"):
        hardware("l20").peak_flops("tf32")
    with pytest.raises(ValueError, match="not a known precision"):
        hardware("h100-sxm").peak_flops("fp7")
    with pytest.raises(InvalidArgument, match="^dtype 'fp32' has no published sparse peak on h100"):
        hardware("h100-sxm").sparse_peak_flops("fp32")


def test_example_and_adhoc():
    assert EXAMPLE.peak_flops("bf16") == EXAMPLE.peak_flops("fp32") == 100e12
    assert EXAMPLE.ridge_point() == 100.0
    assert EXAMPLE.source("peak_flops").key == "user"
    with pytest.raises(ValueError, match="memory_bandwidth"):
        adhoc("x", 1e12, 0)
    with pytest.raises(TypeError, match="peak_flops"):
        adhoc("x", "fast", 1e12)
    with pytest.raises(ValueError, match="not a known precision"):
        adhoc("x", {"bf15": 1e12}, 1e12)


def test_swapped_dense_and_sparse_is_refused():
    from roofline_book.devices.catalog import Hardware

    with pytest.raises(ValueError, match="swapped"):
        Hardware("bad", "bad", {"bf16": 2e15}, 1e12, sparse_peaks={"bf16": 1e15})


# --------------------------------------------------------------------------
# The catalog's text: every key known, every figure sourced

_TEXT = """
[sources.mine]
title = "my datasheet"

[devices.gpu]
name = "My GPU"
clock_hz = 2e9
matrix = { bf16 = 100e12 }
memory_bandwidth = 1e12
shared_memory_per_sm = 65536
[devices.gpu.sources]
clock_hz = "mine"
matrix = "mine"
memory_bandwidth = "mine"
shared_memory_per_sm = "mine"
"""


def test_a_catalog_text_loads():
    gpu = load_catalog(_TEXT, "mine.toml")["gpu"]
    assert (gpu.peak_flops("bf16"), gpu.shared_memory_per_sm, gpu.clock_hz) == (100e12, 65536, 2e9)


_SOURCED = 'matrix = "mine"\n'


@pytest.mark.parametrize(
    "changes,match",
    [
        # a misspelt figure names the key, the device and the file
        (
            [("shared_memory_per_sm = 65536\n[", "shared_memory_per_SM = 65536\n[")],
            "mine.toml: device 'gpu' has an unknown key 'shared_memory_per_SM'",
        ),
        ([('title = "my datasheet"', 'titel = "x"')], "source 'mine' has an unknown key 'titel'"),
        ([(_SOURCED, 'matrx = "mine"\n')], "sources names 'matrx', which is no figure"),
        ([('clock_hz = "mine"', 'clock_hz = "yours"')], "sources.clock_hz names no known source"),
        ([('clock_hz = "mine"\n', "")], "device 'gpu': clock_hz names no known source"),
        (
            [
                ("clock_hz = 2e9", "clock_hz = 2e9\nmatrix_clock_hz = { bf16 = 3e9 }"),
                (_SOURCED, _SOURCED + 'matrix_clock_hz = "mine"\n'),
            ],
            r"matrix_clock_hz\['bf16'\] \(3e\+09\) is above clock_hz",
        ),
        (
            [
                (
                    "clock_hz = 2e9",
                    "clock_hz = 2e9\nmemory_capacity_mib = 1\nmemory_capacity_gib = 1",
                ),
                (_SOURCED, _SOURCED + 'memory_capacity = "mine"\n'),
            ],
            "memory_capacity_mib or memory_capacity_gib, not both",
        ),
        ([("[devices.gpu]", "[device.gpu]")], "unknown table 'device'"),
    ],
)
def test_a_bad_catalog_text_names_the_key_device_and_file(changes, match):
    text = _TEXT
    for old, new in changes:
        assert old in text
        text = text.replace(old, new, 1)
    with pytest.raises(ValueError, match=match):
        load_catalog(text, "mine.toml")


def test_the_hopper_parts_are_named_by_their_architecture():
    # NVIDIA's compute capability table (developer.nvidia.com/cuda-gpus): H100, H800, H20 and
    # H200 are compute capability 9.0, Hopper; A100/A800 8.0 (Ampere), L40S/L20/RTX 4090 8.9
    # (Ada), B200 10.0 (Blackwell); MI300X is AMD's CDNA 3. FlashAttention-3's tile table is for
    # Hopper, so exactly these four get it.
    from roofline_book.devices.kernels import device_flash_tile

    arch = {k: d.architecture for k, d in catalog().items()}
    assert {k for k, a in arch.items() if a == "hopper"} == {
        "h100-sxm",
        "h800-sxm",
        "h20",
        "h200-sxm",
    }
    assert arch["a100-sxm"] == arch["a800-sxm"] == "ampere" and arch["b200"] == "blackwell"
    assert arch["l40s"] == arch["l20"] == arch["rtx-4090"] == "ada" and arch["mi300x"] == "cdna3"
    tiled = {k for k, d in catalog().items() if device_flash_tile(d, 128) is not None}
    assert tiled == {"h100-sxm", "h800-sxm", "h20", "h200-sxm"}
    assert adhoc("mine", 100e12, 1e12).architecture == ""  # a device of one's own: no tile


def test_a_measured_device_meets_its_entry_by_the_name_it_reports():
    # the names the stored driver logs print: 'for each NVIDIA H100 80GB HBM3' (nvsmi-h100-sxm5),
    # 'Product Name : NVIDIA H200' (nvsmi-h200), 'NVIDIA H20 ... 97871MiB' (nvsmi-h20); the
    # A100 log is of '4 x A100-SXM4-80GB', which the driver reports as 'NVIDIA A100-SXM4-80GB'
    from roofline_book.devices.catalog import reported

    for key, source in (("h100-sxm", "nvsmi-h100-sxm5"), ("h200-sxm", "nvsmi-h200")):
        (name,) = catalog()[key].reported_names
        quoted = [s for s in catalog()[key].sources.values() if s.key == source]
        assert quoted and name in quoted[0].note
        assert reported(name).key == key
    assert reported("NVIDIA A100-SXM4-80GB").key == "a100-sxm"
    assert reported("nvidia  h20").key == "h20"  # case and spacing do not matter
    # other parts of the same chip report other names and meet no entry: the A100 40 GB has
    # 1.555 TB/s (A100 datasheet), not the 80 GB part's 2.039 TB/s
    assert reported("NVIDIA A100-SXM4-40GB") is None and reported("NVIDIA H100 PCIe") is None
    assert reported("fixture CPU") is None


def test_the_catalog_rejects_a_misspelt_or_malformed_device_fact():
    base = [
        "[sources.mine]",
        'title = "my datasheet"',
        "[devices.gpu]",
        'name = "My GPU"',
        "matrix = { bf16 = 100e12 }",
        "memory_bandwidth = 1e12",
        "[devices.gpu.sources]",
        'matrix = "mine"',
        'memory_bandwidth = "mine"',
    ]
    good = base[:4] + ['architecture = "hopper"', 'reported_names = ["My GPU 80GB"]'] + base[4:]
    gpu = load_catalog("\n".join(good))["gpu"]
    assert (gpu.architecture, gpu.reported_names) == ("hopper", ("My GPU 80GB",))
    with pytest.raises(ValueError, match="unknown key 'reported_name'"):
        load_catalog("\n".join(base[:4] + ['reported_name = ["My GPU"]'] + base[4:]))
    with pytest.raises(TypeError, match="reported_names must be a sequence of non-empty"):
        load_catalog("\n".join(base[:4] + ['reported_names = "My GPU"'] + base[4:]))
