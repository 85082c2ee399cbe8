"""The hardware catalog: dense peaks only as roofs, every figure sourced."""

import pytest

from roofline_book import hardware
from roofline_book.hardware import EXAMPLE, adhoc, catalog


def test_catalog_has_required_devices():
    assert {"a100-sxm", "h100-sxm", "h200-sxm", "b200", "mi300x"} <= set(catalog())


@pytest.mark.parametrize("key", list(catalog()))
def test_every_figure_has_a_source(key):
    dev = catalog()[key]
    for figure in ("peak_flops", "memory_bandwidth"):
        src = dev.source(figure)
        assert src.title and src.date and src.url.startswith("https://")
    for figure in ("memory_capacity", "l2_cache", "shared_memory_per_sm", "sms"):
        if getattr(dev, figure) is not None:
            assert dev.source(figure).title


@pytest.mark.parametrize("key", list(catalog()))
def test_sparse_is_twice_dense(key):
    # The commonest error in this field is a sparse figure used as the peak:
    # every sparse figure in the catalog must be about twice its dense twin.
    dev = catalog()[key]
    assert dev.sparse_peaks, key
    for precision, sparse in dev.sparse_peaks.items():
        assert sparse / dev.peak_flops(precision) == pytest.approx(2.0, rel=0.01)


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
    with pytest.raises(ValueError, match="no published dense peak for fp32"):
        hardware("b200").peak_flops("fp32")
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
