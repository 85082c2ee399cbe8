"""roofline_book.book.multi_gpu, checked by hand.

Datasheet and catalog figures: H100 SXM 989.4 TFLOP/s dense BF16 (132 SMs x 4096 FLOP a clock x
1830 MHz), 3.35 TB/s HBM3, 81,559 MiB as the driver reports it, NVLink 900 GB/s both directions
(450 each way) through NVSwitch, which reduces (NVLink SHARP); H20 148 TFLOP/s, 4.0 TB/s, 97,871
MiB; L40S PCIe Gen4 x16, 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s each way; InfiniBand NDR
400 Gb/s = 50 GB/s a port. NCCL's tuning model (2.30): 0.6 µs a ring step on NVLink, 2.7 µs on the
network, 6.6 µs base latency a collective. Shapes from the config.json of Llama-2-7B, Llama-3-8B
(32 layers, hidden 4096, 8 KV heads of 128, FFN 14336, vocab 128256) and Llama-3-70B (80 layers).
Mixed-precision Adam keeps 12 bytes of optimizer state a parameter (ZeRO paper, section 3.1).
"""

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline_book import hardware  # noqa: E402
from roofline_book.book import multi_gpu as mg  # noqa: E402
from roofline_book.devices.catalog import network  # noqa: E402
from roofline_book.distributed.collectives import CommTime  # noqa: E402
from roofline_book.distributed.parallel import (  # noqa: E402
    Comm,
    ParallelInference,
    ParallelStep,
    Split,
)
from roofline_book.distributed.training import TrainingStep, TrainSplit, train  # noqa: E402
from roofline_book.distributed.trainsplit import TrainComm  # noqa: E402
from roofline_book.llm.inference import model  # noqa: E402

H100, H20, L40S, IB = hardware("h100-sxm"), hardware("h20"), hardware("l40s"), network("ib-ndr")
GIB = 2**30
H100_CAP = 81_559 * 2**20
PSI_8B = 8_030_261_248  # Llama-3-8B's published parameter count ("8.03B")
PSI_70B = 70_553_706_496
PSI_7B = 6_738_415_616  # Llama-2-7B


def _step(device_s, comm_s=0.0, latency_s=0.0, comms=()):
    return ParallelStep(device_s, device_s, comm_s, latency_s, tuple(comms))


def _run(tp, decode, prefill=None, weights=0, max_batch=None):
    return ParallelInference(
        Split(tp=tp), weights, 0, 0, None, max_batch, prefill or decode, decode
    )


def test_link_figures_are_per_direction():
    f = mg.link_figures(H100, L40S, IB)
    assert f["nvlink"] == 450.0 and f["nvlink_both"] == 900.0  # 900 GB/s is both directions
    assert f["pcie"] == pytest.approx(31.5)
    assert f["pcie_ratio"] == pytest.approx(450 / 31.5)  # 14.3
    assert f["ib"] == 50.0 and f["ib_gbit"] == 400.0 and f["ib_ratio"] == 9.0
    assert f["lat_nvlink"] == pytest.approx(0.6) and f["lat_ib"] == pytest.approx(2.7)
    assert f["base_us"] == pytest.approx(6.6) and f["nccl_version"] == "2.30.7"


def test_bytes_per_parameter():
    # ZeRO: 2 (BF16 weights) + 2 (BF16 gradients) + 12 (FP32 master weights, momentum, variance)
    assert mg.bytes_per_parameter() == {"weights": 2, "gradients": 2, "optimizer": 12, "total": 16}
    # Megatron's FP32 main_grad: 2 + 4 + 12
    assert mg.bytes_per_parameter("bf16", "fp32")["total"] == 18


def test_parameter_figures():
    f = mg.parameter_figures(model("llama-3-8b"), "psi8")
    # a layer: q and o 4096 x 4096, k and v 4096 x 1024, gate, up and down 4096 x 14336; plus the
    # LM head 128256 x 4096
    mm = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
    assert f["psi8"] == PSI_8B and f["psi8_mm"] == mm == 7_504_658_432
    assert f["psi8_yi"] == pytest.approx(80.3, abs=0.05) and f["psi8_mm_yi"] == mm / 1e8


def test_all_reduce_figures_switch_reduction():
    f = mg.all_reduce_figures(H100, 16384, 8)
    # NVLink SHARP: each GPU sends its 16 KiB once at 450 GB/s = 36.4 ns
    assert f["ar_bw_ns"] == pytest.approx(16384 / 450e9 * 1e9)
    # NCCL: 6.6 µs base + 2 x (8 - 1) ring steps x 0.6 µs = 15.0 µs
    assert f["ar_lat_us"] == pytest.approx(6.6 + 14 * 0.6) and f["ring_steps"] == 14
    # 8 GB sent once: algbw 450 GB/s; busbw = algbw x 2 (8 - 1) / 8 = 787.5 GB/s
    assert f["nvls_allowed"] == pytest.approx(787.5)


def test_tp_decode_figures_by_hand():
    # one GPU 20 ms; TP 8: 2.6 ms of operators, 20 µs of bandwidth, 161 all-reduces whose NCCL
    # latency totals 2.4 ms
    ar = Comm("TP", "all_reduce", 161, 16384, 8, "nvlink", CommTime(2.4e-3, 20e-6))
    one = _run(1, _step(20e-3), weights=2 * PSI_70B)
    eight = _run(8, _step(2.6e-3, 20e-6, 2.4e-3, [ar]), weights=2 * PSI_70B // 8)
    f = mg.tp_decode_figures(one, eight, model("llama-3-70b"), H100, oneshot_us=8.0)
    assert f["n_ar"] == 161 and f["oneshot_ms"] == pytest.approx(161 * 8e-3)  # 1.288 ms
    assert f["speedup_bound"] == pytest.approx(20 / 2.6)  # 7.69
    assert f["speedup_latency"] == pytest.approx(20 / (2.6 + 2.4))  # 4.0
    assert f["speedup_oneshot"] == pytest.approx(20 / (2.6 + 1.288))  # 5.14
    assert f["oneshot_extra"] == pytest.approx(1.288 / 2.6)
    assert f["t8_share"] == pytest.approx(0.020 / 2.62)
    assert f["t8_comm_us"] == pytest.approx(20) and f["t8_lat_ms"] == pytest.approx(2.4)
    # 70.55e9 BF16 weights: 141.1 GB, 17.64 GB a GPU at TP 8, read in 17.64 / 3350 s = 5.27 ms
    assert f["w_all_gb"] == pytest.approx(141.107, abs=1e-3)
    assert f["est_w8_gb"] == pytest.approx(2 * PSI_70B / 8 / 1e9)
    assert f["est_t8_ms"] == pytest.approx(2 * PSI_70B / 8 / 3.35e12 * 1e3)  # 5.27
    assert f["w1_gib"] == pytest.approx(2 * PSI_70B / GIB)
    assert f["h100_cap_gib"] == pytest.approx(H100_CAP / GIB) and f["h100_hbm_tb"] == 3.35


def test_tp_decode_figure_stacks_the_terms(zh):
    one = _run(1, _step(20e-3))
    two = _run(2, _step(10e-3, 1e-3, 0.5e-3))
    fig = mg.tp_decode_figure({1: one, 2: two}, "标题")
    ax = fig.axes[0]
    bars = [(p.get_height(), p.get_y()) for p in ax.patches]
    # device 20 and 10 ms; bandwidth 0 and 1 ms on top; latency 0 and 0.5 ms on top of both
    expected = [(20, 0), (10, 0), (0, 20), (1, 10), (0, 20), (0.5, 11)]
    assert [v for b in bars for v in b] == pytest.approx([v for b in expected for v in b])
    (line,) = ax.lines
    assert list(line.get_ydata()) == pytest.approx([20, 10])  # one GPU's 20 ms over p
    assert ax.get_title() == "标题" and ax.get_xlabel() == "TP 份数 p"
    assert "单卡的 1/p" in {t.get_text() for t in ax.get_legend().get_texts()}


def test_comm_roofline_figure_marks_the_point_on_the_first_roof(zh):
    links = {"NVLink": 450e9, "InfiniBand NDR": 50e9}
    fig = mg.comm_roofline_figure(H100, links, {"DP": 1e5}, ("TP 8", 1000.0), "t")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["NVLink，450 GB/s", "InfiniBand NDR，50 GB/s"]
    # 1000 FLOP/byte x 450 GB/s = 450 TFLOP/s, under the 989.4 TFLOP/s roof
    diamonds = [c for c in ax.collections if c.get_paths() and len(c.get_offsets()) == 1]
    assert any(tuple(c.get_offsets()[0]) == pytest.approx((1000, 450)) for c in diamonds)
    (note,) = [t for t in ax.texts if t.get_text() == "TP 8"]
    assert note.xy == pytest.approx((1000, 450))
    assert ax.get_ylim()[1] == 8000 and ax.get_xlim()[0] <= 100


def test_dp_sync_figures_hierarchical():
    dp = train(model("llama-3-8b"), H100, TrainSplit(dp=64), batch=512, seq=4096)
    f = mg.dp_sync_figures(dp, H100, IB)
    grad = 2 * PSI_8B  # BF16 gradients, 16.06 GB
    assert f["dp_grad_gb"] == pytest.approx(grad / 1e9)
    assert f["dp_nvl_ms"] == pytest.approx(grad / 450e9 * 1e3)  # sent once: 35.7 ms
    nic = 2 * 7 / 8 * (grad / 8) / 50e9  # each NIC: a ring of 8 nodes over 1/8: 70.3 ms
    assert f["dp_nic_ms"] == pytest.approx(nic * 1e3) == f["dp_comm_ms"]  # the NIC is busiest
    ring = 2 * 7 / 8 * grad / 450e9  # the in-node ring instead of the switch: 62.5 ms
    assert f["dp_sum_ms"] == pytest.approx((ring + nic) * 1e3)
    # busbw = algbw x 2 (64 - 1) / 64: the bound allows 450 GB/s, the sum only 238
    assert f["dp_busbw"] == pytest.approx(grad / nic * 126 / 64 / 1e9) == pytest.approx(450)
    assert f["dp_sum_busbw"] == pytest.approx(grad / (ring + nic) * 126 / 64 / 1e9)
    # 16 bytes a parameter alone is 128.5 GB, over the 85.5 GB of an H100
    assert f["dp_fits"] == "放不下" and f["dp_mem_gib"] > 16 * PSI_8B / GIB
    assert f["per_node"] == 8 and f["node_nic"] == 400.0  # 8 NICs x 50 GB/s


def test_ring_over_switch():
    assert mg.ring_over_switch(8) == 2 * 7 / 8 and mg.ring_over_switch(2) == 1.0


def test_device_contrast():
    f = mg.device_contrast(H100, H20, "h100", "h20")
    assert (f["h100_bw"], f["h20_bw"]) == (3.35, 4.0)
    assert f["h100_cap"] == pytest.approx(H100_CAP / GIB)  # 79.6 GiB
    assert f["h20_cap"] == pytest.approx(97_871 * 2**20 / GIB)  # 95.6 GiB
    assert f["h100_peak"] == 989.4 and f["h20_peak"] == 148.0
    assert f["peak_share"] == pytest.approx(148 / 989.4)  # 15 %
    assert f["h100_rated_mhz"] == pytest.approx(989.4e12 / (132 * 4096) / 1e6, rel=1e-4)  # 1830


def test_serving_contrast():
    # decode 0.58 ms against 0.49; prefill 8.7 ms against 52.8, with 1 ms of communication
    a = _run(8, _step(0.58e-3), prefill=_step(8.7e-3, 1e-3), max_batch=100)
    b = _run(8, _step(0.49e-3), prefill=_step(52.8e-3, 1e-3), max_batch=120)
    f = mg.serving_contrast(a, b, "x", "y")
    assert (f["s_x_batch"], f["s_y_batch"]) == (100, 120)
    assert f["s_x_dec"] == pytest.approx(0.58) and f["s_y_pre"] == pytest.approx(52.8)
    assert f["s_dec_gain"] == pytest.approx(0.58 / 0.49 - 1)  # y decodes 18 % faster
    assert f["s_pre_ratio"] == pytest.approx(52.8 / 8.7)
    assert f["s_pre_comm"] == pytest.approx(1 / 9.7) and f["s_pre_comm_y"] == pytest.approx(
        1 / 53.8
    )


def test_activation_figures_llama3_8b():
    f = mg.activation_figures(model("llama-3-8b"), 4096)
    h, ff = 4096, 14336
    # eager PyTorch, a token and a layer: each RMSNorm keeps its BF16 input, the FP32 upcast, its
    # BF16 output (8h) and an FP32 rstd; attention keeps q, k, v, out (2h + 2 x 2 x 1024 + 2h) and
    # 32 FP32 log-sum-exps; SwiGLU keeps gate, SiLU, up and their product (4 x 2 ff)
    norm = 8 * h + 4
    attention = 2 * h + 4 * 1024 + 2 * h + 32 * 4
    eager = 2 * norm + attention + 4 * 2 * ff  # 200,840 bytes = 49.0 h
    assert f["act_eager_h"] == pytest.approx(eager / h)
    assert f["act_norm_h"] == pytest.approx(norm / h)
    # fused kernels: each norm its input and output and rstd, SwiGLU its input (gate and up)
    # and the product that down reads
    assert f["act_fused_h"] == pytest.approx((2 * (4 * h + 4) + attention + 3 * 2 * ff) / h)
    # a 4096-token sequence: 32 layers; BF16 logits 4096 x 128256 x 2, FP32 log-softmax x 4
    assert f["act_seq_gb"] == pytest.approx(eager * 4096 * 32 / 1e9)  # 26.3 GB
    assert f["act_logits_gb"] == pytest.approx(4096 * 128256 * 2 / 1e9)  # 1.05 GB
    assert f["act_loss_gb"] == pytest.approx(4096 * 128256 * 4 / 1e9)  # 2.10 GB


def _fp32_train(config, split, **kw):
    return train(config, H100, split, batch=512, seq=4096, grad_dtype="fp32", **kw)


def test_fsdp_step_figures_llama2_7b():
    s = _fp32_train(model("llama-2-7b"), TrainSplit(dp=64, zero=3))
    f = mg.fsdp_step_figures(s, 512 // 64, "s7")
    # 8 sequences a replica, micro-batch 1: 8 micro-steps, each gathering the weights for the
    # forward and again for the backward, and scattering the gradients once
    assert (f["s7_seqs"], f["s7_steps"], f["s7_gathers"], f["s7_scatters"]) == (8, 8, 16, 8)
    # the 8 micro-steps' communication (0.94 s) hides under their compute (1.42 s)
    assert f["s7_hidden"] == "盖得住"
    # ZeRO-3: 18 bytes a parameter split 64 ways, plus the activations
    assert f["s7_mem"] - f["s7_act"] >= 18 * PSI_7B / 64 / GIB
    late = TrainComm("g", "reduce_scatter", 1, 1.0, 64, "ib-ndr", CommTime(0.0, 10.0))
    step = TrainingStep(1.0, 0.0, (late,), {"activations": 0.0}, 1, 64, 1e15)
    assert mg.fsdp_step_figures(step, 1, "x")["x_hidden"] == "盖不住"  # 10 s against 1 s


def test_pipeline_step_figures_llama3_70b():
    s = _fp32_train(
        model("llama-3-70b"),
        TrainSplit(dp=2, tp=8, pp=4, zero=1),
        recompute=True,
        saving="fused",
    )
    f = mg.pipeline_step_figures(s, 512 // 2, "s70")
    # 256 micro-batches of one sequence through 4 stages: bubble (4 - 1) / (256 + 4 - 1)
    assert f["s70_micro"] == 256 == f["s70_seqs"]
    assert f["s70_bubble"] == pytest.approx(3 / 259)
    # 20 layers a stage, 2 all-reduces a layer in the forward, the backward and the recompute
    assert f["s70_tp_n"] == 256 * 20 * 3 * 2
    assert f["s70_exposed"] > f["s70_step"] and f["s70_mfu"] < f["s70_mfu_overlap"]


def test_fsdp_variant_figures():
    m = model("llama-2-7b")
    base, micro, kept = (
        _fp32_train(m, TrainSplit(dp=64, zero=3, reshard=r), micro_batch=b)
        for b, r in ((1, True), (8, True), (1, False))
    )
    f = mg.fsdp_variant_figures(base, micro, kept, H100)
    # kept gathered: a whole BF16 copy of the weights less this GPU's 1/64 shard: 13.27 GB
    assert f["kept_extra"] == pytest.approx(2 * PSI_7B * 63 / 64 / 1e9)
    assert f["train_cap"] == pytest.approx(H100_CAP / GIB)
    # micro-batch 8 holds 8 sequences' activations, 8 x 22.8 GiB, above the 79.65 GiB
    assert f["mb8_fits"] == "放不进"
    # G = one all-gather of the BF16 weights, a reduce-scatter of FP32 gradients = 2G.
    # Micro-batch 8: one micro-step, 2G + 2G = 4G; kept: G + 8 x 2G = 17G; base: 16G + 16G = 32G
    assert f["kept_comm"] == pytest.approx(17 / 4 * f["mb8_comm"])
    assert base.communication_s == pytest.approx(32 / 4 * f["mb8_comm"])
    # G: a node fetches the (64 - 8) / 64 of the 2 x 6.74e9 bytes held outside it through its
    # 8 NICs of 50 GB/s: 29.5 ms
    assert f["mb8_comm"] == pytest.approx(4 * (2 * PSI_7B * 56 / 64 / 8 / 50e9))


def test_zero_memory_figures_llama3_8b():
    m = model("llama-3-8b")
    steps = {z: _fp32_train(m, TrainSplit(dp=64, zero=z)) for z in (0, 1, 2, 3)}
    f = mg.zero_memory_figures(steps, H100, "ans3")
    act = f["ans3_act"] * GIB
    # 2 + 4 + 12 bytes a parameter; each stage divides one more term by 64
    for z, per_param in ((0, 18), (1, 6 + 12 / 64), (2, 2 + 16 / 64), (3, 18 / 64)):
        assert f[f"ans3_z{z}"] == pytest.approx((per_param * PSI_8B + act) / GIB)
    # ZeRO-1: 6.19 x 8.03e9 = 49.7 GB + 29.6 GB of activations = 79.3 GB < 85.5 GB
    assert f["ans3_first"] == 1
    assert mg.zero_memory_figures({0: steps[0]}, H100, "a")["a_first"] is None
