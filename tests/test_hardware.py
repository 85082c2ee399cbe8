"""The hardware catalog: dense peaks only as roofs, every figure sourced."""

import pytest

from roofline_book import hardware
from roofline_book.hardware import EXAMPLE, adhoc, catalog


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
    for figure in ("memory_capacity", "l2_cache", "shared_memory_per_sm", "sms", "special_peak"):
        if getattr(dev, figure) is not None:
            assert dev.source(figure).title
    if dev.firmness == "vendor":  # a vendor device's compute ceilings come from the vendor
        assert dev.source("peak_flops").firmness == "vendor"


@pytest.mark.parametrize("key", list(catalog()))
def test_sparse_is_twice_dense(key):
    # The commonest error in this field is a sparse figure used as the peak:
    # every sparse figure in the catalog must be about twice its dense twin
    # (the L40S datasheet prints 362.05 dense and 733 sparse: 2.02).
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
    assert b200.vector_peak("fp32") == 600e12 / 8 and b200.memory_bandwidth == 7.7e12
    mi = hardware("mi300x")
    assert mi.l2_cache == 32 * 2**20 and mi.last_level_cache == 256 * 2**20


def test_special_function_rate_is_derived_from_published_figures():
    # 16 results per clock per SM (FlashAttention-3, citing the CUDA guide) x 132 SMs at
    # the clock where 128 FP32 lanes x 2 FLOP x 132 SMs give 67 TFLOP/s: 67e12 / 16
    h100 = hardware("h100-sxm")
    assert h100.special_peak_flops() == pytest.approx(67e12 * 16 / (2 * 128))
    assert "16 results/clock/SM x 132 SMs" in h100.derivations["special_peak"]
    # FlashAttention-3 quotes 3.9 T/s at 1830 MHz; the catalog takes the higher clock
    # the FP32 peak implies, so the bound it gives can only be lower
    assert h100.special_peak_flops() >= 3.9e12
    # a device without the published inputs falls back to its FP32 lanes
    assert hardware("b200").special_peak_flops() == hardware("b200").vector_peak("fp32")


def test_bad_unit_or_level_names_the_allowed_values():
    h100 = hardware("h100-sxm")
    with pytest.raises(ValueError, match="unit must be one of matrix, vector, special"):
        h100.ceiling("tensor")
    with pytest.raises(ValueError, match="level must be one of hbm, l2"):
        h100.ridge_point(level="smem")
    with pytest.raises(ValueError, match="no published l2 bandwidth"):
        h100.ridge_point(level="l2")


def test_known_datasheet_figures():
    h100 = hardware("h100-sxm")
    assert h100.peak_flops("bf16") == 989.5e12  # datasheet 1,979 TFLOPS with sparsity / 2
    assert h100.peak_flops("fp8_e5m2") == h100.peak_flops("fp8") == 1979e12
    assert h100.peak_flops("fp32") == 67e12
    h200 = hardware("h200-sxm")
    assert h200.peak_flops("bf16") == h100.peak_flops("bf16")
    assert h200.memory_bandwidth == 4.8e12
    assert hardware("a100-sxm").memory_bandwidth == 2.039e12


def test_ridge_points():
    # 989.5e12 / 3.35e12 = 295.4; 989.5e12 / 4.8e12 = 206.1
    assert hardware("h100-sxm").ridge_point("bf16") == pytest.approx(295.37, abs=0.01)
    assert hardware("h200-sxm").ridge_point("bf16") == pytest.approx(206.15, abs=0.01)
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
    with pytest.raises(ValueError, match="no published dense peak for tf32"):
        hardware("l20").peak_flops("tf32")
    with pytest.raises(ValueError, match="not a known precision"):
        hardware("h100-sxm").peak_flops("fp7")
    with pytest.raises(ValueError, match="no published sparse peak for fp32"):
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
    from roofline_book.hardware import Hardware

    with pytest.raises(ValueError, match="swapped"):
        Hardware("bad", "bad", {"bf16": 2e15}, 1e12, sparse_peaks={"bf16": 1e15})
