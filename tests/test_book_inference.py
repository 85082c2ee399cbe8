"""roofline_book.book.inference: the levers table of chapter 13, recomputed by hand.

The expected values are arithmetic on the models' published shapes (config.json) and the
catalog's H100 SXM figures (989.4 TFLOP/s dense BF16, 3.35 TB/s, 81,559 MiB), not calls to
the functions the module uses.
"""

import pytest

from roofline_book import hardware
from roofline_book.book.inference import batch_words, levers, levers_table, sweep_words
from roofline_book.llm.inference import model

H100 = hardware("h100-sxm")
BW, MEM, RIDGE = 3.35e12, 81_559 * 2**20, 989.4e12 / 3.35e12
CTX = 4096
# Llama-3-8B: 32 layers, hidden 4096, 32 heads of 128, 8 KV heads, FFN 14336, vocab 128256
L3_PARAMS = 8_030_261_248
L3_KV = 2 * 32 * 8 * 128 * 2  # 131,072 bytes a token
ACT_L3 = 2 * 8192 * (4096 + 3 * 14336) + 4 * 256 * 128256  # vLLM-style profile peak


def _b_star(ridge, w, ffn=14336, k=4096, a=2):
    n = 2 * ffn  # gate and up in one GEMM
    return ridge * w * k * n / (2 * k * n - ridge * a * (k + n))


@pytest.fixture(scope="module")
def rows():
    return {r.key: r for r in levers(model("llama-3-8b"), model("mixtral-8x7b"), H100, CTX)}


def test_base_row(rows):
    base = rows["base"]
    assert base.weights == 2 * L3_PARAMS  # 16.06 GB
    assert base.kv == L3_KV
    assert base.b_star == pytest.approx(_b_star(RIDGE, 2))  # 321.9
    assert base.b_max == int((0.9 * MEM - 2 * L3_PARAMS - ACT_L3) // (CTX * L3_KV)) == 111
    assert base.ceiling == pytest.approx(BW / (CTX * L3_KV))  # 6240 tokens/s


def test_levers_move_their_quantities(rows):
    base = rows["base"]
    # int4 (GPTQ): 0.5 byte + a 2-byte scale per 128 weights: b* = 83.0
    assert rows["int4"].b_star == pytest.approx(_b_star(RIDGE, 0.5 + 2 / 128))
    # W8A8: the FP8 ridge (1978.9 TFLOP/s dense) is twice BF16's, 1-byte weights and
    # activations: b* as BF16
    assert rows["w8a8"].b_star == pytest.approx(_b_star(1978.9e12 / BW, 1, a=1))
    # FP8 cache: half the bytes a token, twice the ceiling
    assert rows["kv_fp8"].kv == L3_KV // 2
    assert rows["kv_fp8"].ceiling == pytest.approx(2 * BW / (CTX * L3_KV))
    # MQA: one KV head of 128: 16 KiB a token; K and V projections shrink to 128 columns
    assert rows["mqa"].kv == 2 * 32 * 1 * 128 * 2
    assert rows["mqa"].weights == 2 * (L3_PARAMS - 32 * 4096 * 2 * (1024 - 128))
    # Mixtral-8x7B in BF16 is 93.4 GB: above 0.9 x 85.5 GB, nothing fits
    assert rows["moe"].weights == pytest.approx(93.4e9, rel=1e-3)
    assert rows["moe"].b_max == 0
    # speculative decoding, draft 4 at acceptance 0.8: 5 rows a sequence, (1 - 0.8^5) / 0.2
    assert rows["speculative"].b_star == pytest.approx(base.b_star / 5)
    assert rows["speculative"].ceiling == pytest.approx(base.ceiling * (1 - 0.8**5) / 0.2)
    for key in ("flash_decoding", "paged"):
        assert rows[key].weights == base.weights and rows[key].b_max == base.b_max


def test_table_marks_unchanged_cells(rows):
    table = levers_table(list(rows.values()))
    first, kv = table[0], table[3]
    # decimal units (chapter 2): 131,072 bytes a token = 131.1 kB, FP8 half of it
    assert first["$m_w$"] == "16.06 GB" and first["$m_{kv}$"] == "131.1 kB"
    assert kv["$m_w$"] == "不变" and kv["$m_{kv}$"] == "65.5 kB"
    assert kv["吞吐天花板 [token/s]"] == f"{2 * BW / (CTX * L3_KV):.0f}"  # 12480
    assert table[2]["$b^{*}$"] == "不变"  # W8A8
    # Mixtral is another model: its cache (32 layers x 8 KV heads x 128 x 2 x 2 bytes = 131,072,
    # as Llama-3-8B's) is written out, and 93.4 GB of weights leave no room for a sequence
    moe = table[5]
    assert moe["$m_{kv}$"] == "131.1 kB"
    assert moe["吞吐天花板 [token/s]"] == f"{BW / (CTX * L3_KV):.0f}"  # 6240, as the baseline's
    assert moe["$m_w$"] == "93.41 GB" and moe["$b_{\\max}$"] == "放不下"


def test_words_follow_the_numbers():
    n = dict(wall3=111, bstar3=321.9, wallh3=200, bstar3_h200=218.7, fits_int4=80,
             bstar_int4=83.0, fits_w8a8=125, bstar_w8a8=321.9, kv_fits_h200=442, mx_h100=3,
             gqa_past=0, ans_q1h=113, bstar2=323.0, ans_q2=83.3, ans_q2w=90, ans_q3i=300.0,
             ridge=295.3)  # fmt: skip
    w = batch_words(n)
    assert w["h200_wall_text"] == "墙已到它的 91%，与 ridge point 相当接近"  # 200 / 218.7
    assert w["cross_int4"] == "仍不到" and w["q2_text"] == "已超过" and w["q3_text"] == "已高于"
    assert w["mx_h100_text"] == "只放得下 3 条"
    assert w["gqa_text"] == "三种形状的墙都还没有越过"
    flat = sweep_words({"flat": True, "flat_batch": 4, "flat_spread": 1.1, "flat_over_model": 1.0,
                        "within": False, "rise": 3.0}, 4)  # fmt: skip
    assert flat["cpu_within"] == "不在"
    assert flat["cpu_flat_cause"] == "平坦段与按带宽算的下界相差不大"
    assert flat["cpu_shape"].startswith("先平、后升")
