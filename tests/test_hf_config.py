"""Hugging Face config.json import (roofline_book.llm.hf, model_from_config) and the catalog
models read from their released config files.

Sources (each file's provenance is in the sources.toml beside it):
- the config.json files: roofline_book/llm/data/configs/ (DeepSeek-V3, Qwen3-32B,
  Qwen3-235B-A22B, Llama-3.1-8B/70B/405B) and tests/data/hf_configs/ (fixtures);
- DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: 671B total parameters, 37B
  activated per token; README_WEIGHTS.md: FP8 weights with one FP32 scale per 128 x 128 block;
- DeepSeek-V2 paper (arXiv:2405.04434), DeepSeek-V2-Lite: 15.7B total, 2.4B activated;
- Qwen3 model cards: Qwen3-32B 32.8B parameters (31.2B non-embedding); Qwen3-235B-A22B 235B
  total, 22B activated; Qwen3-30B-A3B 30.5B total, 3.3B activated;
- Qwen2.5-7B model card: 7.61B parameters, 6.53B non-embedding;
- The Llama 3 Herd of Models (arXiv:2407.21783), Table 3: 8B, 70B and 405B; 405B has 126
  layers, model dimension 16384, FFN dimension 53248, 128 heads, 8 key/value heads;
- Mixtral of Experts (arXiv:2401.04088): 46.7B total, 12.9B active per token;
- Mistral-7B-v0.2/v0.3 model cards: v0.2 drops sliding-window attention and has a 32k context,
  v0.3 extends the vocabulary to 32768;
- transformers' configuration_*.py for the defaults of absent keys.
"""

import dataclasses
import json
from pathlib import Path

import pytest

import roofline_book
from roofline_book import InvalidArgument
from roofline_book.llm.config import model_from_config, parse_catalog
from roofline_book.llm.hf import checkpoint_precisions
from roofline_book.llm.inference import (
    Precisions,
    kv_bytes_per_token,
    model,
    weight_bytes,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "hf_configs"
CATALOG_CONFIGS = ROOT / "roofline_book" / "llm" / "data" / "configs"


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text("utf-8"))


def _catalog_config(key: str) -> dict:
    return json.loads((CATALOG_CONFIGS / f"{key}.json").read_text("utf-8"))


def _shape(m) -> dict:
    """Every field of a model but its key, name and source."""
    return {
        f.name: getattr(m, f.name)
        for f in dataclasses.fields(m)
        if f.name not in ("key", "name", "source")
    }


# --------------------------------------------------------------------------
# Parameters, by hand from the published shapes, and against the published totals


def _gqa_layer(h, q, kv, ffn, norms):
    # Q: h x q, K and V: h x kv each, O: q x h; a gated MLP: 3 x h x ffn
    return h * q + 2 * h * kv + q * h + 3 * h * ffn + norms


def test_deepseek_v3_parameters_by_hand():
    m = model("deepseek-v3")
    embeddings = 129280 * 7168 * 2  # embedding and untied LM head
    attention = (
        7168 * 1536  # q_a: hidden -> q_lora_rank
        + 1536 * (128 * 192)  # q_b: q_lora_rank -> 128 heads x (128 nope + 64 rope)
        + 7168 * (512 + 64)  # kv_a: hidden -> latent 512 + shared RoPE key 64
        + 512 * (128 * (128 + 128))  # kv_b: latent -> 128 heads x (k_nope 128 + v 128)
        + (128 * 128) * 7168  # o: 128 heads x v 128 -> hidden
    )
    norms = 2 * 7168 + 1536 + 512  # input and post-attention norms, q_a and kv_a norms
    dense = 3 * 7168 * 18432  # first_k_dense_replace = 3 dense layers
    expert = 3 * 7168 * 2048  # moe_intermediate_size 2048
    moe = 7168 * 256 + (256 + 1) * expert  # router + 256 routed + 1 shared expert
    moe_active = 7168 * 256 + (8 + 1) * expert
    total = embeddings + 61 * (attention + norms) + 3 * dense + 58 * moe + 7168
    active = embeddings + 61 * (attention + norms) + 3 * dense + 58 * moe_active + 7168
    assert m.parameters() == total == 671_026_404_352
    assert m.parameters(active=True) == active == 37_552_282_624
    # the technical report: 671B total, 37B activated per token (MTP module not counted);
    # 37.55B here with the input embedding table, 36.6B without it: both are "37B"
    assert round(total / 1e9) == 671
    assert 36.5e9 < active - 129280 * 7168 < active < 38e9
    assert m.mtp_layers == 1


def test_deepseek_v2_lite_parameters_by_hand():
    m = model_from_config(FIXTURES / "deepseek-v2-lite.json")
    embeddings = 102400 * 2048 * 2
    attention = (
        2048 * (16 * 192)  # q_lora_rank null: one q projection, 16 heads x (128 + 64)
        + 2048 * (512 + 64)  # kv_a
        + 512 * (16 * (128 + 128))  # kv_b
        + (16 * 128) * 2048  # o
    )
    norms = 2 * 2048 + 512  # no q_a norm without q_lora_rank
    expert = 3 * 2048 * 1408
    dense = 3 * 2048 * 10944  # first_k_dense_replace = 1
    moe = 2048 * 64 + (64 + 2) * expert  # 64 routed, 2 shared
    moe_active = 2048 * 64 + (6 + 2) * expert  # top-6 + 2 shared
    total = embeddings + 27 * (attention + norms) + dense + 26 * moe + 2048
    active = embeddings + 27 * (attention + norms) + dense + 26 * moe_active + 2048
    assert (m.q_lora_rank, m.shared_experts, m.dense_layers) == (None, 2, 1)
    assert m.parameters() == total
    assert m.parameters(active=True) == active
    # the paper: 15.7B total; its 2.4B activated leaves out the input embedding table (a
    # lookup, no GEMM): 2.45B without it, 2.66B with it
    assert round(total / 1e9, 1) == 15.7
    assert active - 102400 * 2048 == pytest.approx(2.4e9, rel=0.03)


@pytest.mark.parametrize(
    ("key", "h", "layers", "q", "kv", "ffn", "named"),
    [
        # Llama 3 paper, Table 3: layers, model dimension, FFN dimension, 8 KV heads of 128;
        # the models are named 8B, 70B and 405B
        ("llama-3.1-8b", 4096, 32, 4096, 1024, 14336, 8),
        ("llama-3.1-70b", 8192, 80, 8192, 1024, 28672, 70),
        ("llama-3.1-405b", 16384, 126, 16384, 1024, 53248, 405),
    ],
)
def test_llama_3_1_parameters_by_hand(key, h, layers, q, kv, ffn, named):
    m = model(key)
    total = layers * _gqa_layer(h, q, kv, ffn, 2 * h) + 2 * 128256 * h + h
    assert m.parameters() == total
    assert int(total / 1e9) == named  # 8.03B, 70.55B, 405.85B
    assert m.max_context == 131072  # max_position_embeddings; rope_scaling llama3 from 8192


def test_qwen3_parameters_by_hand():
    dense = model("qwen3-32b")
    # 64 heads x head_dim 128 = 8192 (not hidden 5120); 8 KV heads x 128; q_norm and k_norm
    per_layer = _gqa_layer(5120, 8192, 1024, 25600, 2 * 5120 + 2 * 128)
    total = 64 * per_layer + 2 * 151936 * 5120 + 5120
    assert dense.parameters() == total == 32_762_123_264
    # model card: 32.8B, 31.2B of them outside the embeddings
    assert round(total / 1e9, 1) == 32.8
    assert round(64 * per_layer / 1e9, 1) == 31.2
    moe = model("qwen3-235b-a22b")
    attention = 4096 * 8192 + 2 * 4096 * 512 + 8192 * 4096
    expert = 3 * 4096 * 1536
    norms = 2 * 4096 + 2 * 128
    total = 94 * (attention + 4096 * 128 + 128 * expert + norms) + 2 * 151936 * 4096 + 4096
    active = 94 * (attention + 4096 * 128 + 8 * expert + norms) + 2 * 151936 * 4096 + 4096
    assert (moe.parameters(), moe.parameters(active=True)) == (total, active)
    assert round(total / 1e9) == 235 and round(active / 1e9) == 22  # "235B-A22B"
    small = model_from_config(FIXTURES / "qwen3-30b-a3b.json")
    attention = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048
    expert = 3 * 2048 * 768
    norms = 2 * 2048 + 2 * 128
    total = 48 * (attention + 2048 * 128 + 128 * expert + norms) + 2 * 151936 * 2048 + 2048
    active = 48 * (attention + 2048 * 128 + 8 * expert + norms) + 2 * 151936 * 2048 + 2048
    assert (small.parameters(), small.parameters(active=True)) == (total, active)
    assert round(total / 1e9, 1) == 30.5 and round(active / 1e9, 1) == 3.4  # card: 3.3B
    assert active == pytest.approx(3.3e9, rel=0.02)


def test_mixtral_and_qwen2_5_parameters_against_their_releases():
    mixtral = model_from_config(FIXTURES / "mixtral-8x7b-v0.1.json")
    layer = 4096 * 4096 * 2 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096
    total = 32 * (layer + 8 * 3 * 4096 * 14336) + 2 * 32000 * 4096 + 4096
    active = 32 * (layer + 2 * 3 * 4096 * 14336) + 2 * 32000 * 4096 + 4096
    assert (mixtral.parameters(), mixtral.parameters(active=True)) == (total, active)
    assert (round(total / 1e9, 1), round(active / 1e9, 1)) == (46.7, 12.9)
    qwen = model_from_config(FIXTURES / "qwen2.5-7b.json")
    per_layer = _gqa_layer(3584, 3584, 512, 18944, 2 * 3584)  # q, k, v biases not counted
    assert qwen.parameters() == 28 * per_layer + 2 * 152064 * 3584 + 3584
    assert round(28 * per_layer / 1e9, 2) == 6.53  # card: 6.53B non-embedding
    assert qwen.parameters() == pytest.approx(7.61e9, rel=1e-3)  # card: 7.61B


# --------------------------------------------------------------------------
# KV cache and weight bytes


def test_kv_bytes_per_token_by_hand():
    # MLA caches the latent and the shared RoPE key: 61 layers x (512 + 64) x 2 bytes
    assert kv_bytes_per_token(model("deepseek-v3")) == 61 * 576 * 2 == 70272
    v2_lite = model_from_config(FIXTURES / "deepseek-v2-lite.json")
    assert kv_bytes_per_token(v2_lite) == 27 * 576 * 2
    # GQA: K and V, layers x kv_heads x head_dim x 2 bytes
    assert kv_bytes_per_token(model("llama-3.1-405b")) == 2 * 126 * 8 * 128 * 2 == 516096
    assert kv_bytes_per_token(model("llama-3.1-70b")) == 2 * 80 * 8 * 128 * 2
    assert kv_bytes_per_token(model("llama-3.1-8b")) == 2 * 32 * 8 * 128 * 2
    assert kv_bytes_per_token(model("qwen3-32b")) == 2 * 64 * 8 * 128 * 2
    assert kv_bytes_per_token(model("qwen3-235b-a22b")) == 2 * 94 * 4 * 128 * 2
    assert kv_bytes_per_token(model("llama-2-7b")) == 2 * 32 * 32 * 128 * 2 == 524288


def test_deepseek_v3_fp8_checkpoint_weight_bytes():
    m = model("deepseek-v3")
    assert m.checkpoint == Precisions(weights="fp8", activations="fp8", weight_block=128)
    tables = 2 * 129280 * 7168 + 61 * (2 * 7168 + 1536 + 512) + 7168  # BF16: 2 bytes each
    matrices = m.parameters() - tables
    # one FP32 scale per 128 x 128 block of each matrix, counted from the shapes:
    # q_a 7168x1536 56x12, q_b 1536x24576 12x192, kv_a 7168x576 56x5 (576 = 4.5 blocks),
    # kv_b 512x32768 4x256, o 16384x7168 128x56; dense 3 x 7168x18432 3 x 56x144;
    # an expert 3 x 7168x2048 3 x 56x16; the router 7168x256 is kept in BF16 in the release
    attention_blocks = 56 * 12 + 12 * 192 + 56 * 5 + 4 * 256 + 128 * 56
    blocks = 61 * attention_blocks + 3 * 3 * 56 * 144 + 58 * 257 * 3 * 56 * 16
    assert blocks == 40_838_232
    got = weight_bytes(m, m.checkpoint)
    # the package counts matrices / 16384 blocks, the router among the FP8 matrices
    assert got == matrices + -(-matrices // 16384) * 4 + 2 * tables
    by_shapes = (matrices - 58 * 7168 * 256) + 4 * blocks + 2 * (tables + 58 * 7168 * 256)
    assert got == pytest.approx(by_shapes, rel=1e-3)
    assert round(got / 1e9) == 673  # 669.2 GB of FP8, 0.16 GB of scales, 3.7 GB in BF16


def test_qwen3_32b_fp8_checkpoint_weight_bytes():
    m = model_from_config(FIXTURES / "qwen3-32b-fp8.json")
    assert _shape(m) == {**_shape(model("qwen3-32b")), "checkpoint": m.checkpoint}
    assert m.checkpoint.scheme == "W8A8" and m.checkpoint.weight_block == 128
    # every width is a multiple of 128: per layer q 40x64, k and v 40x8, o 64x40 blocks,
    # gate, up 40x200 and down 200x40 blocks
    blocks = 64 * (40 * 64 + 2 * 40 * 8 + 64 * 40 + 3 * 40 * 200)
    matrices = 64 * (5120 * 8192 + 2 * 5120 * 1024 + 8192 * 5120 + 3 * 5120 * 25600)
    assert matrices == 16384 * blocks
    tables = 2 * 151936 * 5120 + 64 * (2 * 5120 + 2 * 128) + 5120
    assert weight_bytes(m, m.checkpoint) == matrices + 4 * blocks + 2 * tables


def test_awq_and_gptq_groups():
    # AWQ: int4, one FP16 scale and one 4-bit zero point per group of 128 input weights
    awq = checkpoint_precisions({"quant_method": "awq", "bits": 4, "group_size": 128,
                                 "zero_point": True, "version": "gemm"})  # fmt: skip
    assert awq == Precisions(weights="int4", zero_point=True)
    gptq = checkpoint_precisions({"quant_method": "gptq", "bits": 4, "group_size": 128,
                                  "sym": True, "desc_act": False})  # fmt: skip
    gptq8 = checkpoint_precisions({"quant_method": "gptq", "bits": 8, "group_size": 128,
                                   "sym": False})  # fmt: skip
    assert gptq == Precisions(weights="int4")
    assert gptq8 == Precisions(weights="int8", zero_point=True)
    # transformers' AwqConfig defaults: bits 4, group_size 128, zero_point true
    assert checkpoint_precisions({"quant_method": "awq"}) == awq
    config = _catalog_config("llama-3.1-8b")
    m = model_from_config(dict(config, quantization_config={"quant_method": "awq"}))
    matrices = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    tables = 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096
    groups = matrices // 128  # every matrix's input width is a multiple of 128
    assert weight_bytes(m, m.checkpoint) == matrices // 2 + groups * (2 + 0.5) + 2 * tables
    assert weight_bytes(m, gptq) == matrices // 2 + groups * 2 + 2 * tables


# --------------------------------------------------------------------------
# Imported fixtures have the hand-typed catalog entries' shapes


def test_imported_fixtures_have_the_catalog_shapes():
    pairs = {
        "mixtral-8x7b-v0.1": ("mixtral-8x7b", {}),
        "gemma-2-9b-it": ("gemma-2-9b", {}),
        # the config says 131072 positions (YaRN); the catalog keeps the 32768 it runs without
        "qwen2.5-7b": ("qwen2.5-7b", {"max_context": 131072}),
        # v0.3, not v0.1: vocabulary 32768, no sliding window, 32k context (the model cards)
        "mistral-7b-instruct-v0.3": (
            "mistral-7b",
            {"vocab": 32768, "sliding_window": None, "max_context": 32768},
        ),
    }
    for fixture, (key, differences) in pairs.items():
        imported = model_from_config(FIXTURES / f"{fixture}.json")
        assert _shape(imported) == {**_shape(model(key)), **differences}, fixture
    gemma = model_from_config(FIXTURES / "gemma-2-9b-it.json")
    # no tie_word_embeddings key: Gemma2Config's default is True; layer 0 slides
    assert gemma.tied_embeddings and gemma.layer_kind(0) == "local"
    assert gemma.activation == "gelu" and gemma.local_layers == 21


def test_llama_2_7b_figures_are_unchanged():
    m = model("llama-2-7b")
    # 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096
    assert m.parameters() == 6_738_415_616
    assert kv_bytes_per_token(m) == 524288
    assert weight_bytes(m) == 2 * 6_738_415_616
    fixture = FIXTURES / "llama-2-7b.json"
    if fixture.is_file():
        assert _shape(model_from_config(fixture)) == _shape(m)


def test_catalog_entries_are_their_config_files():
    for key in ("deepseek-v3", "qwen3-32b", "qwen3-235b-a22b", "llama-3.1-8b",
                "llama-3.1-70b", "llama-3.1-405b"):  # fmt: skip
        path = CATALOG_CONFIGS / f"{key}.json"
        m = model(key)
        assert m.source is not None and m.source.firmness == "vendor"
        assert m.source.url.endswith("/config.json")
        assert _shape(model_from_config(path)) == _shape(m)
        text = path.read_text("utf-8")
        assert model_from_config(text, name=m.name, key=key) == dataclasses.replace(m, source=None)
    # a config entry takes nothing else that sets the shape
    toml = '[sources.s]\ntitle = "t"\n[models.m]\nname = "M"\nsource = "s"\n'
    parse_catalog(toml + 'config = "configs/qwen3-32b.json"\n')
    with pytest.raises(ValueError, match="model 'm' has an unknown key 'layers'; allowed: name"):
        parse_catalog(toml + 'config = "configs/qwen3-32b.json"\nlayers = 2\n')


def test_forms_of_the_source_and_names(tmp_path):
    config = _catalog_config("qwen3-32b")
    folder = tmp_path / "Qwen3-32B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    by_path, by_dir = model_from_config(folder / "config.json"), model_from_config(str(folder))
    by_text, by_map = model_from_config(json.dumps(config)), model_from_config(config)
    assert by_path == by_dir and by_path.name == "Qwen3-32B" and by_path.key == "qwen3-32b"
    assert _shape(by_text) == _shape(by_map) == _shape(by_path)
    assert by_map.name == "qwen3"  # no file and no _name_or_path: the model_type
    mistral = model_from_config(FIXTURES / "mistral-7b-instruct-v0.3.json")
    assert mistral.name == "Mistral-7B-Instruct-v0.3"  # from _name_or_path
    assert roofline_book.model_from_config is model_from_config
    assert "model_from_config" in roofline_book.__all__


def test_absent_keys_take_the_transformers_defaults():
    sizes = {"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
             "intermediate_size": 14336, "vocab_size": 32000}  # fmt: skip
    # MistralConfig: num_key_value_heads 8, sliding_window 4096, max_position_embeddings 4096 x 32
    mistral = model_from_config({"model_type": "mistral", **sizes})
    assert (mistral.kv_heads, mistral.sliding_window, mistral.max_context) == (8, 4096, 131072)
    # LlamaConfig: num_key_value_heads = num_attention_heads, max_position_embeddings 2048
    llama = model_from_config({"model_type": "llama", **sizes})
    assert (llama.kv_heads, llama.max_context, llama.tied_embeddings) == (32, 2048, False)
    # Qwen3Config: head_dim 128; DeepseekV3Config: first_k_dense_replace 3, 1 shared expert
    assert model_from_config({"model_type": "qwen3", **sizes, "hidden_size": 1024}).d == 128
    v3 = dict(_catalog_config("deepseek-v3"))
    for k in (
        "first_k_dense_replace",
        "n_shared_experts",
        "q_lora_rank",
        "num_nextn_predict_layers",
    ):
        v3.pop(k)
    imported = model_from_config(v3)
    assert (imported.dense_layers, imported.shared_experts, imported.q_lora_rank) == (3, 1, 1536)
    assert imported.mtp_layers == 0


# --------------------------------------------------------------------------
# What is not modelled is an error naming it


def _error(config) -> str:
    with pytest.raises(InvalidArgument) as info:
        model_from_config(config)
    assert info.value.name == "config"
    return info.value.detail


def test_errors_name_the_field():
    llama = _catalog_config("llama-3.1-8b")
    assert "model_type 'gpt2' is not supported; supported: llama, mistral" in _error(
        dict(llama, model_type="gpt2")
    )
    qwen2 = _fixture("qwen2.5-7b")
    assert _error(dict(qwen2, use_sliding_window=True)).startswith("use_sliding_window True is")
    assert "quant_method 'bitsandbytes' is not supported; supported: fp8, awq, gptq" in _error(
        dict(llama, quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True})
    )
    awq64 = {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True}
    assert "quantization_config.group_size 64 is not supported" in _error(
        dict(llama, quantization_config=awq64)
    )
    missing = {k: v for k, v in llama.items() if k != "hidden_size"}
    assert _error(missing) == "hidden_size is required in a llama config.json"
    moe = _catalog_config("qwen3-235b-a22b")
    assert _error(dict(moe, decoder_sparse_step=2)).startswith("decoder_sparse_step 2 is not")
    assert _error(dict(moe, mlp_only_layers=[0])).startswith("mlp_only_layers [0] is not")
    v3 = _catalog_config("deepseek-v3")
    assert _error(dict(v3, moe_layer_freq=2)).startswith("moe_layer_freq 2 is not modelled")
    gptq3 = {"quant_method": "gptq", "bits": 3, "group_size": 128}
    assert "quantization_config.bits 3" in _error(dict(llama, quantization_config=gptq3))
    block = {"quant_method": "fp8", "weight_block_size": [128, 64]}
    assert "weight_block_size [128, 64]" in _error(dict(llama, quantization_config=block))
    assert "hidden_act 'relu' is not supported" in _error(dict(llama, hidden_act="relu"))
    assert "num_hidden_layers must be an integer >= 1, got 2.5" in _error(
        dict(llama, num_hidden_layers=2.5)
    )
    assert "cannot be read" in _error("/nonexistent/config.json")
    assert "is not valid JSON" in _error("{ not json")
    assert "sliding_window is required" in _error(
        dict(_fixture("gemma-2-9b-it"), sliding_window=None)
    )
