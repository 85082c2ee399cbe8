import pytest

from roofline_book.units import parse_si, sci, si


@pytest.mark.parametrize(
    "text,value",
    [
        ("989.5T", 989.5e12),
        ("3.35TB/s", 3.35e12),
        ("100 TFLOP/s", 1e14),
        ("2e12", 2e12),
        ("64k", 64e3),
        ("64K", 64e3),
        ("1.5 ms", 1.5e-3),
        (".5G", 5e8),
    ],
)
def test_parse_si(text, value):
    assert parse_si(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["", "T", "1..2T", "12 parsecs", "1e", "--3T"])
def test_parse_si_rejects(bad):
    with pytest.raises(ValueError, match="peak: cannot read"):
        parse_si(bad, "peak")


def test_parse_si_type():
    with pytest.raises(TypeError, match="bandwidth"):
        parse_si(3.0, "bandwidth")


@pytest.mark.parametrize(
    "value,text",
    [
        (989.5e12, "989.5 TFLOP/s"),
        (999.94e9, "999.9 GFLOP/s"),
        (999.96e9, "1 TFLOP/s"),
        (1.0, "1 FLOP/s"),
        (2.5e-6, "2.5 uFLOP/s"),
        (-3e9, "-3 GFLOP/s"),
    ],
)
def test_si(value, text):
    assert si(value, "FLOP/s") == text


def test_sci():
    assert sci(2 * 4096**3) == "1.37 × 10¹¹"
    assert sci(9.996e5) == "1.00 × 10⁶"  # mantissa rounding carries into the exponent
    assert sci(12.5) == "12.5"
    assert sci(-2.5e-4) == "-2.50 × 10⁻⁴"
