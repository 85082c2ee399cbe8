"""The DeepSeek-V3 chapter's diagrams, against hand arithmetic from the published shapes.

DeepSeek-V3's config.json (deepseek-ai/DeepSeek-V3): hidden_size 7168, 61 layers, 128 heads,
kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, q_lora_rank 1536,
n_routed_experts 256, num_experts_per_tok 8, n_shared_experts 1, moe_intermediate_size 2048,
first_k_dense_replace 3, intermediate_size 18432, vocab_size 129280. H800 SXM: 989.4 TFLOP/s
dense BF16, 3.35 TB/s HBM, NVLink 400 GB/s both directions; the NIC 400 Gb/s InfiniBand.
"""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

pytest.importorskip("noto_cjk_sans_otc", reason="the [zh] extra (noto-cjk-sans-otc)")

from test_diagrams import legible, words  # noqa: E402

from roofline_book import InvalidArgument  # noqa: E402
from roofline_book.llm.inference import adhoc_model  # noqa: E402
from roofline_book.present.diagrams import deepseek  # noqa: E402

pytestmark = pytest.mark.usefixtures("zh")  # the book's Chinese font, no font warning

DS = adhoc_model(
    "DeepSeek-V3", hidden=7168, layers=61, heads=128, kv_heads=128, ffn=2048, vocab=129280,
    head_dim=192, v_head_dim=128, kv_lora_rank=512, q_lora_rank=1536, rope_head_dim=64,
    experts=256, experts_per_token=8, shared_experts=1, dense_layers=3, dense_ffn=18432,
    expert_groups=8, groups_per_token=4, max_context=163840, mtp_layers=1,
)  # fmt: skip


def test_mla_absorbed_rows_and_intensities():
    fig = deepseek.mla_absorbed(DS)
    text = words(fig)
    # Llama-3-70B: 64 query heads, 8 KV heads of 128; a row is K and V: 2 x 8 x 128 x 2 B
    assert "64 个 query head，每 8 个一组" in text
    assert "8 个 KV head，每行 4096 B" in text
    # MLA: one latent row of 512 + 64 BF16 elements: 576 x 2 = 1152 B
    assert "一行 (512 + 64) × 2 B = 1152 B" in text
    # ridge 989.4e12 / 3.35e12 = 295.3
    # GQA, g = 8: 8 x (4 x 128 + 5) / (2 x 128 x 2) = 8.08 FLOP/byte
    assert "\n= 8 < $I^*$ = 295" in text
    # MLA, one query, 4096 keys: 128 x 4096 x (2 x 576 + 2 x 512 + 5) FLOPs over
    # 2 x 576 x (4096 + 128) B read and 128 x 512 x 2 B written: 1143472128 / 4997120 = 228.8
    assert "\n= 229 < $I^*$ = 295" in text
    # two queries (MTP): 4095 + 4096 causal pairs a head, 128 x 8191 x 2181 FLOPs over
    # 2 x 576 x (4096 + 256) + 2 x 128 x 512 x 2 B = 2286665088 / 5275648 = 433.4
    assert "\n= 433 > $I^*$ = 295" in text
    legible(fig)


def test_the_catalog_model_is_the_default():
    # the catalog's DeepSeek-V3 (its config.json) draws the same rows as the shapes above
    assert words(deepseek.mla_absorbed()) == words(deepseek.mla_absorbed(DS))
    assert words(deepseek.ep_dispatch()) == words(deepseek.ep_dispatch(DS))


def test_mla_absorbed_follows_the_device():
    # A100 SXM: 312 TFLOP/s over 2.039 TB/s = 153: one query's 229 is past it
    text = words(deepseek.mla_absorbed(DS, device="a100-sxm"))
    assert "\n= 229 > $I^*$ = 153" in text


def test_mla_absorbed_refuses_models_of_the_wrong_kind():
    with pytest.raises(InvalidArgument, match="MLA"):
        deepseek.mla_absorbed("llama-3-70b")
    with pytest.raises(InvalidArgument, match="GQA"):
        deepseek.mla_absorbed(DS, gqa="llama-2-7b")  # MHA: a KV head for every query head


def test_ep_dispatch_bytes_and_links():
    fig = deepseek.ep_dispatch(DS, ep=144)
    text = words(fig)
    # 144 GPUs, 8 a node: 18 nodes; 256 experts over 144 GPUs: 2 on the busiest
    assert "EP 144：144 块 GPU，18 个节点" in text
    assert "2 个路由专家 + 共享" in text
    # a token goes to 8 experts: 8 x 7168 FP8 bytes = 57344 B out, BF16 back: 114688 B
    assert "dispatch 至多送出 8 × 7168 × 1 B = 57 kB，combine 取回 115 kB" in text
    # NVLink 400 GB/s both directions = 200 each way; 400 Gb/s NIC = 50 GB/s
    assert "200 GB/s（每个方向）" in text
    assert "50 GB/s（每个方向）" in text
    legible(fig)


def test_ep_dispatch_follows_ep():
    # prefill's EP 32: 4 nodes, 256 / 32 = 8 experts a GPU
    text = words(deepseek.ep_dispatch(DS, ep=32))
    assert "EP 32：32 块 GPU，4 个节点" in text
    assert "8 个路由专家 + 共享" in text


def test_ep_dispatch_refuses_a_dense_model():
    with pytest.raises(InvalidArgument, match="dense"):
        deepseek.ep_dispatch("llama-3-70b")


def test_deployment_units_nodes_experts_and_copies():
    fig = deepseek.deployment_units(DS)
    text = words(fig)
    # config.json: a token picks 8 experts within 4 of 8 groups of 32. EP 32: 4 nodes of 64
    # experts (two groups): 3 x sum_j C(2,j) C(6,4-j) / C(8,4) x (1 - C(128 - 32j, 8) / C(128, 8))
    # = 2.20 other nodes; 256 / 32 = 8 experts a GPU
    assert "4 个节点；每块 GPU 存 8 个路由专家与共享专家；一个 token 经网卡送 2.2 份" in text
    # EP 144: 18 nodes of 256 x 8 / 144 = 14.2 experts in one group: 17 x 1/2 x (1 - prod over
    # i < 8 of (128 - 14.2 - i) / (128 - i)) = 5.28; ceil(256 / 144) = 2 experts
    assert "18 个节点；每块 GPU 存 2 个路由专家与共享专家；一个 token 经网卡送 5.3 份" in text
    # BF16 (no checkpoint format given): R = 989.4 / 3.35 = 295.3; the up GEMM (7168 x 4096) at
    # the ridge: R 2 K N / (2 K N - 2 R (K + N)) = 333.1 rows; x 256 / 8 = 10659 tokens:
    # 333 a GPU over 32, 74 over 144
    assert "每块 GPU 要 333 个 token" in text
    assert "每块 GPU 要 74 个 token" in text
    legible(fig)
