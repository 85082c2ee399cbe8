"""Costs on a device as tables: cost_table, the frames, and the text renderers."""

import pytest

from roofline_book import (
    EXAMPLE,
    Cost,
    add,
    adhoc,
    cost_table,
    gemm,
    roof_kind,
    table_frame,
    time_lower_bound,
)
from roofline_book.present.tables import markdown_table, text_table

P, B = 100e12, 1e12  # the reference chapter's example device


def test_cost_table_rows_on_the_example_device():
    named = [("add", add(4096 * 4096)), ("gemm", gemm(4096, 4096, 4096))]
    rows = cost_table(named, EXAMPLE, "bf16")
    assert [r.name for r in rows] == ["add", "gemm"]
    a, g = rows
    assert a.attainable == pytest.approx(1e12 / 6)  # B * I = 1 TB/s * 1/6
    assert g.attainable == P  # I = 8192/6 = 1365 > 100: the flat roof
    assert (a.bound, g.bound) == ("memory", "compute")
    assert a.time.seconds == pytest.approx(6 * 4096**2 / B)  # 100.7 us
    assert g.time.seconds == pytest.approx(2 * 4096**3 / P)  # 1374.4 us
    total = 6 * 4096**2 / B + 2 * 4096**3 / P
    assert a.share == pytest.approx(6 * 4096**2 / B / total)  # about 0.068
    assert a.share + g.share == pytest.approx(1.0)
    # one peak for everything: the two-roof model of the reference chapter
    assert a.time.seconds == time_lower_bound(add(4096 * 4096), P, B).seconds
    assert dict(a.time.by_resource) == {"compute": 4096**2 / P, "hbm": 6 * 4096**2 / B}
    assert (a.resource, g.resource) == ("hbm", "compute")
    assert cost_table(dict(named), EXAMPLE) == rows  # a mapping works the same


def test_cost_table_uses_the_peak_of_dtype():
    dev = adhoc("two peaks", {"bf16": 200e12, "fp32": 50e12}, 1e12)
    c = gemm(1024, 1024, 1024)  # I = 2048 / 6 = 341.3 FLOP/byte
    (bf16,) = cost_table([("g", c)], dev, "bf16")
    (fp32,) = cost_table([("g", c)], dev, "fp32")
    assert bf16.attainable == 200e12 and bf16.bound == "compute"  # ridge 200
    assert fp32.attainable == 50e12 and fp32.bound == "compute"  # ridge 50
    # roof_kind agrees with the rows
    assert roof_kind(c.intensity, 200e12, 1e12) == bf16.bound
    small = gemm(64, 64, 64)  # I = 128 / 6 = 21.3 < 50
    (row,) = cost_table({"small": small}, dev, "fp32")
    assert row.bound == "memory" and row.attainable == pytest.approx(1e12 * 128 / 6)


@pytest.mark.parametrize(
    "named,device,error,match",
    [
        ([("add", add(8))], "example", TypeError, "^device must be a Hardware"),
        ([], EXAMPLE, ValueError, "^named must hold at least one"),
        ({}, EXAMPLE, ValueError, "^named must hold at least one"),
        (add(8), EXAMPLE, TypeError, "^named must be a mapping"),
        ("add", EXAMPLE, TypeError, "^named must be a mapping"),
        ([add(8)], EXAMPLE, TypeError, r"^named\[0\] must be a \(name, Cost\) pair"),
        ([("add", add(8)), (3, add(8))], EXAMPLE, TypeError, r"^named\[1\] must be named by a str"),
        ([("add", 6)], EXAMPLE, TypeError, r"^named\[0\] \('add'\) must hold a roofline_book.Cost"),
        ([("nothing", Cost(1, 0, 0))], EXAMPLE, ValueError, r"^named\[0\] \('nothing'\) moves no"),
    ],
)
def test_cost_table_rejects(named, device, error, match):
    with pytest.raises(error, match=match):
        cost_table(named, device)


def test_cost_table_rejects_a_precision_without_a_peak():
    dev = adhoc("bf16 only", {"bf16": 100e12}, 1e12)
    with pytest.raises(ValueError, match="^dtype 'fp32' has no published dense peak on bf16 only"):
        cost_table([("add", add(8))], dev, "fp32")


def test_table_frame_columns_and_values():
    rows = cost_table([("add", add(4096 * 4096)), ("gemm", gemm(4096, 4096, 4096))], EXAMPLE)
    df = table_frame(rows)
    assert list(df.columns) == [
        "operator",
        "FLOPs",
        "bytes",
        "intensity [FLOP/B]",
        "attainable [FLOP/s]",
        "bound",
        "resource",
        "time bound [us]",
        "share",
    ]
    assert list(df["operator"]) == ["add", "gemm"]
    assert list(df["FLOPs"]) == [4096**2, 2 * 4096**3]
    assert list(df["bytes"]) == [6 * 4096**2, 3 * 2 * 4096**2]
    assert list(df["attainable [FLOP/s]"]) == [r.attainable for r in rows]
    assert df["time bound [us]"].tolist() == pytest.approx([100.663296, 1374.38953472])
    with pytest.raises(TypeError, match=r"^rows\[1\] must be a Row"):
        table_frame([rows[0], ("gemm", gemm(8, 8, 8))])


def test_text_table_aligns_columns_two_spaces_apart():
    out = text_table(["op", "time"], [["add", "6 us"], ["gemm", "1.37 ms"]], right={1})
    assert out.splitlines() == ["op       time", "add      6 us", "gemm  1.37 ms"]
    # no header; a left-aligned last column leaves no trailing spaces
    assert text_table(None, [["a", "x"], ["bbb", "yy"]]).splitlines() == ["a    x", "bbb  yy"]
    with pytest.raises(ValueError, match="^rows line 1 has 1 cells, the table has 2 columns"):
        text_table(["a", "b"], [["x"]])


def test_markdown_table_escapes_pipes_and_keeps_digits():
    out = markdown_table(["label", "ratio"], [["fp32 | loop", "0.170"]], right={1})
    assert out.splitlines() == [
        "| label        |   ratio |",
        "|:-------------|--------:|",
        "| fp32 \\| loop |   0.170 |",
    ]
    assert markdown_table(["a"], [["x"]], align=["center"]).splitlines()[1] == "|:---:|"
    with pytest.raises(ValueError, match="align must hold 1 of 'left', 'right', 'center'"):
        markdown_table(["a"], [["x"]], align=["middle"])


def test_every_resource_and_verdict_has_a_word_in_both_languages():
    # each resource a bound can name (roofline/bounds.py: the compute units and the memory
    # levels) and each verdict a claim can reach (measure/judge/verdicts.py) is worded once,
    # in English for the command line and in Chinese for the book
    from roofline_book.measure.judge.verdicts import VERDICTS as VERDICT_KEYS
    from roofline_book.present.words import RESOURCES, VERDICTS, resource
    from roofline_book.roofline.bounds import COMPUTE_RESOURCES, MEMORY_RESOURCES

    for language in ("en", "zh"):
        assert set(RESOURCES[language]) == {*COMPUTE_RESOURCES, *MEMORY_RESOURCES}
        assert set(VERDICTS[language]) == set(VERDICT_KEYS)
    assert resource("special", "zh") == "特殊函数单元" and resource("llc") == "last-level cache"
    assert VERDICTS["zh"]["inconclusive"] == "无法判定"
    with pytest.raises(ValueError, match="language must be one of en, zh; got 'fr'"):
        resource("hbm", "fr")
