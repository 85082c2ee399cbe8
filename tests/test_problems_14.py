"""Chapter 14's numbers and problem answers, as the built book glued them, by hand.

Shapes from the models' config.json; links from the catalog, per direction (test_parallel
checks them against the vendors' two-way figures): H100 NVLink 450 GB/s, InfiniBand NDR
50 GB/s. Latency, NCCL 2.30.7's tuning model (src/graph/tuning.cc): 6.6 us a collective
(baseLat, Ring, LL) and 0.6 us a ring step on NVLink (hwLat). Everything BF16.
"""

import pytest

from roofline_book import hardware

CH14 = "chapters/16-multi-gpu"
H100 = hardware("h100-sxm")
PEAK, HBM, CAP = H100.peak_flops("bf16"), H100.memory_bandwidth, H100.memory_capacity
NVLINK, NDR, ALPHA, BASE = 450e9, 50e9, 0.6e-6, 6.6e-6

# Llama-3-70B: hidden 8192, 80 layers, 64 query and 8 KV heads of 128, MLP 28672, vocab 128256
H, L, KV, F, V = 8192, 80, 1024, 28672, 128256
LAYER = 2 * (H * H + 2 * H * KV + H * H + 3 * H * F)  # BF16 bytes of one layer's matrices
# Llama-3-8B: 4096, 32 layers, 32 and 8 heads, MLP 14336
P8 = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 2 * 128256 * 4096 + 4096
N8 = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096


@pytest.mark.site
def test_links_and_the_decode_on_8_h100(glued):
    g = glued(CH14)
    assert g["nvlink"] == 450 and g["nvlink_both"] == 900 and g["ib"] == 50
    # 161 all-reduces (2 a layer, 1 for the embedding) of 14 ring steps, and the logits'
    # all-gather of 7 steps, each with NCCL's fixed 6.6 us: 161 x 15.0 + 10.8 us = 2.43 ms
    assert g["n_ar"] == 161 and g["ring_steps"] == 14
    # the text splits the 15.0 us as NCCL's base 6.6 us + 14 ring steps x 0.6 us (= 8.4 us)
    assert (g["base_us"], g["lat_nvlink"]) == (pytest.approx(6.6), pytest.approx(0.6))
    assert g["ar_lat_us"] == pytest.approx((BASE + 14 * ALPHA) * 1e6) == pytest.approx(15.0)
    assert g["t8_lat_ms"] == pytest.approx((161 * (BASE + 14 * ALPHA) + BASE + 7 * ALPHA) * 1e3)
    # with sglang's one-shot kernel instead (5.7 us for 4096 FP32 = 16 KiB, the size of one
    # token's 8192 BF16 activations): 161 x 5.7 us = 0.918 ms
    assert g["custom_us"] == pytest.approx(5.7) and g["oneshot_ms"] == pytest.approx(161 * 5.7e-3)
    assert g["speedup_oneshot"] == pytest.approx(g["t1_ms"] / (g["t8_ms"] + 161 * 5.7e-3))
    assert g["speedup_latency"] < g["speedup_oneshot"] < g["speedup_bound"]
    # weights per device: 80 layers' matrices / 8, their norms whole, the two tables / 8
    w8 = 80 * (LAYER // 8 + 2 * 2 * H) + 2 * (2 * V * H) // 8 + 2 * H
    assert g["w8_gb"] == pytest.approx(w8 / 1e9)
    # the bound streams them and 1/8 of the 4096-token cache (80 x 2 x 1024 x 2 x 4096 / 8)
    assert g["t8_dev_ms"] == pytest.approx((w8 + 80 * 2 * KV * 2 * 4096 / 8) / HBM * 1e3, rel=0.02)
    assert 7.9 < g["speedup_bound"] <= 8.0 and g["speedup_latency"] < g["speedup_bound"]


@pytest.mark.site
def test_the_communication_roofline(glued):
    g = glued(CH14)
    assert g["i_nvlink"] == pytest.approx(PEAK / NVLINK)
    assert g["i_ib"] == pytest.approx(PEAK / NDR)
    # DP as train() does it on 8 nodes of 8: in the node the switch reduces (2 P bytes out once
    # over NVLink, 35.7 ms), across the nodes each GPU's NIC carries 2 x 7/8 of 1/8 (70.3 ms);
    # the phases are pipelined on different links, so the bound is the busier, not the sum
    g_ = 2 * P8
    hier = max(g_ / NVLINK, 2 * 7 / 8 * (g_ / 8) / NDR)
    assert g["dp_comm_ms"] == pytest.approx(hier * 1e3) == pytest.approx(70.26, rel=1e-3)
    assert g["t_dp"] == pytest.approx(hier * PEAK / (4 * N8))
    # the busbw it allows, 2 x 63/64 x 2P / t = 450 GB/s, is above the ~380 GB/s measured across
    # nodes (NVIDIA/nccl#1649); the sum of the ring phases, 132.7 ms, allowed only 238 GB/s
    assert g["dp_busbw"] == pytest.approx(2 * 63 / 64 * g_ / hier / 1e9)
    assert g["dp_busbw"] > g["multinode_busbw"] == 380
    summed = 2 * 7 / 8 * g_ / NVLINK + 2 * 7 / 8 * (g_ / 8) / NDR
    assert g["dp_sum_busbw"] == pytest.approx(2 * 63 / 64 * g_ / summed / 1e9)
    assert g["dp_sum_busbw"] < 380
    # a node's NICs together, the scaling book's W beyond the node: 8 x 400 Gb/s = 400 GB/s
    assert g["node_nic"] == 8 * NDR / 1e9 == 400
    # NCCL's flat ring, one channel per NIC: each GPU's NIC carries 1/8 of 2 x 63/64 x 2 P
    assert g["t_flat"] == pytest.approx(2 * 63 / 64 * 2 * P8 / 8 / NDR * PEAK / (4 * N8))
    # TP 8 MLP width: 6 h w / peak = 1 x 2 h / B with an NVSwitch that reduces (each GPU sends
    # its h values once and receives the sum once), the ring's 2 (n-1)/n x 2 h / B over
    # InfiniBand: 989.4e12 x 2 / 450e9 / 6 = 732.9
    assert g["w_nvlink"] == pytest.approx(PEAK * (2 / NVLINK) / 6)
    assert round(g["w_nvlink"]) == 733
    assert g["w_ib"] == pytest.approx(PEAK * (2 * 7 / 8 * 2 / NDR) / 6)
    assert g["w_nvlink"] < g["w70"] == F / 8 < g["w_ib"]


@pytest.mark.site
def test_problem_answers(glued):
    g = glued(CH14)
    # 1. TP 4 x PP 2: 40 layers a stage, each 1/4 of a layer; one of the two tables, / 4
    w = 40 * (LAYER // 4 + 2 * 2 * H) + (2 * V * H) // 4 + 2 * H
    assert g["ans1_w"] == pytest.approx(w / 1e9)
    assert 1.9 < g["ans1_ratio"] < 2.05  # two stages of 4 devices, one after the other
    # 2. DP all in one NVLink domain whose switch reduces: 2 P bytes sent once, 2 P / 450e9;
    # against the hierarchical bound, the NIC's 2 x 7/8 / (8 x 50e9) a byte: 1.75 x 450 / 400
    assert g["ans2"] == pytest.approx(2 * P8 / NVLINK * PEAK / (4 * N8))
    assert g["ans2_ratio"] == pytest.approx(1.75 * NVLINK / (8 * NDR)) == 1.96875


# Llama-2-7B: 4096, 32 layers, 32 heads (no GQA), MLP 11008, vocab 32000, untied
P7 = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
N7 = 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 32000 * 4096
# what one token leaves saved for the backward in eager PyTorch (transformers' Llama layer):
# each RMSNorm its FP32 copy 4h, 1/rms 4 B, the BF16 normalised x 2h and its output 2h;
# attention q, k, v and output (2q + 2kv + 2kv + 2q) and an FP32 log-sum-exp a head; SwiGLU
# 4 x 2F. The LM head: the final norm, BF16 logits 2V, the loss's FP32 log-softmax 4V.
# (tests/test_training.py holds these against torch's saved_tensors_hooks.)
NORMS = 2 * (4 * 4096 + 4 + 2 * 4096 + 2 * 4096)  # 65,544
LAYER8 = NORMS + (2 * 4096 + 2 * 1024 + 2 * 1024 + 2 * 4096 + 4 * 32) + 4 * 2 * 14336  # 200,840
LAYER7 = NORMS + (2 * 4096 + 2 * 4096 + 2 * 4096 + 2 * 4096 + 4 * 32) + 4 * 2 * 11008  # 186,504
HEAD8 = 8 * 4096 + 4 + 6 * 128256
HEAD7 = 8 * 4096 + 4 + 6 * 32000


@pytest.mark.site
def test_problem_3_memory_by_zero_stage(glued):
    g = glued(CH14)
    # micro-batch 1: one 4096-token sequence's activations, 32 layers and the LM head
    act = (LAYER8 * 32 + HEAD8) * 4096
    assert g["ans3_act"] == pytest.approx(act / 2**30)
    # 2 bytes a weight, FP32 gradients (Megatron's main_grad, Llama 3's reduce-scatter) 4,
    # Adam 12, divided by 64 as each stage shards them
    expected = {
        0: 18 * P8 + act,
        1: 6 * P8 + 12 * P8 / 64 + act,
        2: 2 * P8 + 16 * P8 / 64 + act,
        3: 18 * P8 / 64 + act,
    }
    for z, m in expected.items():
        assert g[f"ans3_z{z}"] == pytest.approx(m / 2**30), z  # GiB, as capacities are
    assert g["ans3_first"] == min(z for z, m in expected.items() if m <= CAP) == 1


@pytest.mark.site
def test_the_training_step_as_configured(glued):
    g = glued(CH14)
    assert g["act_eager_h"] == pytest.approx(LAYER8 / 4096)  # 49.03 h, not 34
    assert g["act_logits_gb"] == pytest.approx(4096 * 128256 * 2 / 1e9)
    assert g["act_loss_gb"] == pytest.approx(4096 * 128256 * 4 / 1e9)
    assert g["train_peak"] == pytest.approx(PEAK / 1e12)
    # Megatron-Core's distributed-optimizer table: bf16 parameters, fp32 gradients, 18 bytes
    assert g["megatron_bytes"] == 18 and g["fp32_grad"] == 4
    # 7B, FSDP over 64, 8 sequences a GPU one at a time: 8 micro-steps, each all-gathering the
    # weights for its forward and its backward and reduce-scattering its gradients
    assert (g["s7_steps"], g["s7_gathers"], g["s7_scatters"]) == (8, 16, 8)
    compute = 3 * (2 * N7 + 2 * 4096 * 4096 * 32) * 512 * 4096 / 64 / PEAK
    assert g["s7_compute"] == pytest.approx(compute)
    act7 = (LAYER7 * 32 + HEAD7) * 4096
    assert g["s7_mem"] == pytest.approx((18 * P7 / 64 + act7) / 2**30)
    assert g["s7_step"] == pytest.approx(max(compute, g["s7_comm"]))
    # one micro-step of 8 sequences: a single round of collectives, 8 sequences' activations
    assert g["s7_comm"] == pytest.approx(8 * g["mb8_comm"])
    assert g["mb8_mem"] == pytest.approx((18 * P7 / 64 + 8 * act7) / 2**30)
    assert g["mb8_mem"] * 2**30 > CAP and g["mb8_fits"] == "放不进"
    # weights kept gathered for the step: the 16-bit weights whole, 63/64 more of them
    assert g["kept_extra"] == pytest.approx(2 * P7 * 63 / 64 / 1e9)
    # 70B: 256 micro-batches a replica through 4 stages; with recompute 6 all-reduces a layer
    # a micro-batch, 20 layers a stage, of 4096 x 8192 BF16 activations at 450 GB/s
    assert g["s70_micro"] == 256 and g["s70_bubble"] == pytest.approx(3 / 259)
    assert g["s70_tp_n"] == 6 * 20 * 256
    tp = 6 * 20 * 256 * 4096 * 8192 * 2 / NVLINK
    assert g["s70_tp"] == pytest.approx(tp)
    n70 = 80 * (2 * H * H + 2 * H * KV + 3 * H * F) + V * H
    flops = 4 * (2 * n70 + 2 * 4096 * H * 80) * 512 * 4096  # recompute: a fourth pass
    compute70 = flops / 64 / PEAK / (1 - 3 / 259)
    model_flops = 3 * (2 * n70 + 2 * 4096 * H * 80) * 512 * 4096
    # the headline keeps Megatron's TP all-reduces on the critical path
    assert g["s70_exposed"] >= compute70 + tp
    assert g["s70_mfu"] == pytest.approx(model_flops / (64 * PEAK * g["s70_exposed"]))
    assert g["s70_mfu"] < model_flops / (64 * PEAK * (compute70 + tp)) * (1 + 1e-9)
    assert g["s70_mfu_overlap"] == pytest.approx(model_flops / (64 * PEAK * g["s70_step"]))
    # ZeRO-1's reduce-scatter waits for the last micro-batch's backward (3/4 of its FLOPs with
    # recompute): FP32 gradients of 1/32 of the weights, half a ring of 2 over the NIC
    p70 = 80 * (LAYER // 2 + 2 * H) + 2 * V * H + H  # weights (LAYER is in bytes)
    assert g["s70_window"] == pytest.approx(flops / 64 / PEAK / 256 * 3 / 4 * 1e3)
    assert g["s70_rs"] == pytest.approx(1 / 2 * 4 * p70 / 32 / NDR * 1e3)
    assert g["s70_rs"] > g["s70_window"]


@pytest.mark.site
def test_the_estimate_first_problem_and_its_conventions(glued):
    g = glued(CH14)
    # Llama-3-70B's BF16 weights, 70,553,706,496 parameters x 2 bytes = 141.1 GB; an eighth each
    # read at 3.35 TB/s: 17.64 GB / 3.35e12 = 5.27 ms, the bound's 5.24 ms without the KV cache
    # and with the norms whole
    assert g["w_all_gb"] == pytest.approx(2 * 70_553_706_496 / 1e9)
    assert g["est_w8_gb"] == pytest.approx(g["w_all_gb"] / 8)
    assert g["h100_hbm_tb"] == pytest.approx(HBM / 1e12) == pytest.approx(3.35)
    assert g["est_t8_ms"] == pytest.approx(g["w_all_gb"] / 8 / 3.35)
    assert g["est_t8_ms"] == pytest.approx(g["t8_ms"], rel=0.02)
    # 161 one-shot all-reduces of 5.7 us on top of the bound: 0.918 / 5.24 = 17.5 %
    assert g["oneshot_extra"] == pytest.approx(161 * 5.7e-3 / g["t8_ms"])
    # problem 3 states Llama-3-8B's counts: all parameters and those of the matrix products
    assert (g["psi8"], g["psi8_mm"]) == (P8, N8)
    assert g["psi8_yi"] == pytest.approx(P8 / 1e8) and g["psi8_mm_yi"] == pytest.approx(N8 / 1e8)
    # 8 sequences of 4096 tokens a GPU on the communication roofline
    assert g["tokens_per_gpu"] == 8 * 4096


@pytest.mark.site
def test_the_dp_example_and_problem_4_state_their_gradient_bytes(glued):
    g = glued(CH14)
    # the DP section keeps BF16 gradients: 2 + 2 + 12 = 16 bytes a parameter, 2 P8 bytes reduced
    assert g["bytes_per_param"] == 16 and g["dp_grad_gb"] == pytest.approx(2 * P8 / 1e9)
    act = (LAYER8 * 32 + HEAD8) * 4096  # micro-batch 1, as in problem 4
    assert g["dp_mem_gib"] == pytest.approx((16 * P8 + act) / 2**30)
    # the training-step section and problem 4 use FP32 gradients (Megatron): 2 + 4 + 12 = 18,
    # so the same setting without ZeRO needs 2 P8 bytes more
    assert g["megatron_bytes"] == 18 and g["fp32_grad"] == 4
    assert g["ans3_z0"] - g["dp_mem_gib"] == pytest.approx(2 * P8 / 2**30)
