"""The numbers of section 15 (collectives), as the built book shows them, recomputed by hand.

Each expected value is arithmetic written out from the alpha-beta costs (ring all-reduce:
2(n-1) steps, 2(n-1)/n x S per rank, Patarasuk & Yuan 2009; binomial tree: 2 ceil(log2 n)
steps of the whole buffer, Thakur et al. 2005) and nccl-tests' doc/PERFORMANCE.md (algbw = S/t,
all-reduce busbw = algbw x 2(n-1)/n), not by calling the package.
"""

import json

import pytest
from conftest import BUILD

pytestmark = pytest.mark.site  # reads the built book's glued values

CH15 = "chapters/15-collectives"

B, ALPHA = 400e9, 2e-6  # the section's illustrative link: byte/s per direction, s per step


def _markdown(name: str) -> str:
    glue = json.loads((BUILD / "jupyter_execute" / f"{CH15}.glue.json").read_text("utf-8"))
    return glue[name]["data"]["text/markdown"]


def test_the_shape_table(glued):
    glued(CH15)  # fails with a clear message when the book is not built
    table = _markdown("tbl-15-shape")
    # n = 8: ring all-reduce 14 steps, f = 1.75; tree 6 steps, f = 6; all-gather 7, 0.875
    assert "| all-reduce     | ring   |       14 |     1.75 |         1.75 |" in table
    assert "| all-reduce     | tree   |        6 |        6 |         1.75 |" in table
    assert "| all-gather     | ring   |        7 |    0.875 |        0.875 |" in table
    assert "| broadcast      | tree   |        3 |        3 |            1 |" in table
    assert "| send-recv      | ring   |        1 |        1 |            1 |" in table


def test_latency_and_half_bandwidth(glued):
    g = glued(CH15)
    # 64 KiB: 14 x 2 us = 28 us latency + 1.75 x 65536 / 400e9 = 0.28672 us
    assert g["ar_small_us"] == pytest.approx(28 + 0.28672)
    assert g["ar_small_lat"] == pytest.approx(28 / 28.28672)
    # 1 GiB: 28 us + 1.75 x 2**30 / 400e9 s = 4.697620 ms
    assert g["ar_large_ms"] == pytest.approx(0.028 + 1.75 * 2**30 / 400e9 * 1e3)
    # S_1/2 = 14 x 2e-6 x 400e9 / 1.75 = 6.4 MB
    assert g["ar_half_mb"] == pytest.approx(6.4)


def test_ring_tree_crossovers(glued):
    g = glued(CH15)
    # n = 8: (14 - 6) alpha B / (6 - 1.75); n = 64: (126 - 12) alpha B / (12 - 126/64)
    assert g["cross8_mb"] == pytest.approx(8 * ALPHA * B / 4.25 / 1e6)
    assert g["cross64_mb"] == pytest.approx(114 * ALPHA * B / (12 - 126 / 64) / 1e6)
    assert (g["ring64_k"], g["tree64_k"]) == (126, 12)


def test_algbw_falls_busbw_does_not(glued):
    g = glued(CH15)
    # latency-free ring: algbw = B n / (2(n-1)): 400 at n = 2, 400 x 64/126 at n = 64
    assert g["algbw2"] == pytest.approx(400)
    assert g["algbw64"] == pytest.approx(400 * 64 / 126)


def test_hierarchical(glued):
    g = glued(CH15)
    S = 2**30
    # in node (8): reduce-scatter + all-gather: 14 x 2 us, 2 x 7/8 S / 400e9 = 4.70 ms
    # across (4 nodes): all-reduce of S/8: 6 x 10 us, 2 x 3/4 x S/8 / 50e9 = 4.03 ms
    # different links, pipelined: the busier one, plus every phase's latency
    inside, nic = 2 * 7 / 8 * S / 400e9, 1.5 * S / 8 / 50e9
    assert (g["h_in_ms"], g["h_nic_ms"]) == pytest.approx((inside * 1e3, nic * 1e3))
    assert g["h_ms"] == pytest.approx((14 * 2e-6 + 6 * 10e-6 + max(inside, nic)) * 1e3)
    # NCCL's flat ring (NVIDIA/nccl#471), one channel per NIC: each rank's 2 x 31/32 S goes 1/8
    # over its NIC (5.20 ms) and 7/8 over NVLink (4.55 ms); of 62 steps, 2 x 3 cross nodes
    ring = 56 * 2e-6 + 6 * 10e-6 + max(2 * 31 / 32 * S / 8 / 50e9, 2 * 31 / 32 * 7 / 8 * S / 400e9)
    assert g["ring_ms"] == pytest.approx(ring * 1e3)
    # a ring whose every hop crosses a NIC: 62 x 10 us, 2 x 31/32 S / 50e9
    every = 62 * 10e-6 + 2 * 31 / 32 * S / 50e9
    assert g["every_ms"] == pytest.approx(every * 1e3)
    assert g["every_gain"] == pytest.approx(every / ring)
    assert g["h_ms"] < g["ring_ms"] < g["every_ms"]


def test_published_busbw_against_the_link(glued):
    # nccl-tests on 8 H100 (NVIDIA/nccl-tests#212): ring 370 GB/s, 370 / 450 = 82% of the link;
    # NVLS 480 GB/s, above it
    g = glued(CH15)
    assert (g["ring_busbw"], g["nvls_busbw"], g["h100_link"]) == (370, 480, 450)
    assert g["ring_share"] == pytest.approx(370 / 450)


def test_the_measured_fit_is_glued(glued):
    g = glued(CH15)
    # a real two-process gloo run: loopback is slower than a link and faster than a modem
    assert 0 < g["m_alpha_us"] < 1e5
    assert 1e-3 < g["m_beta_gbs"] < 1e3
    assert g["m_points"] == 60  # six collectives x ten quick sizes
    assert g["m_largest_mib"] == pytest.approx(2.0)
    # all-reduce on 2 ranks: S_1/2 = k x (alpha / k) x beta / f = alpha x beta (f = 1)
    assert g["m_half_kb"] == pytest.approx(g["m_alpha_us"] * 1e-6 * g["m_beta_gbs"] * 1e9 / 1e3)
    # the largest point: busbw = algbw = 2 MiB / t at n = 2
    assert g["m_largest_busbw"] == pytest.approx(2 * 2**20 / (g["m_largest_ms"] * 1e-3) / 1e9)


def test_problem_answers(glued):
    g = glued(CH15)
    # 1. 30 x 10 us + 2 x 15/16 x 2e9 / 50e9 = 0.3 ms + 75 ms
    assert g["q1_ms"] == pytest.approx(75.3)
    assert g["q1_lat"] == pytest.approx(0.3 / 75.3)
    # 2. crossover 8 x 2e-6 x 400e9 / 4.25; activations 16 x 8192 x 2 = 262144 B = 256 KiB
    assert g["q2_cross_mb"] == pytest.approx(6.4e6 / 4.25 / 1e6)
    assert g["q2_act_kib"] == 256
    assert g["q2_ring_us"] == pytest.approx(28 + 1.75 * 262144 / 400e9 * 1e6)
    assert g["q2_tree_us"] == pytest.approx(12 + 6 * 262144 / 400e9 * 1e6)
    assert g["q2_tree_us"] < g["q2_ring_us"]
    # 3. algbw = 2**30 / 5e-3 = 214.748 GB/s; busbw x 7/4 = 375.810 GB/s;
    #    all-gather 7/8 x 2**30 / busbw = 5e-3 x (7/8) / (7/4) = 2.5 ms
    assert g["q3_algbw"] == pytest.approx(214.7483648)
    assert g["q3_busbw"] == pytest.approx(375.8096384)
    assert g["q3_ag_ms"] == pytest.approx(2.5)


def test_the_typed_parameters_and_expressions_are_glued(glued):
    g = glued(CH15)
    # the example link, 8 ranks x 400 GB/s x 2 us; 4 nodes x 8 ranks over 50 GB/s, 10 us NICs
    assert (g["ex_n"], g["ex_bw"], g["ex_alpha_us"]) == (8, pytest.approx(400), pytest.approx(2))
    assert (g["h_nodes"], g["h_per_node"], g["h_ranks"]) == (4, 8, 32)
    assert (g["h_nic_bw"], g["h_nic_alpha_us"]) == (pytest.approx(50), pytest.approx(10))
    # 1. 16 ranks: k = 2 x 15 = 30 steps, f = 2 x 15/16 = 15/8
    assert (g["q1_k"], g["q1_f"]) == (30, "15/8")
    # 2. n = 8: ring 14 steps, f 7/4; tree 2 x 3 = 6 steps, f 6
    assert (g["q2_k_ring"], g["q2_k_tree"], g["q2_f_ring"], g["q2_f_tree"]) == (14, 6, 1.75, 6)
    # 3. nccl-tests busbw factors at n = 8: all-reduce 2 x 7/8, all-gather 7/8; times halve
    assert (g["q3_ar_f"], g["q3_ag_f"], g["q3_ratio"]) == ("7/4", "7/8", "1/2")


def test_the_ring_rule_the_estimate_and_nvls(glued):
    g = glued(CH15)
    # 8 GPUs: each sends 2 x 7/8 = 1.75 times the message in a ring all-reduce
    assert (g["ar_p"], g["ar_f"]) == (8, pytest.approx(1.75))
    # problem 1's pencil estimate: twice 2 GB over 50 GB/s = 80 ms (the exact answer is 75.3)
    assert g["q1_est_ms"] == pytest.approx(80.0)
    # NVLink SHARP: each GPU sends the buffer once (f = 1) at 450 GB/s, so algbw may reach 450
    # and nccl-tests' ring factor makes that busbw 450 x 2 x 7/8 = 787.5 GB/s; 480 is under it
    assert g["nvls_allowed"] == pytest.approx(787.5)
    # the factor the text multiplies 450 by: 2 (p - 1)/p at p = 8 is 14/8 = 1.75
    assert g["nvls_factor"] == pytest.approx(1.75)
    assert g["nvls_allowed"] == pytest.approx(g["h100_link"] * g["nvls_factor"])
    assert g["ring_busbw"] < g["h100_link"] < g["nvls_busbw"] < g["nvls_allowed"]
    # NCCL 2.30.7's tuning model: 0.6 us a ring step on NVLink (hwLat)
    assert (g["h100_gpus"], g["h100_alpha_us"]) == (8, pytest.approx(0.6))


def test_the_ring_diagrams_counts(glued):
    g = glued(CH15)
    # the diagrams draw 4 GPUs: reduce-scatter and all-gather take 4 - 1 = 3 steps each
    assert (g["ring_fig_p"], g["ring_fig_steps"]) == (4, 3)
