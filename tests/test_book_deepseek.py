"""roofline_book.book.deepseek, recomputed by hand from published figures.

DeepSeek-V3's config.json: hidden 7168, 61 layers (the first 3 dense, MLP width 18432), 128
heads, q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128,
v_head_dim 128, 256 routed experts of width 2048, top-8 from 4 of 8 groups, vocab 129280;
quantization_config FP8 with 128 x 128 weight blocks (one FP32 scale each). H800 SXM: dense
989.4 TFLOP/s BF16, 1978.9 FP8, 3.35 TB/s HBM, NVLink 200 GB/s each way, one 400 Gb/s
InfiniBand NIC (50 GB/s) a GPU. DeepSeek's deployment (open-infra-index, day 6): prefill EP 32,
decode EP 144, 8 GPUs a node, decode context 4,989, 56.3% of prefill input from cache.
"""

from math import comb, prod

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import InvalidArgument, gemm, hardware  # noqa: E402
from roofline_book.book import deepseek as ds_book  # noqa: E402
from roofline_book.devices.catalog import adhoc, network  # noqa: E402
from roofline_book.llm.inference import Precisions, model  # noqa: E402
from roofline_book.measure import published  # noqa: E402

DS, H800 = model("deepseek-v3"), hardware("h800-sxm")
P16, P8, HBM, NIC, NVLINK = 989.4e12, 1978.9e12, 3.35e12, 50e9, 200e9
R16, R8 = P16 / HBM, P8 / HBM  # 295.3 and 590.7 FLOP/byte
H, E, K, FF, MOE_LAYERS = 7168, 256, 8, 2048, 61 - 3
D_K, D_V = 512 + 64, 512  # absorbed: the latent and the RoPE key; the value is the latent
PREFILL = dict(ep=32, per_node=8, batch_per_gpu=4, prompt=1024, cache_hit=0.563)
DECODE = dict(ep=144, per_node=8, context=4989)


def _bstar(ridge: float, w: float, a: float) -> float:
    """The experts' up GEMM (K = 7168, N = 2 x 2048) at the ridge, R w K N / (2 K N - R a (K + N)),
    times E / e = 32 (each expert gets b e / E rows)."""
    k, n = H, 2 * FF
    return ridge * w * k * n / (2 * k * n - ridge * a * (k + n)) * E / K


# FP8 weights with one 4-byte scale per 128 x 128 block: 56 x 32 blocks of 7168 x 4096
W_FP8 = (H * 2 * FF + 4 * (H // 128) * (2 * FF // 128)) / (H * 2 * FF)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_absorbed_intensity_formula():
    # h n_q (d_k + d_v) / d_k: 128 x 1088 / 576 = 241.8; TP 8 leaves 16 heads: 30.2
    assert ds_book.absorbed_mla_intensity(128, 1, D_K, D_V) == pytest.approx(241.78, abs=0.01)
    assert ds_book.absorbed_mla_intensity(16, 1, D_K, D_V) == pytest.approx(16 * 1088 / 576)
    assert ds_book.heads_to_ridge(R16, D_K, D_V) == pytest.approx(295.34 * 576 / 1088, rel=1e-4)


def test_shape_figures_are_the_published_config():
    f = ds_book.shape_figures(DS, H800, 4096)
    assert (f["layers"], f["dense_layers"], f["heads"], f["hidden"]) == (61, 3, 128, 7168)
    assert (f["experts"], f["top_k"], f["ffn"], f["dense_ffn"]) == (256, 8, 2048, 18432)
    assert (f["d_c"], f["d_r"], f["d_k"], f["d_v"], f["q_rank"]) == (512, 64, 576, 512, 1536)
    assert f["vocab"] == 129280 and f["context"] == 4096
    # the paper: 671B parameters in all, 37B activated a token
    assert f["ds_params"] == pytest.approx(6710, rel=2e-3)
    assert f["ds_active"] == pytest.approx(370, rel=0.02)
    assert (f["nvlink"], f["ridge"], f["ridge_fp8"]) == pytest.approx((200, R16, R8))


def test_non_mla_models_and_devices_without_links_are_refused():
    with pytest.raises(InvalidArgument, match="config"):
        ds_book.shape_figures(model("llama-3-8b"), H800, 4096)
    with pytest.raises(InvalidArgument, match="device"):
        ds_book.shape_figures(DS, adhoc("lone", 1e15, 3e12), 4096)


def test_cache_per_token():
    f = ds_book.mla_cache_figures(DS, model("llama-3-70b"), Precisions())
    mla, gqa = 61 * 576 * 2, 2 * 80 * 8 * 128 * 2  # L (d_c + d_r) s; 2 L g d s
    mha = 61 * 128 * (192 + 128) * 2  # every head its own K (128 + 64) and V (128)
    assert (f["kv_ds_kb"], f["kv_gqa_kb"]) == pytest.approx((70.272, 327.68))
    assert f["kv_ratio"] == pytest.approx(gqa / mla)
    assert (f["kv_mha_mb"], f["kv_mha_ratio"]) == pytest.approx((mha / 1e6, mha / mla))
    assert f["gqa_name"] == "Llama-3-70B" and f["gqa_params"] == pytest.approx(70.6, abs=0.1)


def test_mla_intensities():
    f = ds_book.mla_figures(DS, H800, 4096, Precisions())
    # a (query, key) pair and head: 2 (576 + 512) matrix FLOPs + 5 for the softmax = 2181.
    # One query: 4096 keys; bytes: the cache and the 128 queries (2 x 576 x (4096 + 128)) in,
    # 128 x 512 x 2 out. Two queries, causal: 4095 + 4096 pairs, q and out twice as large.
    assert f["mla_i1"] == pytest.approx(128 * 4096 * 2181 / (2 * 576 * 4224 + 128 * 1024))
    assert f["mla_i2"] == pytest.approx(128 * 8191 * 2181 / (2 * 576 * 4352 + 2 * 128 * 1024))
    assert (f["mla_f1"], f["mla_f2"]) == pytest.approx((128 * 1088 / 576, 256 * 1088 / 576))
    assert f["mla_ridge_hq"] == pytest.approx(R16 * 576 / 1088)
    assert (f["head_d"], f["head_v"]) == (128 + 64, 128)
    # q_a 7168 x 1536, q_b 1536 x 128 x 192, kv_a 7168 x 576, kv_b 512 x 128 x 256,
    # o 128 x 128 x 7168 = 187,105,280 a layer, 61 layers
    assert f["attn_b"] == pytest.approx(187_105_280 * 61 / 1e8)


def test_flashmla_points_and_allowed_rate():
    bw = published.row("flashmla-decode-bw-h800")
    flops = published.row("flashmla-decode-flops-h800-v2")
    # bandwidth row: batch 128, 16 heads, one query, 8192 keys: 2181 FLOPs a pair
    f_bw = 128 * 16 * 8192 * 2181
    b_bw = 2 * (128 * 8192 * 576 + 128 * 16 * 576) + 2 * 128 * 16 * 512
    x, y = ds_book.flashmla_point(bw)
    assert x == pytest.approx(f_bw / b_bw)
    assert y == pytest.approx(3000e9 * f_bw / b_bw / 1e12)  # 3000 GB/s as TFLOP/s
    x, y = ds_book.flashmla_point(flops)
    # 128 heads, two queries, 16384 keys, causal: 16383 + 16384 pairs a head
    f_v2 = 128 * 128 * 32767 * 2181
    b_v2 = 2 * (128 * 16384 * 576 + 128 * 2 * 128 * 576) + 2 * 128 * 2 * 128 * 512
    assert (x, y) == pytest.approx((f_v2 / b_v2, 660))
    # 2176 matrix FLOPs a pair bound the time at 989.4 TFLOP/s (the 2.4 GB cache takes less at
    # 3.35 TB/s), and FlashMLA counts those same 2176: the rate allowed is the peak
    assert ds_book.flashmla_allowed(flops, H800) == pytest.approx(P16)


def test_mla_roofline_figure_draws_what_it_is_given():
    big, small = gemm(4096, 4096, 4096), gemm(1, 4096, 4096)
    fig = ds_book.mla_roofline_figure(
        H800, [("big", big), ("small", small)], [(100.0, 330.0), (2000.0, 660.0)],
        offsets={}, title="MLA", label="measured",
    )  # fmt: skip
    ax = fig.axes[0]
    crosses = [c for c in ax.collections if c.get_label() == "measured"]
    assert crosses and crosses[0].get_offsets().tolist() == [[100.0, 330.0], [2000.0, 660.0]]
    dots = [tuple(c.get_offsets()[0]) for c in ax.collections if len(c.get_offsets()) == 1]
    # square BF16 GEMM: I = 2 n^3 / (3 n^2 x 2) = n / 3 = 1365.3, at the 989.4 TFLOP/s peak;
    # a GEMV: I = 2 x 4096^2 / (2 (4096^2 + 2 x 4096)) = 0.9995, on the HBM slope at 3.35 I
    i_small = 4096**2 / (4096**2 + 2 * 4096)
    assert dots[0] == pytest.approx((4096 / 3, 989.4))
    assert any(d == pytest.approx((i_small, 3.35 * i_small)) for d in dots)
    assert ax.get_title() == "MLA" and ax.get_ylim() == pytest.approx((10, 3000))


def test_expert_parallel_figures():
    f = ds_book.expert_figures(DS, H800, DS.checkpoint, context=4096, per_node=8,
                               prefill_ep=32, decode_ep=144)  # fmt: skip
    assert f["e_over_k"] == 32 and f["t_mid"] == 32
    # 32 tokens of 8 experts each: 256 (1 - (1 - 8/256)^32) experts touched
    assert f["e_mid"] == pytest.approx(256 * (1 - (1 - 8 / 256) ** 32))
    assert f["b_star"] == pytest.approx(_bstar(R8, W_FP8, 1))  # W8A8 at the FP8 ridge: 10,662
    # 10,662 rows spread over a node's 8 GPUs, EP 32 and EP 144: 1332.7, 333.2 and 74.04 a GPU
    assert (f["per_gpu_node"], f["per_gpu_pre"], f["per_gpu_dec"]) == pytest.approx(
        (1332.7, 333.2, 74.04), rel=1e-3
    )
    assert (f["nodes_pre"], f["nodes_dec"]) == (4, 18)
    # EP 32 holds ceil(256/32) = 8 routed experts a layer, EP 144 ceil(256/144) = 2: 6 experts
    # of 3 x 7168 x 2048 FP8 weights plus 3 x 56 x 16 four-byte scales, in 58 MoE layers
    expert = 3 * (7168 * 2048 + 56 * 16 * 4)
    assert f["w_gpu_pre"] - f["w_gpu_dec"] == pytest.approx(58 * 6 * expert / 1e9)
    assert f["kv_seq_mb"] == pytest.approx(61 * 576 * 2 * 4096 / 1e6)  # the whole cache a GPU


def test_fp8_figures():
    f = ds_book.fp8_figures(DS, H800, DS.checkpoint)
    assert f["fp8_gain"] == pytest.approx(P8 / P16)
    assert f["b_star_bf16"] == pytest.approx(_bstar(R16, 2, 2))
    assert f["b_star_w8a16"] == pytest.approx(_bstar(R16, 1, 2))  # 1-byte weights, BF16 ridge
    # one FP32 scale per 128 x 128 weights: 4 / 16384; the BF16 embeddings (2 x 129280 x 7168)
    # carry none, so a little less
    assert f["scale_share"] == pytest.approx(4 / 16384, rel=0.01)
    assert f["scale_share"] < 4 / 16384


def _copies():
    # group-limited routing, 4 of 8 groups of 32 experts, then 8 of their 128. EP 32: 4 nodes
    # of 64 experts (two groups each); a node is hit when j of its groups are chosen and a pick
    # lands in them. EP 144: 18 nodes of 14.2 experts inside one group.
    pre = 3 * sum(
        comb(2, j) * comb(6, 4 - j) / comb(8, 4) * (1 - comb(128 - 32 * j, 8) / comb(128, 8))
        for j in (1, 2)
    )
    m = 256 * 8 / 144
    dec = 17 * 0.5 * (1 - prod((128 - m - i) / (128 - i) for i in range(8)))
    return pre, dec


def test_all_to_all_figures():
    f = ds_book.all_to_all_figures(DS, H800, network("ib-ndr"), DS.checkpoint,
                                   prefill=PREFILL, decode=DECODE, per_gpu=75)  # fmt: skip
    assert f["nic_gbit"] == pytest.approx(400)
    assert (f["i_nic"], f["i_nvl"]) == pytest.approx((P8 / NIC, P8 / NVLINK))
    pre, dec = _copies()
    assert (f["copies_pre"], f["copies_dec"]) == pytest.approx((pre, dec))
    assert f["copies_ratio"] == pytest.approx(dec / pre)
    # decode: 75 sequences a GPU, FP8 dispatch and BF16 combine (1 + 2 bytes) of 7168 a copy,
    # 58 MoE layers over the NIC
    assert f["comm_ms_decode"] == pytest.approx(75 * dec * H * 3 * MOE_LAYERS / NIC * 1e3)
    # prefill: 4 prompts of 1024 tokens a GPU, over the NIC likewise
    assert f["comm_ms_prefill"] == pytest.approx(4096 * pre * H * 3 * MOE_LAYERS / NIC * 1e3)
    assert f["comm_ms_prefill"] > f["dev_ms_prefill"]  # the NIC sets the prefill bound
    assert f["i_sent_prefill"] < f["i_nic"] and f["i_nic_only_prefill"] > f["i_sent_prefill"]
    assert (f["tokens_pre"], f["per_gpu"], f["ctx_dec"]) == (4096, 75, 4989)


def test_mtp_figures():
    f = ds_book.mtp_figures(DS, H800, DS.checkpoint, acceptance=(0.85, 0.90), per_gpu=75,
                            ep=144, context=4989)  # fmt: skip
    assert (f["tok_low"], f["tok_high"]) == pytest.approx((1.85, 1.90))  # 1 + a
    assert (f["acc_low"], f["acc_high"]) == (0.85, 0.90)
    for end in ("low", "high"):
        # drafting and verifying cost time: below 1 + a; the group's batch costs more still
        assert 1 < f[f"mtp_group_{end}"] < f[f"mtp_{end}"] < f[f"tok_{end}"]


def test_closest_to_roof():
    # DeepGEMM M = 64 rows: FP8 in, BF16 out, I = 2 m n k / (m k + k n + 2 m n); the roof
    # min(1978.9, 3.35 I) TFLOP/s. The highest share is at N = 7168, K = 16384: the published
    # 336 TFLOP/s of a 421.7 TFLOP/s roof (I = 125.9), 0.797
    row = published.row("deepgemm-fp8-h800-m64")
    shares = {}
    for (n, k), v in zip(row.sweep[1], row.values, strict=True):
        i = 2 * 64 * n * k / (64 * k + k * n + 2 * 64 * n)
        shares[(n, k)] = v / min(1978.9, 3.35 * i)
    best = ds_book.closest_to_roof(row)
    assert tuple(best.config["nk"]) == max(shares, key=shares.__getitem__) == (7168, 16384)
    assert best.eta() == pytest.approx(max(shares.values())) == pytest.approx(0.7967, rel=1e-3)


def test_node_token_bounds():
    b = ds_book.node_token_bounds(DS, H800, DS.checkpoint, prefill=PREFILL, decode=DECODE)
    # prefill is bound by the NIC: a GPU sends each token 2.2 copies of 3 x 7168 bytes in 58
    # layers at 50 GB/s, 8 GPUs a node, and 56.3% of input tokens need no compute
    pre, _ = _copies()
    assert b.prefill == pytest.approx(8 * NIC / (pre * H * 3 * MOE_LAYERS) / (1 - 0.563))
    # decode: the batch fills the memory on each of the 144 GPUs alike; reading the cache
    # alone (61 x 576 x 2 bytes x 4989 tokens a sequence) at 3.35 TB/s bounds a step below,
    # with two tokens a step; the published 14.8k tokens/s a node is under the bound
    assert b.decode_batch % 144 == 0 and b.decode_batch > 0
    per_gpu = b.decode_batch // 144
    cache_s = per_gpu * 61 * 576 * 2 * 4989 / HBM
    assert 14_800 < b.decode < 8 * per_gpu * 2 / cache_s


def test_bounds_table_decimals_and_ratio():
    rows = [("a", 660, 989.4, "TFLOP/s"), ("b", 73.7, 334.2, "千 token/s")]
    cells = _cells(ds_book.bounds_table(rows).data)
    assert cells[0] == ["实测", "公布", "包的上限", "单位", "实测 / 上限"]
    assert cells[1] == ["a", "660", "989", "TFLOP/s", "67%"]  # 660 / 989.4 = 0.667
    assert cells[2] == ["b", "73.7", "334.2", "千 token/s", "22%"]  # 73.7 / 334.2 = 0.221
    cells = _cells(ds_book.bounds_table(rows, decimals={"TFLOP/s": 2}).data)
    assert cells[1][1:3] == ["660.00", "989.40"] and cells[2][1:3] == ["74", "334"]


def _cells(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if not line.startswith("|:")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]
