import pytest
import torch

from roofline_book.dtypes import BYTES, bytes_per_element, precision_name


@pytest.mark.parametrize(
    "name,expected",
    [
        ("fp64", 8),
        ("fp32", 4),
        ("tf32", 4),
        ("bf16", 2),
        ("fp16", 2),
        ("fp8_e4m3", 1),
        ("fp8_e5m2", 1),
        ("int8", 1),
        ("BFloat16", 2),
        ("half", 2),
    ],
)
def test_names(name, expected):
    assert bytes_per_element(name) == expected


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float64,
        torch.float32,
        torch.bfloat16,
        torch.float16,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.int8,
    ],
)
def test_torch_dtypes_agree_with_torch(dtype):
    assert bytes_per_element(dtype) == dtype.itemsize
    assert precision_name(dtype) in BYTES


def test_unknown():
    with pytest.raises(ValueError, match="allowed: fp64, fp32"):
        bytes_per_element("fp12")
    with pytest.raises(ValueError, match="not a known precision"):
        bytes_per_element(torch.complex64)
    with pytest.raises(TypeError, match="dtype"):
        bytes_per_element(2)
