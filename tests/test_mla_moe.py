"""MLA, fine-grained MoE and expert parallelism against hand counts from the published shapes.

Sources: DeepSeek-V3's config.json (roofline_book/llm/data/configs/deepseek-v3.json: hidden 7168,
61 layers, 128 heads, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128,
256 routed experts of width 2048, top-8, 1 shared, first 3 layers dense of width 18432);
FlashMLA's benchmark (deepseek-ai/FlashMLA tests/test_flash_mla.py: FLOPs 2 s_q s_k h_q (576 +
512) per sequence, bytes the cache once at 576 values per key plus q and the output) and its
analysis of absorbed decode (intensity about h_q s_q (d_k + d_v) / d_k per byte of BF16 cache);
DeepSeek-V3's FP8 checkpoint (README_WEIGHTS.md: one FP32 scale per 128 x 128 weight block).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from roofline_book import InvalidArgument, hardware
from roofline_book.distributed.parallel import Split, device_ops, dispatch_copies, infer
from roofline_book.llm.inference import (
    Precisions,
    decode_batch_to_ridge,
    layer_ops,
    model,
    step_entries,
    step_traffic,
    traffic_parts,
)
from roofline_book.ops import mla_attention

H, L, HEADS, RANK, ROPE, NOPE, V = 7168, 61, 128, 512, 64, 128, 128
E, K, F, DENSE_F = 256, 8, 2048, 18432


@pytest.fixture(scope="module")
def dsv3():
    return model("deepseek-v3")


def test_flashmla_flop_and_byte_convention() -> None:
    # FlashMLA counts 2 s_q s_k h_q (576 + 512) FLOPs and 2 bytes per cache value read once
    b, s_k = 128, 4096
    c = mla_attention(b, HEADS, 1, s_k, RANK + ROPE, RANK, kv_heads=1, value_in_key=True)
    softmax = b * HEADS * s_k * 5  # the package adds its softmax convention on top
    assert c.flops - softmax == 2 * 1 * s_k * HEADS * (576 + 512) * b
    assert c.bytes_read == b * 2 * (s_k * 576 + HEADS * 576)
    assert c.bytes_written == b * 2 * HEADS * 512


def test_absorbed_decode_intensity_is_about_h_q_times_width_ratio(dsv3) -> None:
    # attention data-parallel (tp 1), BF16 latent cache, a long cache: h (576 + 512) / 576
    split = Split(tp=1, ep=8)
    ops = dict(device_ops(dsv3, split, 8 * 32, 1, 32768, Precisions()))
    (row,) = [c for name, c in ops.items() if name.startswith("attention (MLA, absorbed)")]
    target = HEADS * (576 + 512) / 576  # 241.8
    assert abs(row.intensity / target - 1) < 0.10
    # two query tokens per step (MTP's verification) double it
    two = {op.id: op.cost for op in layer_ops(dsv3, 32, 2, 32768)}["attention"].intensity
    assert abs(two / (2 * target) - 1) < 0.10


def test_tp_divides_the_absorbed_intensity(dsv3) -> None:
    # heads split over 8 ranks, each reads the whole latent cache: about 1/8 of the FLOPs per byte
    one = dict(device_ops(dsv3, Split(tp=1), 32, 1, 32768))
    eight = dict(device_ops(dsv3, Split(tp=8), 32, 1, 32768))
    key = next(k for k in one if k.startswith("attention (MLA"))
    assert 7.5 < one[key].intensity / eight[key].intensity < 8.5


def test_kv_cache_write_holds_the_latent_and_the_rope_key(dsv3) -> None:
    write = {op.id: op.cost for op in layer_ops(dsv3, 4, 1, 100)}["kv_cache_write"]
    assert write.bytes_written == 4 * (RANK + ROPE) * 2


def test_prefill_runs_expanded(dsv3) -> None:
    ops = {op.id: op for op in layer_ops(dsv3, 1, 4096, 4096)}
    assert ops["attention"].name == "attention (MLA, expanded)"
    # kv_b_proj up-projects every key: 2 x 4096 keys x 512 x 128 x (128 + 128) FLOPs
    assert ops["kv_up"].cost.flops == 2 * 4096 * RANK * HEADS * (NOPE + V)


def test_dense_first_layers_and_shared_expert(dsv3) -> None:
    entries = {e.key: e for e in step_entries(dsv3, 1, 1, 4096)}
    assert entries["mlp_up"].layers == 3 and entries["experts_up"].layers == 58
    # one token: 3 dense MLPs of 3 x 7168 x 18432 and 58 shared experts of 3 x 7168 x 2048
    assert entries["mlp_up"].cost.flops + entries["mlp_down"].cost.flops == 3 * 2 * 3 * H * DENSE_F
    shared = entries["shared_expert_up"].cost.flops + entries["shared_expert_down"].cost.flops
    assert shared == 58 * 2 * 3 * H * F


def test_one_token_reads_its_eight_experts(dsv3) -> None:
    # BF16: 58 MoE layers x 8 experts x 3 x 7168 x 2048 weights x 2 bytes
    parts = traffic_parts(dsv3, 1, 1, 4096)
    assert parts.experts == 58 * 8 * 3 * H * F * 2
    assert parts.total == step_traffic(dsv3, 1, 1, 4096)


def test_fp8_block_scales() -> None:
    # one FP32 scale per 128 x 128 block: 7168 x 2048 weights, 896 blocks
    p = Precisions(weights="fp8", activations="fp8", weight_block=128)
    assert p.weight_bytes(H * F) == H * F + (H * F // (128 * 128)) * 4
    with pytest.raises(InvalidArgument, match="weight_block"):
        Precisions(weight_block=128)  # BF16 weights carry no block scales


def test_expert_gemms_reach_the_ridge_at_the_same_batch_in_fp8(dsv3) -> None:
    # ridge x bytes per weight / 2 rows per expert, times E / k: FP8 doubles the ridge and halves
    # the weight bytes (DeepSeek's FP8 weights and activations on H800)
    h800 = hardware("h800-sxm")
    bf16 = decode_batch_to_ridge(dsv3, h800)
    fp8 = decode_batch_to_ridge(dsv3, h800, Precisions(weights="fp8", activations="fp8"))
    # (B x k) @ (k x n) with n = 2 x 2048 (gate and up): B* = R w k n / (2 k n - R a (k + n))
    r, k, n = h800.ridge_point("bf16"), H, 2 * F
    rows = r * 2 * k * n / (2 * k * n - r * 2 * (k + n))
    assert bf16 == pytest.approx(rows * E / K)
    assert abs(fp8 / bf16 - 1) < 0.01


def test_dispatch_copies_by_hand(dsv3) -> None:
    # group-limited routing (config.json: n_group 8, topk_group 4): a token's 8 experts come
    # from 4 of 8 groups of 32. EP 8: one group on each GPU; another GPU is hit when its group
    # is chosen (1/2) and one of the 8 picks among the 128 candidates lands on its 32
    hit = 0.5 * (1 - math.comb(96, 8) / math.comb(128, 8))
    intra, inter = dispatch_copies(dsv3, 8)
    assert (intra, inter) == (pytest.approx(7 * hit), 0.0)
    # EP 32 over 4 nodes: two groups on each node, j of them chosen with C(2,j)C(6,4-j)/C(8,4)
    node = sum(
        math.comb(2, j) * math.comb(6, 4 - j) / math.comb(8, 4)
        * (1 - math.comb(128 - 32 * j, 8) / math.comb(128, 8))
        for j in (1, 2)
    )  # fmt: skip
    intra, inter = dispatch_copies(dsv3, 32)
    assert inter == pytest.approx(3 * node)
    # without groups: C(224, 8) / C(256, 8) misses a GPU of 32 experts
    ungrouped = dataclasses.replace(dsv3, expert_groups=1, groups_per_token=1)
    miss = math.comb(224, 8) / math.comb(256, 8)
    assert dispatch_copies(ungrouped, 8)[0] == pytest.approx(7 * (1 - miss))


def test_ep_beyond_tp_runs_attention_data_parallel(dsv3) -> None:
    split = Split(tp=1, ep=144)
    assert (split.devices, split.attention_dp, split.expert_shards) == (144, 144, 144)
    p = Precisions(weights="fp8", activations="fp8", weight_block=128)
    r = infer(dsv3, hardware("h800-sxm"), split, batch=144 * 32, context=4096, precisions=p)
    links = {c.link for c in r.decode.comms}
    assert links == {"nvlink+ib-ndr"}  # 18 nodes: NVLink inside, the NIC across
    # each GPU holds ceil(256 / 144) = 2 routed experts whole, not 256 / 144 of them
    two = Split(tp=1, ep=128)
    a = infer(dsv3, hardware("h800-sxm"), two, batch=128, precisions=p).weight_bytes_per_device
    b = infer(dsv3, hardware("h800-sxm"), split, batch=144, precisions=p).weight_bytes_per_device
    assert a == b
    with pytest.raises(InvalidArgument, match="ep"):
        Split(tp=2, ep=3)
    with pytest.raises(InvalidArgument, match="ep"):
        Split(tp=1, ep=512).check(dsv3)
