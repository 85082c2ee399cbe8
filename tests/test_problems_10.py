"""Chapter 11 (profiling), as the built book shows it: the stable quantities, by hand.

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
    scaling = {"与 batch 无关的时间主导", "随工作量成比例增长", "介于两者之间"}
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


def test_chapter_11_published_gpu_figures(glued):
    """The GPU speeds the chapter reads a profile against: published rows, by hand."""
    g = glued(CH)
    h100_bf16, h100_bw, a100_bw = 989.4e12, 3.35e12, 2.039e12  # datasheets (dense BF16; HBM)
    # cuBLAS BF16 square GEMM on H100 (fast.cu README): 795 TFLOP/s at 8192, 716 at 4096
    assert g["pub_gemm_eta"] == pytest.approx(795e12 / h100_bf16)  # 0.80
    assert g["ans_q5_tf4k"] == pytest.approx(716)
    assert g["ans_q5_eta4k"] == pytest.approx(716e12 / h100_bf16)  # 0.72
    assert g["ans_q5_us4k"] == pytest.approx(2 * 4096**3 / h100_bf16 * 1e6)  # 138.9 us
    # STREAM copy on H100 2.90 TB/s (Azure AI benchmarking guide); on A100 1.61 TB/s
    assert g["pub_copy_eta"] == pytest.approx(2.90e12 / h100_bw)  # 0.87
    assert g["a100_copy_tb"] == pytest.approx(1.61)
    assert g["a100_bw_tb"] == pytest.approx(a100_bw / 1e12)
    # FA3 d = 128, l = 16384: 648 TFLOP/s; the package adds 5 softmax FLOPs per score to 512
    assert g["pub_fa_eta"] == pytest.approx(648e12 / h100_bf16 * 517 / 512)
    # gpt-fast, Llama-2-7B BF16 on A100, batch 1: 104.9 tok/s. Each token reads the weights
    # once: 6,738,415,616 parameters (32000 x 4096 embedding, 32 layers of 4 x 4096^2 +
    # 3 x 4096 x 11008 + 2 x 4096 norms, a final norm and a 32000 x 4096 head), 2 bytes each;
    # the embedding is only indexed, so about (6.738e9 - 32000 * 4096) * 2 * 104.9 = 1.386 TB/s
    params = 32000 * 4096 * 2 + 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 4096
    assert params == 6_738_415_616
    assert g["gf_tok"] == pytest.approx(104.9)
    assert g["ans_q4_params_b"] == pytest.approx(params / 1e9)
    streamed = (params - 32000 * 4096) * 2 * 104.9
    assert g["gf_tb"] == pytest.approx(streamed / 1e12, rel=0.01)
    assert g["ans_q4_tb"] == g["gf_tb"]
    assert g["gf_eta"] == pytest.approx(g["gf_tb"] * 1e12 / a100_bw)  # 0.68
    assert g["ans_q4_eta"] == g["gf_eta"]
    assert g["gf_of_copy"] == pytest.approx(g["gf_tb"] / 1.61)  # 0.87
    assert g["ans_q4_est_tb"] == pytest.approx(2 * 7e9 * 104.9 / 1e12)  # the pencil estimate


def test_the_page_shows_three_figures_and_the_table():
    page = (BUILD / "html" / f"{CH}.html").read_text("utf-8")
    for name in ("fig-10-roofline", "fig-10-timeline", "fig-10-scaling", "tbl-10-ops"):
        assert f'id="{name}"' in page, name
    assert (ROOT / "docs" / f"{CH}.md").exists()
