"""The parallel splits (roofline_book.distributed.parallel, roofline_book.distributed.training) by
hand.

The shapes are the models' config.json (Llama-3-70B: hidden 8192, 80 layers, 64 query and 8 KV
heads of 128, MLP 28672, vocabulary 128,256; Llama-3-8B: 4096, 32 layers, 32 and 8 heads, MLP
14336; Mixtral-8x7B: 4096, 32 layers, 8 experts of MLP 14336, 2 per token). The links are the
catalog's, per direction: H100 NVLink 450 GB/s (900 GB/s both ways, NVIDIA), A100 300 GB/s,
InfiniBand NDR 50 GB/s (400 Gb/s). Latency: NCCL 2.30.7's tuning model (src/graph/tuning.cc,
ncclTunerConstantsDefaults), Ring with the LL protocol: baseLat 6.6 us per collective, hwLat
0.6 us per NVLink step (0.47 us before NCCL 2.18.1) and 2.7 us per NET step.
"""

from __future__ import annotations

import json

import pytest

from roofline_book import hardware
from roofline_book._base.validate import InvalidArgument
from roofline_book.cli import main
from roofline_book.distributed.comm import (
    critical_intensity,
    dp_tokens_to_hide,
    tokens_to_hide,
    tp_width_to_hide,
)
from roofline_book.distributed.parallel import (
    Split,
    all_reduce,
    device_ops,
    infer,
    weight_bytes_per_device,
)
from roofline_book.distributed.report import inference_report, tp_that_fits
from roofline_book.distributed.training import TrainSplit, train, training_flops
from roofline_book.llm.inference import kv_cache_bytes, model, weight_bytes

H100, A100, H20 = hardware("h100-sxm"), hardware("a100-sxm"), hardware("h20")
LLAMA70, LLAMA8, MIXTRAL = model("llama-3-70b"), model("llama-3-8b"), model("mixtral-8x7b")
NVLINK, NDR = 450e9, 50e9
BASE, STEP = 6.6e-6, 0.6e-6  # NCCL 2.30.7: baseLat (Ring, LL); hwLat (NVLink, Ring, LL)


def test_catalog_links_are_per_direction():
    # NVIDIA prints the two directions together: 900 GB/s (H100, H200, H20), 600 (A100),
    # 400 (H800, A800), 1.8 TB/s (B200); the catalog holds half of each
    halves = {
        "h100-sxm": 900,
        "h200-sxm": 900,
        "h20": 900,
        "a100-sxm": 600,
        "a800-sxm": 400,
        "h800-sxm": 400,
        "b200": 1800,
    }
    for key, both in halves.items():
        assert hardware(key).link_bandwidth == both / 2 * 1e9, key
    # MI300X: 7 Infinity Fabric links x 128 GB/s both ways / 2
    assert hardware("mi300x").link_bandwidth == 7 * 128e9 / 2
    # PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8 bit = 31.5 GB/s each way
    for key in ("l40s", "l20", "rtx-4090"):
        d = hardware(key)
        assert (d.link, d.pcie_generation, d.pcie_lanes) == ("pcie", 4, 16)
        assert d.link_bandwidth == pytest.approx(16e9 * 16 * 128 / 130 / 8, rel=1e-3)


def test_all_reduce_by_hand():
    # 8 H100 through an NVSwitch that reduces: every element of a GPU's buffer feeds every other
    # GPU's result, so each GPU sends its whole buffer once and receives the reduced one once:
    # f = 1, 16384 B / 450e9 B/s = 36.4 ns (not the reduce-scatter's 7/8, 31.9 ns)
    t = all_reduce(16384, 8, H100)
    assert t.bandwidth_s == pytest.approx(16384 / 450e9) == pytest.approx(36.41e-9, rel=1e-3)
    assert t.latency_s == pytest.approx(BASE + 2 * 7 * STEP)  # 6.6 + 14 x 0.6 = 15.0 us
    assert t.latency_s == pytest.approx(15.0e-6)
    # 8 A100: no reduction in the switch, the ring's 2 x 7/8
    assert all_reduce(16384, 8, A100).bandwidth_s == pytest.approx(2 * 7 / 8 * 16384 / 300e9)


def test_llama_70b_tp8_weights_by_hand():
    h, kv, f, v = 8192, 8 * 128, 28672, 128256
    layer = 2 * (h * h + 2 * h * kv + h * h + 3 * h * f)  # Q, K, V, O, gate, up, down; BF16
    expected = 80 * (layer // 8 + 2 * 2 * h) + 2 * (2 * v * h) // 8 + 2 * h  # norms replicated
    assert weight_bytes_per_device(LLAMA70, Split(tp=8)) == expected
    # 141.1 GB of weights / 8 = 17.64 GB
    assert round(expected / 1e9, 2) == round(weight_bytes(LLAMA70) / 8e9, 2) == 17.64


def test_kv_heads_replicate_past_their_count():
    # 8 KV heads over TP 16: every KV head on two devices, so the KV cache (and the K, V
    # weights) per device stay at 1/8, while Q, O and the MLP go to 1/16
    eight = infer(LLAMA70, H100, Split(tp=8))
    sixteen = infer(LLAMA70, H100, Split(tp=16), per_node=16)  # a 16-GPU NVLink domain
    per_seq = kv_cache_bytes(LLAMA70, 4096)  # 80 x 2 x 1024 x 2 x 4096
    assert per_seq == 80 * 2 * 1024 * 2 * 4096
    assert eight.kv_bytes_per_sequence_per_device == sixteen.kv_bytes_per_sequence_per_device
    assert sixteen.kv_bytes_per_sequence_per_device == per_seq // 8
    kv_weights = 80 * 2 * (2 * 8192 * 1024)  # K and V, 80 layers, BF16
    saved = weight_bytes_per_device(LLAMA70, Split(tp=8)) - weight_bytes_per_device(
        LLAMA70, Split(tp=16)
    )
    rest = weight_bytes(LLAMA70) - kv_weights  # everything but K and V halves again
    assert saved == pytest.approx(rest / 16, rel=0.01)
    ops = dict(device_ops(LLAMA70, Split(tp=16), 1, 1, 4096))
    assert ops["attention (x 80)"].bytes_read >= per_seq // 8


def test_llama_70b_decode_on_8_h100_by_hand():
    r = infer(LLAMA70, H100, Split(tp=8), batch=1, context=4096)
    # 2 all-reduces per layer and one for the vocabulary-parallel embedding: 161 of one
    # token's 8192 BF16 activations; the LM head's logits all-gathered: 128256 x 2 bytes
    # the switch reduces: each GPU sends its 16384 bytes once and gets the sum back, f = 1
    ar = 161 * 8192 * 2 / NVLINK
    ag = 7 / 8 * 128256 * 2 / NVLINK
    assert r.decode.communication_s == pytest.approx(ar + ag)
    # NCCL's model: 161 all-reduces of 6.6 + 14 x 0.6 us and one all-gather of 6.6 + 7 x 0.6 us
    assert r.decode.latency_s == pytest.approx(161 * (BASE + 14 * STEP) + BASE + 7 * STEP)
    assert r.decode.latency_s == pytest.approx(2.4258e-3)
    # every device streams its 17.64 GB of weights and 1/8 of the cache from HBM
    streamed = r.weight_bytes_per_device + kv_cache_bytes(LLAMA70, 4096) / 8
    assert r.decode.device_s == pytest.approx(streamed / H100.memory_bandwidth, rel=0.02)
    # compute and communication may overlap (fused GEMM + all-reduce kernels): the bound is the
    # larger, 5.2 ms of HBM against 6.4 us of NVLink; their sum is the no-overlap estimate
    assert r.decode.seconds == max(r.decode.device_s, r.decode.communication_s)
    assert r.decode.seconds == r.decode.device_s
    assert r.decode.serial_s == r.decode.device_s + r.decode.communication_s
    assert r.decode.floor_s <= r.decode.seconds
    # bandwidth: a sliver of the step; NCCL's ring latency: a fifth of it
    assert r.decode.share < 0.002 and r.decode.latency_s > 0.2 * r.decode.seconds
    # the largest batch: 0.9 x 81559 MiB, less the weights and 1/8 of the activation peak,
    # over 1/8 of a sequence's cache
    act = (2 * 8192 * (8192 + 3 * 28672) + 4 * 256 * 128256) // 8
    free = 0.9 * 81559 * 2**20 - r.weight_bytes_per_device - act
    assert r.max_batch == int(free // (per_seq := kv_cache_bytes(LLAMA70, 4096) // 8))
    assert per_seq == 167_772_160


def test_pipeline_hand_off_and_no_latency_gain():
    tp8 = infer(LLAMA70, H100, Split(tp=8))
    pp2 = infer(LLAMA70, H100, Split(tp=4, pp=2))
    hand_off = [c for c in pp2.decode.comms if c.op == "send_recv"][0]
    assert hand_off.count == 1  # 2 stages, one boundary
    assert hand_off.time.bandwidth_s == pytest.approx(8192 * 2 / NVLINK)
    # a step still walks every layer: stage after stage, each on 4 devices, so the step is
    # about twice the TP-8 one, though the weights per device are the same
    assert pp2.weight_bytes_per_device == pytest.approx(tp8.weight_bytes_per_device, rel=0.01)
    assert pp2.decode.device_s == pytest.approx(2 * tp8.decode.device_s, rel=0.02)


def test_expert_parallel_all_to_all_by_hand():
    r = infer(MIXTRAL, H100, Split(tp=8, ep=8))
    a2a = [c for c in r.decode.comms if c.op == "all_to_all"][0]
    # dispatch and combine in each of 32 layers; each device sends its 1/8 share of the
    # token's 2 expert copies of 4096 BF16 values: 2 x 4096 x 2 / 8 bytes, 7/8 of it away
    assert a2a.count == 64 and a2a.nbytes == 2 * 4096 * 2 / 8
    assert a2a.time.bandwidth_s == pytest.approx(64 * 7 / 8 * 2048 / NVLINK)
    # the MLP all-reduce is gone: one per layer (attention) plus the embedding's
    ar = [c for c in r.decode.comms if c.op == "all_reduce"][0]
    assert ar.count == 32 + 1


@pytest.mark.parametrize(
    "split, message",
    [
        (dict(tp=3), "tp (3) must divide the model's 64 attention heads"),
        (dict(pp=81), "pp (81) must be at most the model's 80 layers"),
        (dict(tp=8, ep=2), "ep (2) needs a mixture-of-experts model"),
    ],
)
def test_splits_that_are_not_allowed(split, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Split(**split).check(LLAMA70)
    with pytest.raises(ValueError, match="ep .3. must divide tp .8."):
        Split(tp=8, ep=3)


def test_training_flops_by_hand():
    n = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
    attention = 2 * 4096 * 4096 * 32  # causal: 4 s d heads / 2 per token per layer
    tokens = 512 * 4096
    assert training_flops(LLAMA8, tokens, 4096) == 3 * (2 * n + attention) * tokens
    assert training_flops(LLAMA8, tokens, 4096, recompute=True) == 4 * (2 * n + attention) * tokens


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_memory_by_zero_stage(zero):
    step = train(LLAMA8, H100, TrainSplit(dp=64, zero=zero), batch=512, seq=4096)
    phi, dp = LLAMA8.parameters(), 64  # 8,030,261,248 weights
    expected = {
        0: (2 * phi, 2 * phi, 12 * phi),
        1: (2 * phi, 2 * phi, 12 * phi / dp),
        2: (2 * phi, 2 * phi / dp, 12 * phi / dp),
        3: (2 * phi / dp, 2 * phi / dp, 12 * phi / dp),
    }[zero]
    m = step.memory_bytes_per_device
    assert (m["weights"], m["gradients"], m["optimizer"]) == pytest.approx(expected)
    # one 4096-token micro-batch through 32 eager Llama layers: 200,840 bytes a token a layer
    # (tests/test_training.py has the count), held once: 8 sequences a GPU run as 8 micro-steps
    assert m["activations"] == 200_840 * 4096 * 32


def test_dp_step_on_64_h100_by_hand():
    step = train(LLAMA8, H100, TrainSplit(dp=64), batch=512, seq=4096)
    flops = training_flops(LLAMA8, 512 * 4096, 4096)
    assert step.compute_s == pytest.approx(flops / 64 / H100.peak_flops("bf16"))
    # 8 nodes of 8: inside each node over NVLink (the switch reduces: the 16.06 GB of 2-byte
    # gradients out once, 35.7 ms at 450 GB/s), across the 8 nodes over InfiniBand (each GPU's
    # NIC carries 2 x 7/8 of 1/8 of them, 70.3 ms at 50 GB/s); the phases run on different
    # links, pipelined, so the bound is the busier link, not the sum
    g = 2 * LLAMA8.parameters()
    assert g / 1e9 == pytest.approx(16.06, abs=0.01)
    hierarchical = max(g / NVLINK, 2 * 7 / 8 * (g / 8) / NDR)
    assert hierarchical == pytest.approx(70.26e-3, rel=1e-3)
    (dp,) = step.comms
    assert dp.time.bandwidth_s == pytest.approx(hierarchical) and dp.overlaps
    # the tokens per GPU the backward (4 N FLOPs a token) needs to cover it: T = t x peak / 4N
    n = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
    peak = 989.4e12  # the H100 whitepaper's dense BF16
    assert tokens_to_hide(LLAMA8, H100, dp.time.bandwidth_s) == pytest.approx(
        hierarchical * peak / (4 * n)
    )
    # it hides under the backward pass: the bound is the compute, and the MFU is 1
    assert step.seconds == step.compute_s and step.mfu == pytest.approx(1.0)
    # full recompute: a fourth forward pass of FLOPs the model does not count, MFU 3/4
    again = train(LLAMA8, H100, TrainSplit(dp=64), batch=512, seq=4096, recompute=True)
    assert again.mfu == pytest.approx(0.75)


def test_the_dp_all_reduce_bound_is_below_published_multi_node_runs():
    """Published nccl-tests all-reduce busbw across nodes of 8 H100: about 380 GB/s without
    SHARP (GTC 2024 slide quoted in NVIDIA/nccl#1649), 320 GB/s on 4 x 8 H100 over RoCE
    (NVIDIA/nccl#1221), 330.9 GB/s on 4 x 8 H100 over InfiniBand (vpbenchmarking). At 380 GB/s
    the 64-GPU all-reduce of 16.06 GB takes 16.06e9 x 2 x 63/64 / 380e9 = 83.2 ms: the bound
    must not exceed it (the sum of the phases, 62.5 + 70.3 = 132.7 ms, did)."""
    step = train(LLAMA8, H100, TrainSplit(dp=64), batch=512, seq=4096)
    (dp,) = step.comms
    g = 2 * LLAMA8.parameters()
    measured = g * 2 * 63 / 64 / 380e9
    assert measured == pytest.approx(83.2e-3, rel=1e-3)
    assert dp.time.bandwidth_s <= measured
    # the largest busbw the bound allows: 2 x 63/64 x g / t = 450 GB/s, at 8 NICs x 50 GB/s and
    # 7/8 of the node's traffic out of it: 400 x 8/7 x 63/64
    assert g * 2 * 63 / 64 / dp.time.bandwidth_s == pytest.approx(400e9 * 8 / 7 * 63 / 64)


def test_pipeline_bubble_and_tp_all_reduces():
    # 70B on 64 GPUs: TP 8 in a node, 4 stages, DP 2; 512 sequences, 256 micro-batches each
    step = train(LLAMA70, H100, TrainSplit(dp=2, tp=8, pp=4, zero=1), batch=512, seq=4096)
    m = 256
    assert step.bubble == pytest.approx(3 / (m + 3))
    tp = [c for c in step.comms if c.op == "all_reduce" and c.link == "nvlink"][0]
    # 4 all-reduces per layer (2 forward, 2 backward), 20 layers per stage, every micro-batch,
    # of 4096 x 8192 BF16 activations; the switch reduces: the whole buffer once each way
    assert tp.count == 4 * 20 * m and not tp.overlaps
    assert tp.time.bandwidth_s == pytest.approx(tp.count * 4096 * 8192 * 2 / NVLINK)
    assert step.exposed_s >= step.compute_s + tp.time.bandwidth_s
    assert step.seconds <= step.exposed_s


def test_bad_training_input():
    with pytest.raises(ValueError, match="zero must be 0, 1, 2 or 3"):
        TrainSplit(zero=4)
    with pytest.raises(ValueError, match="batch 100 must be a multiple of DP x micro-batch"):
        train(LLAMA8, H100, TrainSplit(dp=64), batch=100, seq=4096)
    with pytest.raises(ValueError, match="pp .40. must be at most"):
        train(LLAMA8, H100, TrainSplit(pp=40), batch=40, seq=4096)


def test_communication_roofline_by_hand():
    # H100: the whitepaper's dense BF16 989.4 TFLOP/s over 450 GB/s of NVLink = 2198.7 FLOP/byte
    peak = 989.4e12
    assert critical_intensity(H100, NVLINK) == pytest.approx(peak / NVLINK)
    # an 8-way TP MLP (gate, up, down): 6 h w FLOPs a token per device against a ring
    # all-reduce of h BF16 values, 2 x 7/8 x 2 h / 450e9 s
    w = tp_width_to_hide(H100, 8, NVLINK)
    assert w == pytest.approx(peak * (2 * 7 / 8 * 2 / NVLINK) / 6)
    # over InfiniBand the width must be 9x larger: Llama-3-70B's 28672 / 8 = 3584 falls short
    assert tp_width_to_hide(H100, 8, NDR) == pytest.approx(9 * w)
    assert 28672 / 8 > w and 28672 / 8 < tp_width_to_hide(H100, 8, NDR)
    # DP over InfiniBand: the backward's 4N T / peak = 2 x 63/64 x 2P / 50e9
    n = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
    t = dp_tokens_to_hide(LLAMA8, H100, 64, NDR)
    assert t == pytest.approx(2 * 63 / 64 * 2 * LLAMA8.parameters() / NDR * peak / (4 * n))


def test_the_scaling_books_gpu_thresholds():
    """JAX scaling book, "How to Think About GPUs" (jax-ml/scaling-book gpus.md @ 1a55377),
    "Rooflines for LLM Scaling on GPUs": with C = 990e12 and W = 450e9 (H100, in a node), data
    parallelism needs a per-GPU token batch above C / W = 2200, and tensor parallelism a
    per-rank MLP width F / Y above the same 2200 (2475 with the node's 400e9 beyond it).
    Its arithmetic drops (n-1)/n and the embeddings (P = N): take n large and a tied, tiny
    vocabulary, and the package gives its numbers."""
    from roofline_book.devices.catalog import adhoc
    from roofline_book.llm.inference import adhoc_model

    h100_book = adhoc("scaling book H100", 990e12, 3.35e12)
    mlp = adhoc_model(
        "mlp",
        hidden=8192,
        layers=80,
        heads=64,
        kv_heads=8,
        ffn=28672,
        vocab=8,
        tied_embeddings=True,
    )
    n = 10**6
    assert dp_tokens_to_hide(mlp, h100_book, n, 450e9) == pytest.approx(2200, rel=1e-3)
    assert dp_tokens_to_hide(mlp, h100_book, n, 400e9) == pytest.approx(2475, rel=1e-3)
    # TP: 2 matrices of the MLP (their W_in, W_out) against AllGather + ReduceScatter of the
    # activations, the same bytes as a ring all-reduce
    assert tp_width_to_hide(h100_book, n, 450e9, gated=False) == pytest.approx(2200, rel=1e-3)
    # "For F = 28000 like LLaMA-3, this is about 11-way TP": 28672 / 2475 = 11.6
    assert 11 < 28672 / tp_width_to_hide(h100_book, n, 400e9, gated=False) < 12


def test_the_done_when_models_answer_on_8_h100_and_8_h20():
    for device in (H100, H20):
        for m in (LLAMA70, model("qwen2.5-72b"), MIXTRAL):
            split = Split(tp=8, ep=8 if m.experts > 1 else 1)
            r = infer(m, device, split)
            assert r.max_batch and r.max_batch > 0, (device.key, m.key)
            assert 0 < r.decode.seconds < r.prefill.seconds


# --------------------------------------------------------------------------- the command line


def _json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_infer_tp_json(capsys):
    out = _json(capsys, "infer", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "8")
    r = infer(LLAMA70, H100, Split(tp=8))
    assert out["devices"] == 8 and out["weight_bytes_per_device"] == r.weight_bytes_per_device
    assert out["communication_time_s"] == pytest.approx(r.decode.communication_s)
    assert out["decode"]["time_lower_bound_s"] == pytest.approx(r.decode.seconds)
    assert out["prefill"]["time_lower_bound_s"] == pytest.approx(r.prefill.seconds)
    assert out["decode"]["any_implementation_time_lower_bound_s"] == pytest.approx(r.decode.floor_s)
    assert out["max_batch"] == r.max_batch
    assert out["interconnect"]["link_bandwidth_Bps"] == NVLINK
    assert "roofline_book_version" in out
    single = _json(capsys, "infer", "--model", "llama-3-8b")
    assert single["devices"] == 1 and single["communication_time_s"] == 0


def test_train_json(capsys):
    out = _json(
        capsys,
        "train",
        "--model",
        "llama-3-8b",
        "--device",
        "h100-sxm",
        "--gpus",
        "64",
        "--zero",
        "3",
        "--batch",
        "512",
    )
    step = train(LLAMA8, H100, TrainSplit(dp=64, zero=3), batch=512, seq=4096)
    assert out["step_time_lower_bound_s"] == pytest.approx(step.seconds)
    assert out["communication_time_s"] == pytest.approx(step.communication_s)
    assert out["memory_bytes_per_device"] == pytest.approx(step.memory_bytes)
    assert out["mfu_upper_bound"] == pytest.approx(step.mfu)
    assert out["fits"] is True and out["dp"] == 64
    jsonschema = pytest.importorskip("jsonschema")
    from roofline_book.cli.schema import SCHEMAS

    errors = list(jsonschema.Draft202012Validator(SCHEMAS["train"]).iter_errors(out))
    assert not errors, [e.message for e in errors[:3]]
    split = _json(
        capsys, "infer", "--model", "mixtral-8x7b", "--device", "h20", "--tp", "8", "--ep", "8"
    )
    errors = list(jsonschema.Draft202012Validator(SCHEMAS["infer"]).iter_errors(split))
    assert not errors, [e.message for e in errors[:3]]


@pytest.mark.parametrize(
    "argv, message",
    [
        (("infer", "--model", "llama-3-70b", "--tp", "3"), "--tp (3) must divide"),
        (("infer", "--model", "llama-3-70b", "--pp", "81"), "--pp (81) must be at most"),
        (("infer", "--model", "llama-3-70b", "--tp", "16"), "--tp 16 must fit in one node"),
        (("train", "--model", "llama-3-8b", "--gpus", "64", "--dp", "3"), "--dp 3 x TP 1 x PP 1"),
        (("train", "--model", "llama-3-8b", "--gpus", "64", "--tp", "3"), "--gpus 64 must be"),
        (("train", "--model", "llama-3-8b", "--gpus", "8", "--zero", "4"), "--zero"),
    ],
)
def test_bad_splits_are_one_line_and_exit_2(capsys, argv, message):
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_ring_only_bound_on_h100_is_beaten_by_nvls():
    """Why the catalog marks NVSwitches that reduce: with the ring's 2(n-1)/n, the bound on
    8 H100 allows a busbw of exactly the 450 GB/s line rate, and nccl-tests measures ~480 GB/s
    with NVLink SHARP (NVIDIA/nccl-tests#212; measure/data/published_measurements.toml)."""
    from dataclasses import replace

    from roofline_book.distributed.collectives import bus_bandwidth

    ring_only = replace(H100, link_reduces=False)
    nbytes = 8e9
    allowed = bus_bandwidth("all_reduce", nbytes / all_reduce(nbytes, 8, ring_only).bandwidth_s, 8)
    assert allowed == pytest.approx(NVLINK) and allowed < 480e9
    reduces = bus_bandwidth("all_reduce", nbytes / all_reduce(nbytes, 8, H100).bandwidth_s, 8)
    # f = 1: busbw allowed = algbw x 2 x 7/8 = 450 x 1.75 = 787.5 GB/s, above the 480 measured
    assert reduces == pytest.approx(2 * 7 / 8 * NVLINK) == pytest.approx(787.5e9)
    assert reduces > 480e9


def test_comm_roofline_places_each_strategy_on_each_link():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from roofline_book.present.plotting import comm_roofline

    fig, ax = plt.subplots()
    comm_roofline(ax, H100, {"NVLink": NVLINK, "IB": NDR}, {"TP": 3000.0})
    # one point per (link, strategy): min(P, B x I) in TFLOP/s; 3000 FLOP/byte is right of the
    # NVLink ridge (2379) and left of the InfiniBand one (21410)
    # (the two ridge-point markers are scatters too: the strategy's are the last of each link)
    points = [tuple(map(float, c.get_offsets()[0])) for c in ax.collections]
    assert (3000.0, pytest.approx(H100.peak_flops("bf16") / 1e12)) in points
    assert (3000.0, pytest.approx(NDR * 3000 / 1e12)) in points
    plt.close(fig)


def test_dp_ranks_that_do_not_fill_whole_nodes_ring_over_the_network():
    # 12 ranks are a node and a half: one ring at the NIC's 50 GB/s. ZeRO-3 that reshards
    # (PyTorch FSDP's default): 8 sequences a GPU, 8 micro-steps, each with two weight
    # all-gathers and a gradient reduce-scatter, each 11/12 x 2 P bytes over the NIC
    step = train(LLAMA8, H100, TrainSplit(dp=12, zero=3), batch=96, seq=4096)
    g = 2 * LLAMA8.parameters()
    assert [c.count for c in step.comms] == [8, 8, 8]
    for c in step.comms:
        assert c.link == "ib-ndr"
        assert c.time.bandwidth_s == pytest.approx(8 * 11 / 12 * g / NDR)


def test_the_latency_term_stays_out_of_the_bound():
    """A one-shot all-reduce of 4096 FP32 values (16 KiB) on 8 H100 takes 5.7 us (sglang#2904;
    sgl-kernel tests/test_trt_reduce.py allocates torch.float32): less than NCCL's model of a
    ring all-reduce, 6.6 + 14 x 0.6 = 15.0 us, so a bound with the latency term in it would be
    beaten; the bandwidth term (16384 / 450e9 = 36 ns) is not."""
    t = all_reduce(4096 * 4, 8, H100)
    assert t.latency_s == pytest.approx(15.0e-6) and t.latency_s > 5.7e-6 > t.bandwidth_s


def test_bad_input_names_the_argument():
    from roofline_book.devices.catalog import adhoc

    with pytest.raises((TypeError, ValueError), match="tp"):
        Split(tp=0)
    with pytest.raises((TypeError, ValueError), match="bandwidth"):
        critical_intensity(H100, 0)
    with pytest.raises((TypeError, ValueError), match="tokens"):
        training_flops(LLAMA8, 0, 4096)
    with pytest.raises(ValueError, match="no interconnect"):
        infer(LLAMA70, adhoc("mine", 1e15, 3e12), Split(tp=8))
    with pytest.raises(ValueError, match="tp 16 must fit in one node of 8 GPUs"):
        infer(LLAMA70, H100, Split(tp=16))


def test_the_smallest_tp_that_holds_a_model():
    # Llama-2-70B: 68.98e9 parameters (Touvron et al., 2023), 138 GB in BF16; an H100 SXM holds
    # 80 GiB, of which vLLM uses 90 %: 77.3 GB. One device cannot hold the weights; two hold
    # 69 GB each, and a 4096-token sequence's KV cache, 80 layers x 8 KV heads x 128 x (K, V)
    # x 2 bytes x 4096 tokens / 2 devices = 0.67 GB, fits beside them
    tp, most = tp_that_fits(model("llama-2-70b"), H100, Split(), 1, context=4096, prompt=4096)
    assert tp == 2 and most >= 1


def test_one_report_for_any_split():
    from roofline_book.devices.catalog import adhoc

    mine = adhoc("mine", 1e15, 3e12)  # no interconnect: one device needs none
    one = inference_report(LLAMA70, mine)
    assert one.split == Split() and one.decode.comms == () and one.decode.communication_s == 0
    # Llama-3-70B over TP 8: 1/8 of the layers' weights on each device, 17.64 GB
    eight = inference_report(LLAMA70, H100, Split(tp=8))
    assert eight.weight_bytes_per_device == pytest.approx(eight.weight_bytes / 8, rel=1e-3)
    assert eight.decode.communication_s > 0
    with pytest.raises(InvalidArgument) as e:  # a split sends bytes: it needs a link
        inference_report(LLAMA70, mine, Split(tp=8))
    assert e.value.name == "device"
    with pytest.raises(InvalidArgument) as e:  # a prompt longer than the context
        inference_report(LLAMA70, H100, context=1024, prompt=2048)
    assert e.value.name == "prompt"
