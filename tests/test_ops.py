"""The operator models: FLOPs and bytes written out by hand."""

import pytest

from roofline_book import ops
from roofline_book.ops import Cost, adamw, add, attention, attention_backward, gemm, rmsnorm


def test_gemm_square_4096_bf16():
    c = gemm(4096, 4096, 4096, "bf16")
    assert c.flops == 137_438_953_472  # 2 * 4096**3
    assert c.bytes_read == 2 * 2 * 4096**2  # A and B, 2 bytes each
    assert c.bytes_written == 2 * 4096**2
    assert c.intensity == pytest.approx(2 * 4096 / (3 * 2))  # 2n / (3s) = 1365.33


@pytest.mark.parametrize("n", [1, 7, 64, 4096])
@pytest.mark.parametrize("dtype,s", [("fp32", 4), ("bf16", 2), ("fp8", 1)])
def test_square_gemm_intensity_is_2n_over_3s(n, dtype, s):
    assert gemm(n, n, n, dtype).intensity == pytest.approx(2 * n / (3 * s))


def test_gemm_rectangular_and_batched():
    c = gemm(32, 128, 128, "bf16")
    assert c.flops == 2 * 32 * 128 * 128
    assert c.bytes == 2 * (32 * 128 + 128 * 128 + 32 * 128)
    b = gemm(32, 128, 128, "bf16", batch=3)
    assert (b.flops, b.bytes) == (3 * c.flops, 3 * c.bytes)
    mixed = gemm(2, 3, 4, "fp8", out_dtype="bf16")
    assert (mixed.bytes_read, mixed.bytes_written) == (6 + 12, 2 * 8)


def test_small_gemm_is_far_less_intense_than_large():
    # 32x128x128 in BF16: 1,048,576 FLOP over 49,152 bytes, about 21 FLOP/byte.
    assert gemm(32, 128, 128).intensity == pytest.approx(1_048_576 / 49_152)
    assert gemm(4096, 4096, 4096).intensity / gemm(32, 128, 128).intensity > 60


def test_add_six_bytes_one_flop_per_bf16_element():
    c = add(1_000_000, "bf16")
    assert (c.flops, c.bytes_read, c.bytes_written) == (1_000_000, 4_000_000, 2_000_000)
    assert c.intensity == pytest.approx(1 / 6)
    assert add(10, "fp32").intensity == pytest.approx(1 / 12)


def test_elementwise_family():
    assert ops.relu(100, "fp32").bytes == 800
    assert ops.gelu(100, "fp32").flops == 900
    assert ops.swiglu(100, "bf16").bytes == 600
    assert ops.elementwise(5, "fp16", inputs=3, outputs=0, flops_per_element=0).bytes == 30


def test_rmsnorm_reads_weight_once():
    c = rmsnorm(10, 8, "bf16", weight_dtype="fp32")
    assert c.bytes_read == 2 * 80 + 4 * 8
    assert c.bytes_written == 2 * 80
    assert c.flops == 4 * 80 + 3 * 10


def test_norms_and_softmax_are_low_intensity():
    for cost in (rmsnorm(4096, 4096), ops.layernorm(4096, 4096), ops.softmax(4096, 4096)):
        assert cost.intensity < 2


def test_cost_arithmetic():
    a = Cost(1, 2, 3)
    b = Cost(10, 20, 30, kernels=2)
    assert a + b == Cost(11, 22, 33, 3)
    assert sum([a, b]) == a + b
    assert 2 * a == a * 2 == a + a
    assert ops.ZERO + a == a
    with pytest.raises(ValueError, match="no bytes"):
        _ = ops.ZERO.intensity
    with pytest.raises(TypeError):
        _ = a + 1
    with pytest.raises(TypeError):
        _ = a * 1.5


def test_three_kernels_versus_one_fused():
    # (x + y) then relu then * scale, as three kernels, versus one fused kernel.
    n = 1 << 20
    separate = add(n) + ops.relu(n) + ops.elementwise(n, inputs=1, outputs=1)
    fused = ops.elementwise(n, inputs=2, outputs=1, flops_per_element=3)
    assert separate.flops == fused.flops
    assert separate.bytes == 2 * n * (3 + 2 + 2)
    assert fused.bytes == 2 * n * 3
    assert separate.kernels == 3 and fused.kernels == 1


def test_adamw_read_write_lists():
    (step,) = ops.adamw_passes("fused")
    assert set(step.reads) == {"param", "grad", "exp_avg", "exp_avg_sq"}
    assert set(step.writes) == {"param", "exp_avg", "exp_avg_sq"}
    loop = ops.adamw_passes("loop")
    assert sum(p.flops for p in loop) == step.flops == 14
    # every pass of the loop writes something back to memory
    assert all(p.writes for p in loop)


def test_adamw_bytes_per_parameter():
    p = 1000
    # fp32 everywhere: reads 16, writes 12 bytes per parameter.
    assert adamw(p, "fused").bytes == 28 * p
    # loop: 8 + 12 + 8 + 12 + 8 + 8 + 8 + 16 = 80 bytes per parameter
    assert adamw(p, "loop").bytes == 80 * p
    assert adamw(p, "foreach").bytes == adamw(p, "loop").bytes
    # master weights: bf16 gradients shrink the two gradient reads of the loop by 2 bytes
    # each; the fused step writes the bf16 weight copy in its one pass (2 bytes), the loop in a
    # cast kernel of its own that reads the FP32 master (4) and writes the copy (2)
    assert adamw(p, "loop", grad_dtype="bf16", model_dtype="bf16").bytes == (76 + 4 + 2) * p
    assert adamw(p, "fused", grad_dtype="bf16", model_dtype="bf16").bytes == (26 + 2) * p


def test_master_weight_adamw_casts_in_a_kernel_of_its_own_unless_fused():
    # Transformer Engine FusedAdam(master_weights=True) writes the BF16 copy in its one kernel;
    # an unfused step needs one more pass, param.to(bf16): the 8 passes of the loop over 7
    # tensors are 56 kernels, 63 with the cast (82 bytes per parameter, not 78).
    mixed = {"grad_dtype": "bf16", "model_dtype": "bf16"}
    loop = adamw(7 * 1000, "loop", tensors=7, **mixed)
    assert (loop.bytes // 7000, loop.kernels) == (82, 63)
    # foreach: the cast is a multi_tensor_apply pass of depth 2 (master in, copy out): the 202 M
    # parameters of a 7B block are 3089 chunks, ceil(3089 / 320) = 10 launches, 9 passes
    foreach = adamw(202_383_360, "foreach", tensors=7, **mixed)
    assert foreach.kernels == 9 * 10
    fused = adamw(202_383_360, "fused", tensors=7, **mixed)
    assert (fused.bytes // 202_383_360, fused.kernels) == (28, 10)


def test_adamw_launches_follow_the_cuda_build():
    # ATen/native/cuda/MultiTensorApply.cuh (PyTorch 2.13): `#if CUDART_VERSION >= 13000`
    # depth_to_max_blocks[5] = {2240, ...}, else 320. The 7B block's 3089 chunks:
    # ceil(3089 / 320) = 10 launches a pass in a CUDA 12 build, ceil(3089 / 2240) = 2 in CUDA 13,
    # so foreach's 8 passes are 80 or 16 launches against the loop's 8 x 7 = 56.
    p = 202_383_360
    assert adamw(p, "fused", tensors=7, cuda=13).kernels == 2
    assert adamw(p, "foreach", tensors=7, cuda=13).kernels == 16
    assert adamw(p, "foreach", tensors=7).kernels == 80
    assert adamw(p, "loop", tensors=7, cuda=13).kernels == 56
    with pytest.raises(ValueError, match="cuda must be 12 or 13"):
        adamw(p, "loop", cuda=11)


def test_adamw_refuses_grads_torch_cannot_take():
    # torch.optim.AdamW needs grad.dtype == param.dtype; mixed needs a master-weight optimizer
    with pytest.raises(ValueError, match="model_dtype"):
        adamw(1000, "fused", grad_dtype="bf16")
    assert adamw(1000, "fused", grad_dtype="fp32") == adamw(1000, "fused")


def test_adamw_launches():
    assert adamw(100, "loop", tensors=10).kernels == 80
    assert adamw(100, "foreach", tensors=10).kernels == 8
    # multi_tensor_apply: 320 chunks of 65536 elements per launch, so launches grow with
    # the elements: 7e9 parameters are ceil(ceil(7e9 / 65536) / 320) = 334 launches a pass
    assert adamw(7 * 10**9, "fused", tensors=300).kernels == 334
    assert adamw(7 * 10**9, "foreach", tensors=300).kernels == 8 * 334
    # and with the list: 300 tensors at depth 4 (36 per launch) need 9 fused launches
    assert adamw(300 * 1000, "fused", tensors=300).kernels == 9
    assert adamw(100, "fused", tensors=10).kernels == 1
    with pytest.raises(ValueError, match="tensors"):
        adamw(5, tensors=6)


def test_multi_tensor_launches_cuda13():
    # CUDA 13 builds (CUDART_VERSION >= 13000 in ATen/native/cuda/MultiTensorApply.cuh, PyTorch
    # 2.13): 2240 blocks and {770, 448, 336, 252, 210} tensors per launch, by depth.
    # 7e9 parameters: ceil(ceil(7e9 / 65536) / 2240) = ceil(106812 / 2240) = 48 launches.
    assert ops.multi_tensor_launches(7 * 10**9, 300, 4, cuda=13) == 48
    assert ops.multi_tensor_launches(7 * 10**9, 300, 4) == 334
    # 300 small tensors at depth 4: 252 per launch in CUDA 13, 36 in CUDA 12.
    assert ops.multi_tensor_launches(300 * 1000, 300, 4, cuda=13) == 2
    assert ops.multi_tensor_launches(300 * 1000, 300, 4) == 9
    with pytest.raises(ValueError, match="cuda must be 12 or 13"):
        ops.multi_tensor_launches(10, 1, 1, cuda=11)


def test_attention_same_flops_less_traffic():
    args = (2, 16, 2048, 2048, 64)
    mat = attention(*args, impl="materialized")
    fl = attention(*args, impl="flash")
    assert mat.flops == fl.flops == 2 * 16 * (4 * 2048 * 2048 * 64 + 5 * 2048 * 2048)
    assert fl.bytes < mat.bytes
    assert fl.intensity > mat.intensity
    assert mat.kernels == 3 and fl.kernels == 1


def test_attention_materialized_traffic_written_out():
    b, h, n, d, s = 1, 2, 256, 32, 2
    mat = attention(b, h, n, n, d, "bf16", impl="materialized")
    qkv_o = 4 * b * h * n * d * s  # Q, K, V read and O written, once each
    scores = 4 * b * h * n * n * s  # S written, read; P written, read
    assert mat.bytes == qkv_o + scores


def test_flash_traffic_follows_theorem_2():
    # K and V are re-read seq / Br times with Br = M / (4d): 8 N^2 d^2 / M elements.
    n, d, sram = 16384, 128, 192 * 1024
    m = sram // 2  # elements of BF16
    br = m // (4 * d)
    fl = attention(1, 1, n, n, d, "bf16", sram_bytes=sram)
    blocks = -(-n // br)
    # compulsory: Q, K, V read once, O written once; the other blocks - 1 passes over K
    # and V are re-reads, which a cache may serve
    assert fl.bytes == 2 * 4 * n * d
    assert fl.reread_bytes == 2 * 2 * (blocks - 1) * n * d
    assert (fl.bytes + fl.reread_bytes) / 2 == pytest.approx(8 * n * n * d * d / m, rel=0.02)
    assert fl.reread_footprint == 2 * 2 * n * d  # one head's K and V
    # doubling on-chip memory roughly halves the K/V re-reads
    bigger = attention(1, 1, n, n, d, "bf16", sram_bytes=2 * sram)
    assert bigger.reread_bytes < 0.55 * fl.reread_bytes


def test_flash_never_below_one_pass():
    n, d = 128, 64
    fl = attention(3, 4, n, n, d, "fp16", sram_bytes=1 << 24)
    assert fl.bytes == 3 * 4 * 4 * n * d * 2


def test_causal_masking():
    n, d = 1024, 64
    full = attention(1, 1, n, n, d, impl="flash", sram_bytes=4 * d * 2 * 64)  # Br = 64
    causal = attention(1, 1, n, n, d, impl="flash", causal=True, sram_bytes=4 * d * 2 * 64)
    pairs = n * (n + 1) // 2
    assert causal.flops == pairs * (4 * d + 5)
    # K/V rows streamed per block: 64, 128, ..., 1024 → 64 * (16 * 17 / 2) = 8704 rows,
    # of which the first 1024 are compulsory and the rest re-reads
    assert causal.bytes_read == 2 * d * (n + 2 * n)
    assert causal.reread_bytes == 2 * d * 2 * (64 * 16 * 17 // 2 - n)
    assert causal.bytes == full.bytes and causal.reread_bytes < full.reread_bytes
    # the materialized version computes every score, then masks
    mat_c = attention(1, 1, n, n, d, impl="materialized", causal=True)
    assert mat_c == attention(1, 1, n, n, d, impl="materialized")


def test_causal_mask_is_aligned_bottom_right():
    # 3 queries over 5 keys: the last query sees all 5, the first 5 - 3 + 1 = 3
    assert ops.attn._causal_pairs(3, 5) == 3 + 4 + 5
    # 5 queries over 3 keys: the first 2 see none, then 1, 2, 3
    assert ops.attn._causal_pairs(5, 3) == 0 + 0 + 1 + 2 + 3
    assert ops.attn._causal_pairs(4, 4) == 1 + 2 + 3 + 4  # square: the usual triangle


def test_one_decode_query_sees_its_whole_cache():
    heads, d = 32, 128
    step = ops.attention(1, heads, 1, 1024, d, "bf16", causal=True)
    assert step == ops.attention(1, heads, 1, 1024, d, "bf16", causal=False)
    # the two products: 4 x heads x 1024 x d, plus 5 softmax FLOPs per score
    assert step.flops == 4 * heads * 1024 * d + 5 * heads * 1024
    # traffic: Q and O of one token, K and V of all 1024, BF16
    assert step.bytes == 2 * heads * d * (1 + 2 * 1024 + 1)


@pytest.mark.parametrize("seq_q,seq_k,rows", [(1, 1024, 1), (7, 30, 3), (30, 7, 4), (64, 64, 8)])
def test_flash_causal_key_reads_match_a_block_by_block_count(seq_q, seq_k, rows):
    # each query block streams keys up to its last query's limit, seq_k - seq_q + last + 1
    expected = sum(
        max(0, min(seq_k, seq_k - seq_q + min(start + rows, seq_q)))
        for start in range(0, seq_q, rows)
    )
    assert ops.attn._flash_keys_read(seq_q, seq_k, ops.FlashTile(rows), True) == expected


# FlashAttention-3's forward tiles, copied by hand from Dao-AILab/flash-attention at commit
# 0251105a2fb19d2957484b7f023cd8c115286ced, hopper/tile_size.h, tile_size_fwd_sm90 (headdim_v =
# headdim, not local, no paged KV, no softcap): {kBlockM, kBlockN} for element_size 2 and 1.
# Clusters of 2 (hopper/flash_fwd_launch_template.h, Enable_cluster): 16-bit with kHeadDim >= 128,
# 8-bit with kHeadDim == 192, never causal.
FA3_HEADER = {
    # (head_dim, dtype, causal): (kBlockM, kBlockN, ClusterM)
    (64, "bf16", False): (192, 192, 1),  # "Switch to tile size 192 x 192 for now"
    (64, "bf16", True): (192, 128, 1),  # use_blockN_128 = is_causal || ...
    (96, "fp16", False): (192, 144, 1),
    (128, "bf16", False): (128, 176, 2),  # {128, use_blockN_128 ? 128 : 176, ...}
    (128, "bf16", True): (128, 128, 1),
    (192, "bf16", False): (128, 112, 2),  # headdim_v <= 128 ? 128 : 112
    (256, "bf16", False): (128, 80, 2),  # "128 x 80 hits the limit of smem"
    (256, "bf16", True): (128, 80, 1),
    (64, "fp8", False): (192, 160, 1),
    (128, "fp8", False): (128, 224, 1),
    (192, "fp8", False): (128, 160, 2),
    (256, "fp8", True): (128, 128, 1),
}


@pytest.mark.parametrize("key", list(FA3_HEADER))
def test_fa3_tile_matches_the_header(key):
    head_dim, dtype, causal = key
    tile = ops.fa3_tile(head_dim, dtype, causal=causal)
    assert (tile.block_m, tile.block_n, tile.cluster_m) == FA3_HEADER[key]


def test_fa3_tile_rounds_the_head_dim_up_and_refuses_what_fa3_does_not_run():
    assert ops.fa3_tile(80) == ops.fa3_tile(96) and ops.fa3_tile(100) == ops.fa3_tile(128)
    with pytest.raises(ValueError, match="head_dim must be at most 256"):
        ops.fa3_tile(512)
    with pytest.raises(ValueError, match="dtype must be a 16-bit"):
        ops.fa3_tile(128, "fp32")
    with pytest.raises(TypeError, match="tile must be a FlashTile"):
        attention(1, 1, 8, 8, 8, tile=(128, 128))


def test_fa3_rereads_at_16k_by_head_dim():
    # FA3's benchmark shape: 16k tokens, hidden 2048 (32 heads of 64, 16 of 128, 8 of 256), BF16.
    n = 16384
    # d = 64: ceil(16384 / 192) = 86 query blocks, each loads K and V (2 x 16384 x 64 x 2 B)
    fa64 = attention(1, 32, n, n, 64, tile=ops.fa3_tile(64))
    assert fa64.reread_bytes == 32 * (86 - 1) * 2 * n * 64 * 2  # 11.4 GB
    # d = 128: 128 blocks in clusters of 2, so 64 loads of K and V per head
    fa128 = attention(1, 16, n, n, 128, tile=ops.fa3_tile(128))
    assert fa128.reread_bytes == 16 * (64 - 1) * 2 * n * 128 * 2  # 8.5 GB
    # an odd number of blocks cannot form clusters: 3 blocks of 128 rows, 3 loads
    odd = attention(1, 1, 384, 384, 128, tile=ops.fa3_tile(128))
    assert odd.reread_bytes == (3 - 1) * 2 * 384 * 128 * 2


def test_causal_key_blocks_are_loaded_whole():
    # 300 queries and keys, blocks of 100 queries and 64 keys: the blocks need keys up to
    # 100, 200, 300, loaded as 128, 256 and all 300 (not 320)
    cost = attention(1, 1, 300, 300, 8, "fp16", causal=True, tile=ops.FlashTile(100, 64))
    assert cost.reread_bytes == (128 + 256 + 300 - 300) * 2 * 8 * 2


def test_linear_backward_is_two_gemms():
    t, i, o = 8, 16, 32
    assert ops.linear_backward(t, i, o).flops == 4 * t * i * o


# --------------------------------------------------------------------------
# tiled_gemm: per-tile traffic, nothing shared between tiles


@pytest.mark.parametrize("tile", [1, 16, 128, 1024, 4096])
def test_tiled_gemm_square_follows_the_per_tile_formula(tile):
    n, s = 4096, 2
    c = ops.tiled_gemm(n, n, n, tile, "bf16")
    # (n/T)^2 tiles, each reading a T x n strip of A and an n x T strip of B, writing T x T
    blocks = (n // tile) ** 2
    assert c.bytes_read == blocks * s * 2 * tile * n == s * 2 * n**3 // tile
    assert c.bytes_written == s * n * n
    assert c.flops == 2 * n**3  # tiling changes traffic, never FLOPs
    assert c.intensity == pytest.approx(2 * n * tile / (s * (2 * n + tile)))
    assert c.kernels == 1


def test_tiled_gemm_one_tile_is_the_ideal_gemm():
    assert ops.tiled_gemm(4096, 4096, 4096, 4096) == gemm(4096, 4096, 4096)
    assert ops.tiled_gemm(64, 32, 48, 64, "fp32") == gemm(64, 32, 48, "fp32")
    # a tile larger than C is still one tile
    assert ops.tiled_gemm(64, 32, 48, 1000, "fp32") == gemm(64, 32, 48, "fp32")


def test_tiled_gemm_tile_of_one_is_naive():
    m, k, n, s = 8, 512, 4, 4
    c = ops.tiled_gemm(m, k, n, 1, "fp32")
    # every output reads a row of A (k) and a column of B (k): 2k elements each
    assert c.bytes_read == s * m * n * 2 * k  # 4 * 32 * 1024 = 131_072
    assert c.bytes_read == 131_072
    assert c.intensity == pytest.approx(2 * k / (s * (2 * k + 1)))  # 1024 / 4100, about 1/s
    assert ops.tiled_gemm(4096, 4096, 4096, 1).intensity == pytest.approx(8192 / (2 * 8193))


def test_tiled_gemm_ragged_edges_count_clipped_tiles():
    m, k, n, tile, s = 100, 64, 60, 32, 2
    c = ops.tiled_gemm(m, k, n, tile, "bf16")
    # ceil(60/32) = 2 tile columns, so A is read twice; ceil(100/32) = 4 tile rows, B 4 times.
    assert c.bytes_read == s * k * (m * 2 + n * 4) == 56_320  # 2 * 64 * (200 + 240)
    assert c.bytes_written == s * m * n == 12_000
    # the same, summed tile by tile with the edge tiles clipped
    heights = [32, 32, 32, 4]
    widths = [32, 28]
    assert sum(s * (h * k + k * w) for h in heights for w in widths) == c.bytes_read


def test_tiled_gemm_intensity_grows_with_tile():
    values = [ops.tiled_gemm(1000, 300, 700, t).intensity for t in (1, 2, 8, 50, 333, 1000)]
    assert values == sorted(values)
    assert values[-1] == gemm(1000, 300, 700).intensity


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"tile": 0}, ValueError, r"^tile must be an integer >= 1"),
        ({"tile": 16.0}, TypeError, r"^tile must be an integer >= 1"),
        ({"tile": True}, TypeError, r"^tile must be an integer >= 1"),
        ({"m": 0}, ValueError, r"^m must be an integer >= 1"),
        ({"dtype": "bf17"}, ValueError, "dtype 'bf17' is not a known precision"),
    ],
)
def test_tiled_gemm_rejects(kwargs, error, match):
    args = {"m": 8, "k": 8, "n": 8, "tile": 4} | kwargs
    with pytest.raises(error, match=match):
        ops.tiled_gemm(**args)


@pytest.mark.parametrize("seq_q,seq_k", [(3, 5), (1, 1024), (8, 8), (5, 3), (17, 40)])
def test_causal_pairs_are_pytorchs_lower_right_mask(seq_q, seq_k):
    import warnings

    from torch.nn.attention.bias import causal_lower_right

    with warnings.catch_warnings():  # seq_q > seq_k: torch warns that keyless rows give NaN
        warnings.simplefilter("ignore", UserWarning)
        mask = causal_lower_right(seq_q, seq_k)._materialize()
    assert ops.attn._causal_pairs(seq_q, seq_k) == int(mask.sum())


def test_attention_backward_recomputes_to_move_less():
    n, d, heads, s = 1024, 64, 4, 2
    scores = heads * n * n
    stored = ops.attention_backward(1, heads, n, n, d, impl="stored")
    flash = ops.attention_backward(1, heads, n, n, d, impl="flash", sram_bytes=4 * d * s * 128)
    # four products of 2 N d per score; flash adds S = Q K^T again: 2.5x the forward's 4 N d
    assert stored.matrix_flops == 8 * scores * d
    assert flash.matrix_flops == 10 * scores * d
    # stored: P read twice (dV, the dS kernel), dP written then read, dS written then read
    # twice (dQ, dK): 7 N x N passes of 2 bytes, 14 per score; and the N x d tensors: dO
    # twice, V, K, Q in, dV, dQ, dK out, 8 of them
    nd = heads * n * d * s
    assert stored.bytes == 14 * scores + 8 * nd
    # flash: Q, K, V, O, dO in, dQ, dK, dV out; no N x N tensor
    assert flash.bytes == 8 * nd
    assert (flash.special_flops, stored.special_flops) == (scores, 0)
    # 128-row key blocks: 8 blocks, Q and dO read and dQ read and written again 7 times
    assert flash.reread_bytes == 7 * 4 * nd
    with pytest.raises(ValueError, match="impl must be one of stored, flash"):
        ops.attention_backward(1, 1, 8, 8, 8, impl="eager")


def test_rope_grouped_query_and_bad_input():
    from roofline_book.ops import rope

    # Llama-3-8B: 32 query heads, 8 key heads of 128, 1 token, BF16. Rotated elements
    # 32 * 128 + 8 * 128 = 5120: 3 * 5120 = 15,360 FLOPs; read 2 * (5120 + 2 * 128) = 10,752
    # bytes, write 2 * 5120 = 10,240.
    c = rope(1, 32, 128, "bf16", kv_heads=8)
    assert (c.flops, c.bytes_read, c.bytes_written) == (15_360, 10_752, 10_240)
    with pytest.raises(ValueError, match="head_dim must be even"):
        rope(1, 1, 3)
    with pytest.raises(TypeError, match="kv_heads"):
        rope(1, 1, 2, kv_heads=1.0)


def test_attention_kv_heads_count_k_and_v_once_per_kv_head():
    """GQA decode (the profiling review's E2): Hq = 32, Hkv = 8, S = 4096, d = 128, FP32."""
    gqa = attention(1, 32, 1, 4096, 128, "fp32", kv_heads=8)
    # K and V: 2 * 8 * 4096 * 128 * 4 = 33,554,432 B; Q and O: 2 * 32 * 1 * 128 * 4 = 32,768 B
    assert gqa.bytes == 33_554_432 + 32_768 and 3 * gqa.bytes == 100_761_600
    mha = attention(1, 32, 1, 4096, 128, "fp32")
    assert gqa.flops == mha.flops  # every query head still meets every key
    assert mha.bytes - gqa.bytes == 2 * 24 * 4096 * 128 * 4  # 24 K/V heads fewer
    assert attention(2, 8, 64, 64, 32, kv_heads=8) == attention(2, 8, 64, 64, 32)
    for impl in ("materialized", "eager"):
        full = attention(1, 8, 64, 256, 32, impl=impl)
        shared = attention(1, 8, 64, 256, 32, impl=impl, kv_heads=2)
        assert full.bytes - shared.bytes == 2 * 6 * 256 * 32 * 2 and full.flops == shared.flops


def test_attention_backward_kv_heads():
    for impl in ("flash", "stored"):
        mha = attention_backward(1, 8, 128, 128, 64, "bf16", impl=impl)
        mqa = attention_backward(1, 8, 128, 128, 64, "bf16", impl=impl, kv_heads=1)
        # K, V read and dK, dV written for 1 head instead of 8: 4 * 7 * 128 * 64 * 2 bytes
        assert mha.bytes - mqa.bytes == 4 * 7 * 128 * 64 * 2 and mha.flops == mqa.flops


@pytest.mark.parametrize("kv_heads", [3, 0, 16, 2.0])
def test_attention_kv_heads_must_divide_heads(kv_heads):
    with pytest.raises((ValueError, TypeError), match="kv_heads"):
        attention(1, 8, 16, 16, 32, kv_heads=kv_heads)
    with pytest.raises((ValueError, TypeError), match="kv_heads"):
        attention_backward(1, 8, 16, 16, 32, kv_heads=kv_heads)


def test_eager_attention_casts_bf16_in_a_kernel_of_its_own():
    # Hugging Face eager attention: softmax(S, dim=-1, dtype=torch.float32).to(dtype). ATen
    # aten/src/ATen/native/SoftMax.cpp fuses the cast only for Half:
    #   if (input_.is_cuda() && input_.scalar_type() == ScalarType::Half
    #       && dtype == ScalarType::Float) return at::_softmax(input_, dim_, true);
    #   else { Tensor converted = dtype.has_value() ? input_.toType(dtype.value()) : input_; ...
    # Per BF16 score beyond Q, K, V, O: S written (2), scale (2 + 2), mask (2 + 2, the mask read
    # once for all 32 heads), cast (2 + 4), softmax (4 + 4), cast back (4 + 2), P read by PV (2).
    heads, n, d = 32, 1024, 64
    qkvo = 4 * heads * n * d * 2
    causal = attention(1, heads, n, n, d, impl="eager", causal=True)
    assert causal.kernels == 7
    assert (causal.bytes - qkvo) / (heads * n * n) == 2 + 4 + 4 + 6 + 8 + 6 + 2 + 2 / 32
    plain = attention(1, heads, n, n, d, impl="eager")
    assert plain.kernels == 6 and (plain.bytes - qkvo) / (heads * n * n) == 28
    # FP16 takes the fused half-to-float softmax (read 2, write 4): 5 kernels, 20 bytes unmasked
    half = attention(1, heads, n, n, d, "fp16", impl="eager")
    assert half.kernels == 5 and (half.bytes - qkvo) / (heads * n * n) == 2 + 4 + 6 + 6 + 2
    # FP32 converts nothing: S (4), scale (8), softmax (8), P (4); 4 kernels
    single = attention(1, heads, n, n, d, "fp32", impl="eager")
    assert single.kernels == 4 and (single.bytes - 2 * qkvo) / (heads * n * n) == 24


def test_softmax_lower_bound_takes_one_exp():
    # A minimal kernel: one exp per element, a multiply by the row sum's reciprocal. PyTorch's
    # own kernel (aten/src/ATen/native/cuda/SoftMax.cu) does three special evaluations:
    # SumExpFloat `sum + std::exp(v - max_k)`, then SoftMaxForwardEpilogue
    # `std::exp(input - max_input) / sum`, an IEEE division (a MUFU.RCP).
    c = ops.softmax(4096, 4096)
    assert c.special_flops == 4096 * 4096 and c.vector_flops == 4 * 4096 * 4096
    assert ops.pointwise.SOFTMAX_SPECIAL_PER_ELEMENT_ATEN == 2 + 1


def test_rope_is_a_multiply_and_an_fma():
    # x * cos + rotate_half(x) * sin: the second product is added (an FMA), 2 lane slots of 3 FLOPs
    c = ops.rope(16, 4, 8)
    elements = 16 * (4 + 4) * 8
    assert (c.flops, c.vector_slots) == (3 * elements, 2 * elements)


def test_flash_softmax_runs_at_the_fp32_vector_rate():
    # FlashAttention-2/-3 keep S in FP32 accumulators: the 4 vector FLOPs per kept score run at
    # H100's FP32 lane rate, 67e12 / 2 = 33.5e12 slots/s, whatever the input precision
    from roofline_book import hardware, time_bound

    heads, n, d = 32, 4096, 128
    for dtype in ("bf16", "fp8"):
        c = attention(1, heads, n, n, d, dtype, tile=ops.fa3_tile(d, dtype))
        vector = time_bound(c, hardware("h100-sxm"), dtype).by_resource["vector"]
        assert vector == pytest.approx(4 * heads * n * n / 33.5e12)


def test_layernorm_backward_reads_and_writes_what_the_aten_schema_names():
    # native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape,
    #   Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask)
    #   -> (Tensor, Tensor, Tensor): reads dY, X, mean, rstd and gamma (beta is not needed),
    #   writes dX, dgamma, dbeta. Llama-sized: 4096 tokens x 4096 features, BF16.
    c = ops.norms.layernorm_backward(4096, 4096, "bf16")
    n = 4096 * 4096
    assert c.bytes_read == 2 * (2 * n + 2 * 4096 + 4096)  # dY, X; mean, rstd; gamma
    assert c.bytes_written == 2 * (n + 2 * 4096)  # dX; dgamma, dbeta
    # per element: x_hat = (x - mean) * rstd (2), g = dy * gamma (1), sum g (1),
    # sum g * x_hat (2), dx = rstd * (g - mean_g - x_hat * mean_gx) (4), dgamma += dy * x_hat
    # (2), dbeta += dy (1): 13; per row the two means divide by d (2)
    assert c.flops == 13 * n + 2 * 4096 == 218_112_000
    assert c.vector_slots == (13 - 3) * n + 2 * 4096  # three FMAs, one slot each
    assert c.intensity == pytest.approx(218_112_000 / (2 * (3 * n + 5 * 4096)))  # about 2.2
    # gamma in FP32 beside BF16 activations: gamma read and both its gradients written at 4
    mixed = ops.norms.layernorm_backward(8, 16, "bf16", weight_dtype="fp32")
    assert mixed.bytes_read == 2 * (2 * 128 + 2 * 8) + 4 * 16  # 8 rows of 16
    assert mixed.bytes_written == 2 * 128 + 2 * 4 * 16


def test_layernorm_backward_bytes_are_the_tensors_torch_passes():
    torch = pytest.importorskip("torch")
    rows, d = 6, 10
    x, dy = torch.randn(rows, d), torch.randn(rows, d)
    w, b = torch.randn(d), torch.randn(d)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [d], w, b, 1e-5)
    outs = torch.ops.aten.native_layer_norm_backward(dy, x, [d], mean, rstd, w, b, [True] * 3)
    c = ops.norms.layernorm_backward(rows, d, "fp32")
    assert c.bytes_read == sum(t.nbytes for t in (dy, x, mean, rstd, w))
    assert c.bytes_written == sum(t.nbytes for t in outs)
