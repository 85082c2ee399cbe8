import pytest

from roofline_book import hardware
from roofline_book.llm.block import LLAMA2_7B, DecoderConfig, block_ops
from roofline_book.ops import FlashTile, adamw, attention
from roofline_book.present.tables import block_table, optimizer_table, table_frame

H100 = hardware("h100-sxm")


def test_block_operator_list():
    names = [n for n, _ in block_ops(LLAMA2_7B)]
    assert len(names) == 12
    assert names.count("MLP norm (RMSNorm)") == 1 and "activation (SwiGLU)" in names
    # RoPE rotates Q and K after the QKV projection, before attention
    assert names[1:4] == ["QKV projection", "rotary embedding (RoPE)", "attention (flash)"]


def test_rope_row_by_hand():
    rows = {r.name: r for r in block_table(LLAMA2_7B, H100)}
    rope = rows["rotary embedding (RoPE)"]
    # Q and K: 4096 tokens x 32 heads x 128 = 16,777,216 elements each; 3 FLOPs each
    # (x * cos, rotate_half(x) * sin, their sum): 3 * 2 * 16,777,216 = 100,663,296 FLOPs.
    assert rope.cost.flops == rope.cost.vector_flops == 100_663_296
    # Read Q, K (2 bytes each) and the cos and sin tables (4096 x 128 each):
    # 2 * (2 * 16,777,216 + 2 * 524,288) = 69,206,016 bytes; write Q and K: 67,108,864.
    assert (rope.cost.bytes_read, rope.cost.bytes_written) == (69_206_016, 67_108_864)
    # memory-bound: 136,314,880 B / 3.35 TB/s = 40.69 us, against 100.7 MFLOP / 67 TFLOP/s = 1.5 us
    assert rope.bound == "memory"
    assert rope.time.seconds == pytest.approx(136_314_880 / 3.35e12)


def test_block_bounds_on_h100():
    rows = {r.name: r for r in block_table(LLAMA2_7B, H100)}
    for gemm_name in (
        "QKV projection",
        "output projection",
        "MLP gate projection",
        "MLP up projection",
        "MLP down projection",
    ):
        assert rows[gemm_name].bound == "compute"
    for low in (
        "attention norm (RMSNorm)",
        "rotary embedding (RoPE)",
        "residual add",
        "activation (SwiGLU)",
    ):
        assert rows[low].bound == "memory"
    # the GEMMs carry most of the block's time lower bound at this shape
    gemm_share = sum(r.share for n, r in rows.items() if "projection" in n)
    assert gemm_share > 0.6


def test_flash_versus_materialized_in_the_block():
    flash = {r.name: r for r in block_table(LLAMA2_7B, H100)}
    mat = {r.name: r for r in block_table(LLAMA2_7B, H100, attention_impl="materialized")}
    assert mat["attention (materialized)"].cost.bytes > 2 * flash["attention (flash)"].cost.bytes
    assert mat["attention (materialized)"].bound == "memory"


def test_causal_flash_row_is_bound_over_the_schedules_considered():
    # Causal, 4096 tokens, d = 128, 32 heads. FA3's own tile (128 x 128, no cluster under the
    # mask): query block m (1..32) reads keys up to 128 m, 128 * (32 * 33 / 2) - 4096 = 63,488
    # key rows again per head. A 2-block cluster shares each load: group g (1..16) reads up to
    # 256 g, 256 * (16 * 17 / 2) - 4096 = 30,720 rows. K and V, 128 wide, 2 bytes, 32 heads:
    per_row = 32 * 2 * 128 * 2
    row = next(r for r in block_table(LLAMA2_7B, H100) if r.name == "attention (flash)")
    assert row.cost.reread_bytes == 30_720 * per_row == 503_316_480
    # L2 (8.4286 TB/s measured): (134,217,728 + 503,316,480) / 8.4286e12 = 75.6 us, below the
    # matrix units' 32 * 4096 * 4097 / 2 * 4 * 128 / 989.4e12 = 138.9 us
    assert row.resource == "matrix"
    assert row.time.by_resource["l2"] == pytest.approx((134_217_728 + 503_316_480) / 8.4286e12)
    fa3 = attention(1, 32, 4096, 4096, 128, causal=True, tile=FlashTile(128, 128, 1))
    assert fa3.reread_bytes == 63_488 * per_row


def test_short_sequence_turns_gemms_memory_bound():
    # decode-like: one token per sequence, the weight read dominates each GEMM
    cfg = DecoderConfig(batch=1, seq=1, hidden=4096, heads=32, ffn=11008)
    rows = {r.name: r for r in block_table(cfg, H100)}
    assert rows["MLP up projection"].bound == "memory"


def test_optimizer_table():
    table = optimizer_table(LLAMA2_7B, H100, grad_dtype="bf16", model_dtype="bf16")
    rows = {r.name: r for r in table}
    assert rows["AdamW (fused)"].cost == adamw(
        LLAMA2_7B.parameters, "fused", tensors=7, grad_dtype="bf16", model_dtype="bf16"
    )
    assert rows["AdamW (loop)"].time.seconds > 2.5 * rows["AdamW (fused)"].time.seconds
    # 8 passes over 7 tensors, and the cast of the FP32 master to the BF16 copy, a kernel a tensor
    assert rows["AdamW (loop)"].cost.kernels == 8 * 7 + 7


def test_config_validation():
    with pytest.raises(ValueError, match="divisible"):
        DecoderConfig(batch=1, seq=8, hidden=100, heads=3, ffn=10)
    with pytest.raises(TypeError, match="seq"):
        DecoderConfig(batch=1, seq=8.0, hidden=64, heads=4, ffn=10)
    with pytest.raises(ValueError, match="dtype"):
        DecoderConfig(batch=1, seq=8, hidden=64, heads=4, ffn=10, dtype="bf99")
    with pytest.raises(TypeError, match="device"):
        block_table(LLAMA2_7B, "h100-sxm")


def test_frame():
    df = table_frame(block_table(LLAMA2_7B, H100))
    assert list(df.columns)[:3] == ["operator", "FLOPs", "bytes"]
    assert df["share"].sum() == pytest.approx(1.0)


def test_tables_are_cost_tables():
    from roofline_book.ops import FlashTile, gemm
    from roofline_book.present import tables

    # on H100 the flash kernel's tile is FlashAttention-3's: 128 query rows and 128 key rows at
    # d = 128 under the causal mask (hopper/tile_size.h, tile_size_fwd_sm90), with the bound
    # taking the 2-block cluster FA3 uses without a mask (fewer re-reads than FA3's own schedule)
    tile = FlashTile(128, 128, 2)
    named = block_ops(LLAMA2_7B, sram_bytes=228 * 1024, tile=tile)
    assert LLAMA2_7B.causal and LLAMA2_7B.head_dim == 128
    assert block_table(LLAMA2_7B, H100) == tables.cost_table(named, H100, "bf16")
    # a device without FA3's table, or an explicit on-chip memory, takes the SRAM rule
    a100 = hardware("a100-sxm")
    named = block_ops(LLAMA2_7B, sram_bytes=164 * 1024)
    assert block_table(LLAMA2_7B, a100) == tables.cost_table(named, a100, "bf16")
    explicit = block_ops(LLAMA2_7B, sram_bytes=100_000)
    assert block_table(LLAMA2_7B, H100, sram_bytes=100_000) == tables.cost_table(
        explicit, H100, "bf16"
    )
    rows = {r.name: r for r in block_table(LLAMA2_7B, H100)}
    up = rows["MLP up projection"]
    assert up.cost == gemm(4096, 4096, 11008)
    # compute-bound: the roof is the BF16 dense peak, the bound 2 * 4096 * 4096 * 11008 / P
    # P = 989.4e12, the H100 whitepaper's dense BF16 figure
    assert up.attainable == H100.peak_flops("bf16") == 989.4e12
    assert up.time.seconds == pytest.approx(2 * 4096 * 4096 * 11008 / 989.4e12)
