import re

import pytest

from roofline_book.units import MAX_SIZE, parse_si, parse_size, sci, si


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


@pytest.mark.parametrize(
    "text,quantity,found",
    [
        ("100Tbyte/s", "FLOP/s", "byte/s"),
        ("100Tbytes", "FLOP/s", "byte"),
        ("100TB/s", "FLOP/s", "byte/s"),
        ("100Ts", "FLOP/s", "s"),
        ("1Ts", "byte/s", "s"),
        ("1TOP/s", "byte/s", "FLOP/s"),
        ("1TFLOP", "FLOP/s", "FLOP"),
    ],
)
def test_parse_si_refuses_a_unit_of_another_quantity(text, quantity, found):
    with pytest.raises(ValueError, match=f"rate: '{re.escape(text)}' is in {re.escape(found)};"):
        parse_si(text, "rate", quantity=quantity)


@pytest.mark.parametrize(
    "text,quantity,value",
    [("100T", "FLOP/s", 1e14), ("100TFLOP/s", "FLOP/s", 1e14), ("624TOP/s", "FLOP/s", 6.24e14),
     ("3.35TB/s", "byte/s", 3.35e12), ("2e12", "byte/s", 2e12), ("1 Gbyte/s", "byte/s", 1e9)],
)  # fmt: skip
def test_parse_si_reads_the_units_of_its_quantity(text, quantity, value):
    assert parse_si(text, "rate", quantity=quantity) == pytest.approx(value)


@pytest.mark.parametrize(
    "text,message",
    [
        ("_1", "expected a whole number"),
        ("1__000", "expected a whole number"),
        ("1_", "expected a whole number"),
        ("0^0", "'0^0' is undefined"),
        ("2^63", "too large a size (at most 2^63 - 1)"),
        ("9223372036854775808", "too large a size"),
        ("2^400", "too large a size"),
    ],
)
def test_parse_size_refuses(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_size(text)


def test_parse_size_limits():
    # 2**63 - 1 = 9_223_372_036_854_775_807, the largest int64: the largest tensor size
    assert parse_size("9_223_372_036_854_775_807") == MAX_SIZE == 2**63 - 1
    assert parse_size("2^62") == 2**62 and parse_size("0^3") == 0 and parse_size("1_000") == 1000


@pytest.mark.parametrize(
    "value,text",
    [
        # 64^3 GEMM at 0.1 FLOP/s: 2 * 64**3 / 0.1 = 5_242_880 s; "Ms" would read as ms
        (5_242_880.0, "5.243e+06 s"),
        (1234.5, "1234 s"),  # 4 digits still fit: plain seconds
        (12_345.0, "1.234e+04 s"),
        (1e40, "1e+40 s"),
        (1.5e-3, "1.5 ms"),  # below a second the prefixes stay
        (2.5e-9, "2.5 ns"),
    ],
)
def test_times_take_no_prefix_above_a_second(value, text):
    assert si(value, "s") == text


def test_si_beyond_the_largest_prefix_is_scientific():
    # 1e40 FLOP is 1e22 EFLOP: no prefix reads that, so it is written 1e+40 FLOP
    assert si(1e40, "FLOP") == "1e+40 FLOP"
    assert si(999.9e18, "B") == "999.9 EB"  # still within E


def test_si_refuses_nan():
    with pytest.raises(ValueError, match="cannot print NaN"):
        si(float("nan"), "s")


@pytest.mark.parametrize(
    "text,prefix,meaning",
    [("100m", "m", "milli, 1e-3"), ("3u", "u", "micro, 1e-6"), ("1nB/s", "n", "nano, 1e-9")],
)
def test_a_rate_refuses_sub_unit_prefixes(text, prefix, meaning):
    # a rate of 0.1 FLOP/s is no device: "100m" is a mistyped 100M, so it is refused, and the
    # message says what m means
    quantity = "byte/s" if text.endswith("B/s") else "FLOP/s"
    with pytest.raises(ValueError, match=re.escape(f"has the prefix {prefix} ({meaning})")):
        parse_si(text, "--peak", quantity=quantity)
    assert parse_si("1.5m") == pytest.approx(1.5e-3)  # not a rate: milli is fine


@pytest.mark.parametrize("text", ["4.0", "1e3", "1E3", "-1", "0", "4.5", "1.0001k"])
def test_parse_size_one_rule_one_message(text):
    # the Python API takes sizes as int only (gemm(4.0, ...) is a TypeError), so text written
    # as a float (4.0, 1e3) is refused as well; a negative or zero size gets the same message,
    # with the minimum in it
    with pytest.raises(ValueError) as info:
        parse_size(text, minimum=1)
    assert str(info.value).startswith("expected a whole number >= 1 (e.g. 4096")
    assert str(info.value).endswith(f"got {text!r}")


def test_parse_size_decimal_point_before_a_suffix():
    assert parse_size("1.5M") == 1_500_000 and parse_size("0.5Ki") == 512
