"""Chapter 10 (profiling), as the built book shows it: the stable quantities, by hand.

Names, shapes, call counts, FLOPs and model bytes do not change from run to run;
times do, so for them only the verdicts' vocabulary is checked here.
"""

import json

import pytest
from conftest import BUILD, ROOT

pytestmark = pytest.mark.site  # reads the built book's glued values

CH = "chapters/11-profiling"

# The block: hidden 512, 8 heads, FFN 1408, batch 2, sequence 256, FP32.
H, HEADS, F, B, S = 512, 8, 1408, 2, 256
T = B * S  # 512 tokens
LINEARS = {"qkv": (H, 3 * H), "o": (H, H), "gate": (H, F), "up": (H, F), "down": (F, H)}
P_PROJ = sum(i * o for i, o in LINEARS.values())  # 786,432 + 262,144 + 2 * 720,896 + 720,896
PARAMS = P_PROJ + 2 * H  # and the two RMSNorm weights


def _mm_shapes():
    """Every (A, B) shape of the step's matmuls: forward Y = X W^T, dX = dY W, dW = dY^T X."""
    shapes = []
    for i, o in LINEARS.values():
        shapes += [((T, i), (i, o)), ((T, o), (o, i)), ((o, T), (T, i))]
    return shapes


def test_block_sizes():
    assert P_PROJ == 3_211_264 and PARAMS == 3_212_288


def test_matmul_counts_and_flops(glued):
    g = glued(CH)
    assert (g["hidden"], g["heads"], g["ffn"], g["batch"], g["seq"]) == (H, HEADS, F, B, S)
    assert g["n_linears"] == 5
    assert g["mm_calls"] == len(_mm_shapes()) == 15
    assert g["mm_shapes"] == len(set(_mm_shapes())) == 7  # T = H makes several coincide
    flops = sum(2 * a[0] * a[1] * b[1] for a, b in _mm_shapes())
    assert flops == 6 * T * P_PROJ == 9_865_003_008
    assert g["mm_flops_g"] == pytest.approx(flops / 1e9)
    assert g["six_t_p_g"] == pytest.approx(6 * T * P_PROJ / 1e9)
    assert g["mm_flops_match"] == "相等"
    assert g["profiler_agrees"] == "全部一致"
    assert g["tokens"] == T and g["proj_params_m"] == pytest.approx(P_PROJ / 1e6)


def test_attention_flops_and_profiler_blind_spot(glued):
    g = glued(CH)
    assert g["sdpa_name"] == "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert g["sdpa_profiler_flops"] == 0  # torch 2.13 counts none for CPU SDPA
    pairs = S * (S + 1) // 2  # causal: 32,896 of the 65,536 pairs per head
    assert g["sdpa_model_flops_m"] == pytest.approx(B * HEADS * pairs * (4 * 64 + 5) / 1e6)


def test_threads_and_checks(glued):
    g = glued(CH)
    assert g["profile_threads"] == 1
    run = json.loads((BUILD / "bench" / "cpu-quick.json").read_text("utf-8"))
    assert g["roof_threads"] == run["device"]["threads"]
    verdicts = {"成立", "不成立", "无法判定"}
    for key in ("mm_share_verdict", "mm_rank_verdict", "explained_verdict"):
        assert g[key] in verdicts
    assert (g["margin_pct"], g["rank_margin"]) == (pytest.approx(10.0), pytest.approx(1.5))
    assert g["rows"] > g["mm_shapes"]
    # the sweep: batch 1, 2 and 32 at sequence 32
    assert (g["sweep_first"], g["sweep_second"], g["sweep_last"]) == (32, 64, 1024)
    scaling = {"固定开销主导", "随工作量成比例增长", "介于两者之间"}
    assert {g["verdict_small"], g["verdict_large"]} <= scaling
    assert (g["growth_low"], g["growth_high"]) == (0.25, 0.75)


def test_chapter_10_answers(glued):
    g = glued(CH)
    assert g["ans_q1_calls"] == 15
    assert g["ans_q1_gflop"] == pytest.approx(6 * T * P_PROJ / 1e9)  # 9.865
    # AdamW per parameter, by the aten ops' models: mul_ 8, lerp_ 12, mul_ 8, addcmul_ 16,
    # sqrt 8, div 8, add_ 8, addcdiv_ 16 bytes; 1 + 3 + 1 + 3 + 1 + 1 + 1 + 3 FLOPs
    assert g["ans_q2_params_m"] == pytest.approx(PARAMS / 1e6)
    assert g["ans_q2_bytes_per_param"] == pytest.approx(84)
    assert g["ans_q2_flops_per_param"] == pytest.approx(14)
    assert g["ans_q2_mb"] == pytest.approx(84 * PARAMS / 1e6)  # 269.8 MB
    # QKV forward in BF16 on H100 SXM: 2 * 512 * 512 * 1536 FLOPs over
    # 2 * (512 * 512 + 512 * 1536 + 512 * 1536) bytes
    flops, nbytes = 2 * T * H * 3 * H, 2 * (T * H + H * 3 * H + T * 3 * H)
    assert g["ans_q3_I"] == pytest.approx(flops / nbytes)  # 219.4
    # H100 SXM's BF16 ridge: the whitepaper's dense 989.4 TFLOP/s / 3.35 TB/s = 295.3
    assert g["ans_q3_ridge"] == pytest.approx(989.4 / 3.35)
    assert g["ans_q3_bound"] == "HBM"
    assert g["ans_q3_us"] == pytest.approx(nbytes / 3.35e12 * 1e6)  # 1.10 us


def test_the_page_shows_three_figures_and_the_table():
    page = (BUILD / "html" / f"{CH}.html").read_text("utf-8")
    for name in ("fig-10-roofline", "fig-10-timeline", "fig-10-scaling", "tbl-10-ops"):
        assert f'id="{name}"' in page, name
    assert (ROOT / "docs" / f"{CH}.md").exists()
