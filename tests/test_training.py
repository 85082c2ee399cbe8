"""Training as it is configured (roofline_book.distributed.training, roofline-book train), by hand.

Shapes from the models' config.json: Llama-3-8B hidden 4096, 32 layers, 32 query and 8 KV heads
of 128 (q width 4096, k/v width 1024), SwiGLU MLP 14336, vocabulary 128,256, context 8192;
Llama-2-7B 4096, 32 layers, 32 heads (no GQA), MLP 11008, context 4096; Llama-3-70B 8192,
80 layers, 64 and 8 heads, MLP 28672. Links per direction: NVLink 450 GB/s, InfiniBand NDR
50 GB/s. The H100's BF16 peak comes from the catalog (the vendor's dense figure).

What each layer saves is counted from its ops, and held to PyTorch's own autograd: a tiny
Llama layer in BF16 on the CPU, with torch.autograd.graph.saved_tensors_hooks counting the
storage every saved tensor keeps alive.
"""

from __future__ import annotations

import json
import math

import pytest

from roofline_book import hardware
from roofline_book._base.validate import InvalidArgument
from roofline_book.cli import main
from roofline_book.distributed import activations
from roofline_book.distributed.training import TrainSplit, train, training_flops
from roofline_book.llm.config import adhoc_model
from roofline_book.llm.inference import model

H100 = hardware("h100-sxm")
PEAK = H100.peak_flops("bf16")
LLAMA8, LLAMA2, LLAMA70 = model("llama-3-8b"), model("llama-2-7b"), model("llama-3-70b")
NVLINK, NDR = 450e9, 50e9


def test_llama3_8b_layer_activations_by_hand():
    h, q, kv, heads, f = 4096, 4096, 1024, 32, 14336
    # eager PyTorch (Hugging Face LlamaRMSNorm: x.to(float32), pow, mean, rsqrt, mul, .to(bf16),
    # weight *): the FP32 copy 4h (pow and mul keep it), 1/rms 4 B a token, the BF16 normalised
    # x 2h (weight * keeps it), the output 2h (the next linear keeps it): 8h + 4, twice a layer
    norms = 2 * (4 * h + 4 + 2 * h + 2 * h)
    # SDPA keeps q and k after RoPE, v, its output (o_proj's input is the same storage) and an
    # FP32 log-sum-exp per head; K and V at their GQA width
    attention = 2 * q + 2 * kv + 2 * kv + 2 * q + 4 * heads
    # SwiGLU: gate's output (silu keeps it), silu's output and up's output (mul keeps both),
    # their product (down keeps it)
    mlp = 4 * 2 * f
    assert dict(activations.layer_activation_bytes(LLAMA8)) == {
        "norms": norms,  # 65,544
        "attention": attention,  # 20,608
        "mlp": mlp,  # 114,688
    }
    assert norms + attention + mlp == 200_840  # 49.03 h, not the GPT layer's 34 h
    # fused (Transformer Engine RMSNorm keeps its BF16 input and 1/rms; Megatron-Core's
    # SwiGLUFunction keeps its input, gate and up side by side, and recomputes silu)
    fused = activations.layer_activation_bytes(LLAMA8, saving="fused")
    assert fused["norms"] == 2 * (2 * h + 4 + 2 * h)
    assert fused["mlp"] == 2 * 2 * f + 2 * f
    assert sum(fused.values()) == 139_400  # 34.03 h
    # one 4096-token sequence through 32 eager layers: 26.3 GB, where 34 s h L gave 18.25 GB
    assert sum(activations.layer_activation_bytes(LLAMA8).values()) * 4096 * 32 == 26_324_500_480


def test_llama3_8b_logits_and_loss_by_hand():
    head = activations.head_activation_bytes(LLAMA8)
    # the BF16 logits of one 4096-token sequence, and the FP32 log-softmax of the loss
    assert head["logits"] * 4096 == 4096 * 128256 * 2 == 1_050_673_152
    assert head["loss"] * 4096 == 4096 * 128256 * 4 == 2_101_346_304
    assert head["norm"] == 8 * 4096 + 4
    step = train(LLAMA8, H100, TrainSplit(dp=64, zero=3), batch=512, seq=4096)
    assert step.memory_bytes_per_device["logits and loss"] == 4096 * (6 * 128256 + 8 * 4096 + 4)


def _saved_bytes(module_call):
    """Bytes of every storage autograd keeps for the backward of ``module_call()``, parameters
    left out (they are weights, not activations)."""
    import torch

    kept: dict[int, int] = {}
    skip: set[int] = set()

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    def run(params, *inputs):
        skip.update(p.untyped_storage().data_ptr() for p in params)
        skip.update(i.untyped_storage().data_ptr() for i in inputs)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = module_call()
        return out, sum(kept.values())

    return run


def test_saved_activations_match_torch_on_a_tiny_llama_layer():
    """The eager count against PyTorch's autograd: a Llama layer (Hugging Face's ops: RMSNorm
    with its FP32 upcast, RoPE, SDPA with GQA, SwiGLU), BF16, on the CPU."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    b, s, h, heads, kv_heads, ffn, vocab = 2, 32, 64, 4, 2, 176, 500
    d = h // heads
    torch.manual_seed(0)
    bf16 = torch.bfloat16

    def linear(i, o):
        return torch.nn.Parameter(torch.randn(o, i, dtype=bf16) / i**0.5)

    w = {
        "q": linear(h, heads * d),
        "k": linear(h, kv_heads * d),
        "v": linear(h, kv_heads * d),
        "o": linear(heads * d, h),
        "gate": linear(h, ffn),
        "up": linear(h, ffn),
        "down": linear(ffn, h),
        "head": linear(h, vocab),
        "n1": torch.nn.Parameter(torch.ones(h, dtype=bf16)),
        "n2": torch.nn.Parameter(torch.ones(h, dtype=bf16)),
        "nf": torch.nn.Parameter(torch.ones(h, dtype=bf16)),
    }
    cos, sin = torch.randn(s, d, dtype=bf16), torch.randn(s, d, dtype=bf16)

    def rms(x, weight):  # transformers' LlamaRMSNorm.forward
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + 1e-5)
        return weight * x.to(dtype)

    def rotate(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    def layer(x):  # transformers' LlamaDecoderLayer, SDPA attention keeping GQA
        y = rms(x, w["n1"])
        q = F.linear(y, w["q"]).view(b, s, heads, d).transpose(1, 2)
        k = F.linear(y, w["k"]).view(b, s, kv_heads, d).transpose(1, 2)
        v = F.linear(y, w["v"]).view(b, s, kv_heads, d).transpose(1, 2)
        q, k = q * cos + rotate(q) * sin, k * cos + rotate(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + F.linear(a.transpose(1, 2).contiguous().view(b, s, h), w["o"])
        y = rms(x, w["n2"])
        return x + F.linear(F.silu(F.linear(y, w["gate"])) * F.linear(y, w["up"]), w["down"])

    x = torch.randn(b, s, h, dtype=bf16, requires_grad=True)
    tiny = adhoc_model("tiny", hidden=h, layers=1, heads=heads, kv_heads=kv_heads, ffn=ffn,
                       vocab=vocab)  # fmt: skip
    _, saved = _saved_bytes(lambda: layer(x))(w.values(), x, cos, sin)
    assert saved == sum(activations.layer_activation_bytes(tiny).values()) * b * s

    labels = torch.randint(0, vocab, (b * s,))

    def head():  # final norm, LM head, loss on the FP32 upcast (transformers' ForCausalLMLoss)
        logits = F.linear(rms(x, w["nf"]), w["head"])
        return logits, F.cross_entropy(logits.float().view(-1, vocab), labels)

    (logits, _), saved = _saved_bytes(head)(w.values(), x, labels)
    # what autograd keeps, and the BF16 logits the model hands back to its caller
    held = saved + logits.untyped_storage().nbytes()
    # + 4: nll_loss keeps one FP32 scalar (its total weight) a loss, not a token
    assert held == sum(activations.head_activation_bytes(tiny).values()) * b * s + 4


def test_fsdp_that_reshards_gathers_in_every_micro_step():
    phi = LLAMA2.parameters()
    one = train(LLAMA2, H100, TrainSplit(dp=64, zero=3), batch=512, seq=4096)
    eight = train(LLAMA2, H100, TrainSplit(dp=64, zero=3), batch=512, seq=4096, micro_batch=8)
    # 512 sequences over 64 replicas: 8 a GPU, as 8 micro-steps of 1 or one of 8
    assert (one.accumulation_steps, eight.accumulation_steps) == (8, 1)
    # each micro-step all-gathers the 16-bit weights for its forward and again for its
    # backward, and reduce-scatters its gradients
    assert [(c.op, c.count, c.when) for c in one.comms] == [
        ("all_gather", 8, "micro-step"),
        ("all_gather", 8, "micro-step"),
        ("reduce_scatter", 8, "micro-step"),
    ]
    assert [c.nbytes for c in one.comms] == [2 * phi, 2 * phi, 2 * phi]
    assert one.communication_s == pytest.approx(8 * eight.communication_s)
    # the activations follow the same micro-batch: one sequence held, or eight
    act = one.memory_bytes_per_device["activations"]
    assert act == sum(activations.layer_activation_bytes(LLAMA2).values()) * 4096 * 32
    assert eight.memory_bytes_per_device["activations"] == 8 * act
    assert one.memory_bytes < H100.memory_capacity < eight.memory_bytes
    # weights kept gathered for the step (FSDP2 reshard_after_forward=False, no reshard after
    # backward): one all-gather a step, the reduce-scatter still every micro-step, and the
    # whole 16-bit weights on every device, as ZeRO-2
    kept = train(LLAMA2, H100, TrainSplit(dp=64, zero=3, reshard=False), batch=512, seq=4096)
    assert [(c.op, c.count) for c in kept.comms] == [("all_gather", 1), ("reduce_scatter", 8)]
    assert kept.memory_bytes_per_device["weights"] == 2 * phi
    assert kept.memory_bytes - one.memory_bytes == pytest.approx(2 * phi * 63 / 64)
    zero2 = train(LLAMA2, H100, TrainSplit(dp=64, zero=2), batch=512, seq=4096)
    assert zero2.memory_bytes == pytest.approx(kept.memory_bytes)


def test_ddp_reduces_under_the_last_backward_only():
    # Llama-3-8B, 64 GPUs, 8 sequences of 512 tokens each, one at a time: DDP accumulates under
    # no_sync and all-reduces during the 8th micro-batch's backward, 2/3 of its FLOPs
    step = train(LLAMA8, H100, TrainSplit(dp=64), batch=512, seq=512)
    (ar,) = step.comms
    assert (ar.count, ar.when) == (1, "last backward")
    compute = training_flops(LLAMA8, 512 * 512, 512) / 64 / PEAK
    backward = 2 / 3 * training_flops(LLAMA8, 512, 512) / PEAK
    assert step.compute_s == pytest.approx(compute)
    assert ar.window_s == pytest.approx(backward)
    # one backward of 512 tokens does not cover the all-reduce, the step's compute would
    t = ar.time.bandwidth_s
    assert backward < t < compute
    assert step.seconds == pytest.approx(compute - backward + t)
    assert step.mfu < 1


def test_megatron_keeps_fp32_gradients():
    # Megatron's distributed-optimizer table (bytes a parameter, bf16 parameters and fp32
    # gradients): 18 without it, 6 + 12/d with it
    phi, d = LLAMA8.parameters(), 64

    def states(zero):
        step = train(LLAMA8, H100, TrainSplit(dp=d, zero=zero), batch=512, seq=4096,
                     grad_dtype="fp32")  # fmt: skip
        m = step.memory_bytes_per_device
        return m["weights"] + m["gradients"] + m["optimizer"], step

    assert states(0)[0] == pytest.approx(18 * phi)
    total, step = states(1)
    assert total == pytest.approx((6 + 12 / d) * phi)
    # the gradients are reduce-scattered in FP32 too: 4 bytes a parameter on the wire
    assert step.comms[0].op == "reduce_scatter" and step.comms[0].nbytes == 4 * phi


def test_the_headline_mfu_keeps_megatron_tp_all_reduces_exposed():
    # 70B, TP 8 in a node, 4 stages, DP 2, ZeRO-1, recompute: 256 micro-batches per replica
    step = train(LLAMA70, H100, TrainSplit(dp=2, tp=8, pp=4, zero=1), batch=512, seq=4096,
                 recompute=True)  # fmt: skip
    bubble = 3 / (256 + 3)
    compute = training_flops(LLAMA70, 512 * 4096, 4096, recompute=True) / 64 / PEAK / (1 - bubble)
    assert step.compute_s == pytest.approx(compute)
    # 6 all-reduces a layer a micro-batch with recompute, 20 layers a stage, 256 micro-batches,
    # of 4096 x 8192 BF16 activations, at 450 GB/s (the switch reduces): 4.58 s
    tp = 6 * 20 * 256 * 4096 * 8192 * 2 / NVLINK
    assert tp == pytest.approx(4.581, rel=1e-3)
    # Megatron runs them on the critical path by default: the headline step has them
    assert step.exposed_s >= compute + tp
    dp_tail = sum(c.time.bandwidth_s for c in step.comms if c.link == "ib-ndr")
    assert step.exposed_s <= compute + tp + dp_tail
    model_flops = training_flops(LLAMA70, 512 * 4096, 4096)
    assert step.mfu == pytest.approx(model_flops / (64 * PEAK * step.exposed_s))
    # the all-overlap figure stays beside it, higher
    assert step.mfu_all_overlap == pytest.approx(model_flops / (64 * PEAK * step.seconds))
    assert step.mfu <= model_flops / (64 * PEAK * (compute + tp)) < step.mfu_all_overlap


def test_seq_beyond_the_window_is_refused(capsys):
    with pytest.raises(ValueError, match="seq 8192 is beyond llama-2-7b's context window"):
        train(LLAMA2, H100, TrainSplit(dp=8), batch=64, seq=8192)
    argv = ["train", "--model", "llama-2-7b", "--gpus", "8", "--seq", "1000000"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--seq 1000000 is beyond llama-2-7b's context window (4096)" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--gpus", "0"), "--gpus"),
        (("--gpus", "8", "--micro-batch", "3", "--batch", "64"), "DP x micro-batch (8 x 3)"),
        (("--gpus", "8", "--zero", "2", "--no-reshard"), "--no-reshard is an option of"),
        (("--gpus", "8", "--micro-batch", "0"), "--micro-batch"),
    ],
)
def test_bad_train_flags_name_the_flag(capsys, argv, message):
    assert main(["train", "--model", "llama-2-7b", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert "dp must be" not in err


def test_cli_prints_the_micro_batch_and_the_accumulation_steps(capsys):
    argv = ["train", "--model", "llama-3-8b", "--gpus", "64", "--zero", "3", "--batch", "512"]
    assert main([*argv, "--micro-batch", "2"]) == 0
    out = capsys.readouterr().out
    assert "micro-batch 2 sequences: 4 micro-steps per replica a step" in out
    assert "every micro-step" in out
    assert main([*argv, "--micro-batch", "2", "--grad-dtype", "fp32", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    step = train(LLAMA8, H100, TrainSplit(dp=64, zero=3), batch=512, seq=4096, micro_batch=2,
                 grad_dtype="fp32")  # fmt: skip
    assert (data["micro_batch"], data["accumulation_steps"]) == (2, 4)
    assert data["grad_dtype"] == "fp32" and data["activation_saving"] == "eager"
    assert data["activation_bytes_per_token_per_layer"] == 200_840
    assert [c["count"] for c in data["communication"]] == [4, 4, 4]
    assert data["memory_bytes_per_device"] == pytest.approx(step.memory_bytes)
    assert data["mfu_upper_bound"] == pytest.approx(step.mfu)
    jsonschema = pytest.importorskip("jsonschema")
    from roofline_book.cli.schema import SCHEMAS

    errors = list(jsonschema.Draft202012Validator(SCHEMAS["train"]).iter_errors(data))
    assert not errors, [e.message for e in errors[:3]]


def test_cli_headline_mfu_and_a_hint_when_memory_does_not_fit(capsys):
    argv = ["train", "--model", "llama-3-70b", "--gpus", "64", "--tp", "8", "--pp", "4",
            "--zero", "1", "--batch", "512", "--recompute"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    step = train(LLAMA70, H100, TrainSplit(dp=2, tp=8, pp=4, zero=1), batch=512, seq=4096,
                 recompute=True)  # fmt: skip
    # the headline keeps the TP all-reduces on the critical path; the all-overlap MFU beside it
    headline = f"{step.mfu:.1%} (upper bound; {step.mfu_all_overlap:.1%} if all communication"
    assert headline in out
    assert "TP all-reduces not overlapped" in out
    assert main(["train", "--model", "llama-2-7b", "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    assert "(does not fit: try --zero 3, --recompute" in out


def test_a_training_split_follows_the_inference_rules(capsys):
    # Llama-3-8B's config.json: 32 attention heads (8 KV), MLP 14336, 32 layers; a DGX H100
    # node joins 8 GPUs over NVLink, so a TP group of 16 leaves the node
    assert main(["train", "--model", "llama-3-8b", "--gpus", "3", "--tp", "3"]) == 2
    err = capsys.readouterr().err
    assert "error: --tp (3) must divide the model's 32 attention heads" in err, err
    with pytest.raises(InvalidArgument, match="tp 16 must fit in one node of 8 GPUs") as e:
        train(LLAMA8, H100, TrainSplit(tp=16), batch=8, seq=4096)
    assert e.value.name == "tp"
    with pytest.raises(InvalidArgument, match=r"pp \(33\) must be at most the model's 32 layers"):
        train(LLAMA8, H100, TrainSplit(pp=33), batch=33, seq=4096)


def test_a_split_over_a_number_of_gpus():
    # 64 GPUs in TP groups of 8: 64 / 8 = 8 data-parallel replicas
    assert TrainSplit.over(64, tp=8) == TrainSplit(dp=8, tp=8)
    assert TrainSplit.over(64, tp=4, pp=2, dp=8).devices == 64
    for kwargs, name in (
        (dict(tp=3), "gpus"),  # 64 is not a multiple of 3
        (dict(tp=8, dp=4), "dp"),  # 4 x 8 = 32 GPUs, not 64
        (dict(zero=1, reshard=False), "reshard"),  # keeping the gathered weights is ZeRO-3's
    ):
        with pytest.raises(InvalidArgument) as e:
            TrainSplit.over(64, **kwargs)
        assert e.value.name == name


# --------------------------------------------------------------------------
# Context parallelism, expert parallelism, FP8 GEMMs, MLA and fine-grained MoE
#
# Llama 3.1 405B from its config.json (meta-llama/Llama-3.1-405B): hidden 16384, 126 layers,
# 128 query and 8 KV heads of 128, SwiGLU 53248, vocabulary 128,256, 131,072 positions.
# DeepSeek-V3 from its config.json (deepseek-ai/DeepSeek-V3): hidden 7168, 61 layers, 128 heads,
# q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128 + qk_rope_head_dim 64, v_head_dim 128,
# 256 routed experts of 2048 (top 8) and 1 shared, the first 3 layers dense with 18432,
# vocabulary 129,280. H800: the H100's Tensor Core peaks, NVLink 200 GB/s a direction.
LLAMA405 = adhoc_model("llama-3.1-405b", hidden=16384, layers=126, heads=128, kv_heads=8,
                       ffn=53248, vocab=128256, max_context=131072)  # fmt: skip
DSV3 = adhoc_model("deepseek-v3", hidden=7168, layers=61, heads=128, kv_heads=128, ffn=2048,
                   vocab=129280, head_dim=192, v_head_dim=128, q_lora_rank=1536,
                   kv_lora_rank=512, rope_head_dim=64, experts=256, experts_per_token=8,
                   shared_experts=1, dense_layers=3, dense_ffn=18432, expert_groups=8,
                   groups_per_token=4, max_context=163840)  # fmt: skip
H800 = hardware("h800-sxm")

# Llama 3 paper (arXiv:2407.21783, Table 4; the same rows on Balaji's SC'24 slide): GPUs, TP, CP,
# PP, sequence length, TFLOPs/GPU; 16M tokens a batch, DP = GPUs / (TP x CP x PP), so
# 2048 sequences of 8192 (32 or 16 per DP replica) or 128 of 131072 (16 per replica)
LLAMA3_TABLE4 = [
    (8192, 8, 1, 16, 8192, 430e12),
    (16384, 8, 1, 16, 8192, 400e12),
    (16384, 8, 16, 16, 131072, 380e12),
]


@pytest.mark.parametrize("gpus, tp, cp, pp, seq, published", LLAMA3_TABLE4)
def test_llama3_405b_published_steps_never_beat_the_bound(gpus, tp, cp, pp, seq, published):
    split = TrainSplit.over(gpus, tp=tp, pp=pp, cp=cp, zero=1)
    batch = 2**24 // seq  # 16M tokens
    step = train(LLAMA405, H100, split, batch=batch, seq=seq, grad_dtype="fp32")
    assert split.dp == gpus // (tp * cp * pp) and batch // split.dp in (32, 16)
    # the bound on the step allows at least the per-GPU rate Meta measured
    assert step.flops_per_device_s >= published
    assert step.mfu >= published / PEAK
    # the compute alone, by hand: 6N + attention per token, over the GPUs, at the BF16 peak,
    # stretched by the 1F1B bubble (p - 1) / (m + p - 1) with m = sequences a replica
    m = batch // split.dp
    # a layer: q and o 16384 x 16384, k and v 16384 x 1024, SwiGLU 3 x 16384 x 53248
    n = 126 * (2 * 16384 * 16384 + 2 * 16384 * 1024 + 3 * 16384 * 53248) + 128256 * 16384
    flops = 3 * (2 * n + 2 * seq * 128 * 128 * 126) * batch * seq
    assert training_flops(LLAMA405, batch * seq, seq) == flops
    bubble = (pp - 1) / (m + pp - 1)
    assert step.compute_s == pytest.approx(flops / gpus / PEAK / (1 - bubble))
    assert step.exposed_s >= step.compute_s


def test_context_parallel_all_gathers_the_local_chunks_kv():
    # Llama 3 405B at 128K: TP 8 fills a node, so the 16 CP ranks sit in 16 nodes, one each
    split = TrainSplit(dp=8, tp=8, pp=16, cp=16, zero=1)
    step = train(LLAMA405, H100, split, batch=128, seq=131072, grad_dtype="fp32")
    ag, rs = (c for c in step.comms if c.what.startswith("CP"))
    # each GPU holds 131072 / 16 = 8192 tokens; their K and V: 8 KV heads x (128 + 128) x 2 bytes
    # = 4096 bytes a token, one KV head per TP rank: 512 bytes; 16 chunks gathered
    chunk = 8192 * 8 * (128 + 128) * 2 // 8
    assert chunk == 4 * 2**20
    assert (ag.op, rs.op) == ("all_gather", "reduce_scatter")
    assert ag.nbytes == rs.nbytes == 16 * chunk == 67_108_864
    # once a layer a micro-step each: 126 / 16 -> 8 layers a stage, 128 / 8 = 16 micro-steps
    assert ag.count == rs.count == 8 * 16
    # the 15 other chunks come over the GPU's own 50 GB/s NIC: 1.258 ms each time
    assert ag.link == "ib-ndr"
    assert ag.time.bandwidth_s == pytest.approx(128 * 15 * chunk / NDR)
    # the gradients are reduced over DP x CP = 128 ranks, which hold the same weights
    assert step.comms[0].devices == 8 * 16
    # each GPU keeps the activations of its 8192 tokens, not the sequence's 131072
    one = train(LLAMA405, H100, TrainSplit(dp=8, tp=8, pp=16, zero=1), batch=128, seq=8192)
    assert step.memory_bytes_per_device["activations"] == one.memory_bytes_per_device[
        "activations"]  # fmt: skip
    # inside a node (TP 1, CP 8): a ring over NVLink, 7/8 of the buffer at 450 GB/s
    small = train(LLAMA8, H100, TrainSplit(cp=8), batch=1, seq=8192)
    (ag8,) = (c for c in small.comms if c.op == "all_gather")
    buffer = 8 * (8192 // 8) * 8 * 256 * 2
    assert (ag8.link, ag8.nbytes) == ("nvlink", buffer)
    assert ag8.time.bandwidth_s == pytest.approx(32 * 7 / 8 * buffer / NVLINK)


def test_context_parallel_needs_two_chunks_a_device(capsys):
    with pytest.raises(
        InvalidArgument, match=r"cp \(3\) needs seq \(8192\) to be a multiple of 2 x"
    ):
        train(LLAMA8, H100, TrainSplit(cp=3), batch=1, seq=8192)
    assert main(["train", "--model", "llama-3-8b", "--gpus", "6", "--cp", "3"]) == 2
    err = capsys.readouterr().err
    assert "error: --cp (3) needs seq (4096) to be a multiple of 2 x cp = 6" in err, err


def test_expert_parallel_all_to_all_by_hand():
    # DeepSeek-V3 as its report trains it: 2048 H800, PP 16, EP 64 (8 nodes), DP 128, ZeRO-1,
    # 15360 sequences of 4096 tokens: 120 micro-steps a replica
    split = TrainSplit(dp=128, pp=16, ep=64, zero=1)
    step = train(DSV3, H800, split, batch=15360, seq=4096, grad_dtype="fp32")
    (a2a,) = (c for c in step.comms if c.op == "all_to_all")
    # dispatch and combine, forward and backward: 4 a MoE layer a micro-step; 4 layers a stage
    # (61 / 16 -> 4, all MoE but in the first stage), 120 micro-steps
    assert a2a.count == 4 * 4 * 120
    # config.json: a token's 8 experts come from 4 of 8 groups of 32; EP 64 on 8 nodes puts one
    # group on each node (node-limited routing) and 4 experts on each GPU. Another node is hit
    # when its group is chosen (1/2) and a pick among the 128 candidates lands in it; another
    # GPU of the node when a pick lands on its 4. A token crosses the NIC once a node hit.
    node = 0.5 * (1 - math.comb(96, 8) / math.comb(128, 8))
    gpu = 0.5 * (1 - math.comb(124, 8) / math.comb(128, 8))
    row = 4096 * 7168 * 2  # a GPU's 4096 tokens, 7168 BF16 elements a copy
    assert a2a.nbytes == pytest.approx((7 * node + 7 * gpu) * row)
    assert a2a.link == "ib-ndr"
    assert a2a.time.bandwidth_s == pytest.approx(a2a.count * 7 * node * row / NDR)
    # inside one node (Mixtral, EP 8 on 8 GPUs, one expert each, top-2): another GPU is hit
    # with 1 - C(7, 2) / C(8, 2) = 1/4, over NVLink
    mixtral = train(model("mixtral-8x7b"), H100, TrainSplit(dp=8, ep=8, zero=3), batch=8,
                    seq=4096)  # fmt: skip
    (inside,) = (c for c in mixtral.comms if c.op == "all_to_all")
    copies = 7 * (1 - math.comb(7, 2) / math.comb(8, 2))
    assert inside.nbytes == pytest.approx(copies * 4096 * 4096 * 2)
    assert inside.time.bandwidth_s == pytest.approx(4 * 32 * inside.nbytes / NVLINK)
    # FP8 dispatch (DeepSeek-V3): 1 byte an element and an FP32 scale per 128
    fp8 = train(DSV3, H800, split, batch=15360, seq=4096, grad_dtype="fp32", dtype="fp8")
    dispatch, rest = (c for c in fp8.comms if c.op == "all_to_all")
    assert dispatch.nbytes == pytest.approx((7 * node + 7 * gpu) * 4096 * (7168 + 4 * 56))
    assert (dispatch.count, rest.count) == (4 * 120, 3 * 4 * 120)


def test_expert_parallel_divides_only_the_experts_states():
    split = TrainSplit(dp=128, pp=16, ep=64, zero=1)
    step = train(DSV3, H800, split, batch=15360, seq=4096)
    # routed experts: 58 MoE layers x 256 x 3 x 7168 x 2048
    experts = 58 * 256 * 3 * 7168 * 2048
    assert experts == 653_908_770_816
    rest = DSV3.parameters() - experts
    mem = step.memory_bytes_per_device
    # 16-bit weights: the rest split by PP only, the experts by PP x EP
    assert mem["weights"] == pytest.approx(2 * (rest / 16 + experts / (16 * 64)))
    # ZeRO-1: Adam's 12 bytes over DP 128 for the rest, over the 128 / 64 = 2 expert replicas
    assert mem["optimizer"] == pytest.approx(12 * (rest / 16 / 128 + experts / (16 * 64) / 2))
    assert [c.devices for c in step.comms if c.op == "reduce_scatter"] == [128, 2]


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--model", "llama-3-8b", "--gpus", "8", "--ep", "2"), "--ep (2) needs a mixture-of-"),
        (("--model", "mixtral-8x7b", "--gpus", "16", "--tp", "8", "--ep", "4"),
         "--ep (4) must divide dp (2)"),
        (("--model", "mixtral-8x7b", "--gpus", "16", "--ep", "16"),
         "--ep (16) must divide the model's 8 experts"),
        (("--model", "llama-3-8b", "--gpus", "16", "--cp", "3"), "TP x PP x CP = 1 x 1 x 3"),
    ],
)  # fmt: skip
def test_bad_parallel_flags_name_the_flag(capsys, argv, message):
    assert main(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_fp8_gemms_run_at_twice_the_bf16_rate():
    # H100 SXM datasheet: 989.4 TFLOP/s BF16 and 1978.9 TFLOP/s FP8, dense
    assert (PEAK, H100.peak_flops("fp8")) == (989.4e12, 1978.9e12)
    bf16 = train(LLAMA8, H100, TrainSplit(), batch=1, seq=4096)
    fp8 = train(LLAMA8, H100, TrainSplit(), batch=1, seq=4096, dtype="fp8")
    # the layers' GEMMs (6 x 32 layers' matrices a token) go twice as fast; the LM head and
    # attention stay BF16: the time saved is half the layers' GEMM time at BF16
    layers = 6 * 32 * LLAMA8.layer_matrix_parameters() * 4096
    assert bf16.compute_s - fp8.compute_s == pytest.approx(layers / PEAK / 2, rel=1e-3)
    # MFU stays against the BF16 peak; against the FP8 peak it halves
    assert fp8.peak == PEAK and fp8.gemm_peak == 1978.9e12
    assert fp8.mfu_at_gemm_peak == pytest.approx(fp8.mfu / 2, rel=1e-3)
    # the FP8 bound is never above the BF16 one, whatever the split
    for m, dev, sp, batch, seq in (
        (LLAMA405, H100, TrainSplit(dp=8, tp=8, pp=16, cp=16, zero=1), 128, 131072),
        (DSV3, H800, TrainSplit(dp=128, pp=16, ep=64, zero=1), 15360, 4096),
        (LLAMA8, H100, TrainSplit(dp=64, zero=3), 512, 4096),
    ):
        one = train(m, dev, sp, batch=batch, seq=seq)
        eight = train(m, dev, sp, batch=batch, seq=seq, dtype="fp8")
        assert eight.exposed_s <= one.exposed_s and eight.seconds <= one.seconds


def test_mla_and_moe_flops_by_hand():
    # DeepSeek-V3's matrices a layer: MLA q 1536 x (7168 + 128 x 192), the latent and RoPE key
    # 7168 x (512 + 64), the latent's expansion 512 x 128 x (128 + 128), output 128 x 128 x 7168
    attention = 1536 * (7168 + 128 * 192) + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert attention == 187_105_280
    dense = 3 * 7168 * 18432  # the first 3 layers' MLP
    moe = 7168 * 256 + (8 + 1) * 3 * 7168 * 2048  # router, 8 routed and 1 shared expert
    n = 61 * attention + 3 * dense + 58 * moe + 129280 * 7168
    assert n == 36_624_596_992  # with the embedding's 0.93 B: the report's "37B activated"
    # causal attention at the expanded widths: 4096 x 128 x (192 + 128) a token a layer
    tokens = 4096
    assert training_flops(DSV3, tokens, 4096) == 3 * (2 * n + 4096 * 128 * 320 * 61) * tokens
    # and the same count in the communication roofline's N
    from roofline_book.distributed.comm import tokens_to_hide

    assert tokens_to_hide(DSV3, H800, 1.0) == pytest.approx(H800.peak_flops("bf16") / (4 * n))


def test_mla_and_moe_layer_activations_by_hand():
    h, heads, a = 7168, 128, 2

    def norm(w):  # eager RMSNorm: FP32 input, 1/rms, BF16 normalised, output
        return 4 * w + 4 + 2 * w + 2 * w

    moe = activations.layer_activation_bytes(DSV3)
    # two RMSNorms of the layer, and MLA's on the compressed query and on the latent
    assert moe["norms"] == 2 * norm(h) + norm(1536) + norm(512)
    # q and k expanded at 128 x 192, v and the output at 128 x 128, log-sum-exp per head
    assert moe["attention"] == a * (2 * heads * 192 + 2 * heads * 128) + 4 * heads
    # SwiGLU 8F bytes for each of the 8 routed and the 1 shared expert, the 8 copies of the
    # token sent to the experts and their 8 outputs weighted by the router, its FP32 scores
    assert moe["mlp"] == 9 * 8 * 2048 + 2 * 8 * a * h + 4 * 256
    first = activations.layer_activation_bytes(DSV3, layer=0)
    assert first["mlp"] == 8 * 18432  # a dense layer
    fused = activations.layer_activation_bytes(DSV3, saving="fused")
    assert fused["mlp"] == 9 * 6 * 2048 + 8 * a * h + 4 * 256


def test_cli_prints_llama3_405b_and_its_json_validates(capsys):
    # the catalog's models are the shapes above
    for name, shapes in (("llama-3.1-405b", LLAMA405), ("deepseek-v3", DSV3)):
        assert model(name).parameters(active=True) == shapes.parameters(active=True)
        assert model(name).parameters() == shapes.parameters()
    argv = ["train", "--model", "llama-3.1-405b", "--gpus", "16384", "--tp", "8", "--pp", "16",
            "--cp", "16", "--seq", "131072", "--batch", "128", "--zero", "1",
            "--grad-dtype", "fp32"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    step = train(LLAMA405, H100, TrainSplit(dp=8, tp=8, pp=16, cp=16, zero=1), batch=128,
                 seq=131072, grad_dtype="fp32")  # fmt: skip
    assert "(DP 8, TP 8, PP 16, CP 16, ZeRO 1)" in out
    assert "against the BF16 peak" in out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["cp"], data["ep"], data["dtype"]) == (16, 1, "bf16")
    assert data["model_flops_per_s_per_device"] == pytest.approx(step.flops_per_device_s)
    assert data["model_flops_per_s_per_device"] >= 380e12  # Llama 3, Table 4
    jsonschema = pytest.importorskip("jsonschema")
    from roofline_book.cli.schema import SCHEMAS

    validator = jsonschema.Draft202012Validator(SCHEMAS["train"])
    assert not list(validator.iter_errors(data))
    argv = ["train", "--model", "deepseek-v3", "--gpus", "2048", "--pp", "16", "--ep", "64",
            "--zero", "1", "--batch", "15360", "--dtype", "fp8", "--json"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["peak_flops_per_s"] == PEAK and data["gemm_peak_flops_per_s"] == 1978.9e12
    assert not list(validator.iter_errors(data))
    # the released config.json the catalog reads gives the same step
    from importlib import resources

    path = resources.files("roofline_book.llm").joinpath("data/configs/deepseek-v3.json")
    argv[argv.index("deepseek-v3")] = str(path)
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["step_time_exposed_tp_s"] == data["step_time_exposed_tp_s"]


def test_interleaved_stages_shrink_the_bubble():
    # Megatron's interleaved 1F1B (Narayanan et al. 2021): v virtual stages a GPU cut the bubble
    # to (p - 1) / (v m + p - 1) and send v times as many hand-offs; 16 stages, 16 micro-steps
    plain = train(LLAMA405, H100, TrainSplit(dp=128, tp=8, pp=16, zero=1), batch=2048, seq=8192)
    two = train(LLAMA405, H100, TrainSplit(dp=128, tp=8, pp=16, zero=1, vpp=2), batch=2048,
                seq=8192)  # fmt: skip
    assert plain.bubble == 15 / 31 and two.bubble == 15 / 47
    assert two.compute_s == pytest.approx(plain.compute_s * (1 - 15 / 31) / (1 - 15 / 47))
    hand_offs = [c.count for c in two.comms if c.op == "send_recv"]
    assert hand_offs == [2 * 16 * 2]
    with pytest.raises(InvalidArgument, match="set pp > 1"):
        TrainSplit(vpp=2)
    with pytest.raises(InvalidArgument, match="exceed the model's 126 layers"):
        train(LLAMA405, H100, TrainSplit(dp=128, tp=8, pp=16, vpp=8), batch=2048, seq=8192)


def test_the_floor_drops_the_pipeline_bubble_only():
    # Llama-3-70B on 64 H100, PP 4 with 8 micro-batches: 1F1B idles 3 / (8 + 3) of the step;
    # the floor for any schedule (zero-bubble, DualPipe) keeps only the busy time
    from roofline_book import hardware
    from roofline_book.distributed.training import TrainSplit, train
    from roofline_book.llm.inference import model

    s = train(model("llama-3-70b"), hardware("h100-sxm"), TrainSplit(dp=2, tp=8, pp=4),
              batch=16, seq=4096)  # fmt: skip
    assert s.bubble == 3 / 11
    busy = s.compute_s * (1 - 3 / 11)
    assert busy * (1 - 1e-12) <= s.floor_s < s.seconds
