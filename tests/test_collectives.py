"""The collectives' alpha-beta models, checked against hand arithmetic.

References: nccl-tests doc/PERFORMANCE.md and src/*.cu (*GetBw: the busbw factors and which
buffer is "size"); Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005 (binomial-tree reduce and broadcast: ceil(lg p) steps,
each moving the whole buffer); Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for
clusters of workstations", JPDC 69(2), 2009 (ring all-reduce: 2(p-1) steps of S/p). NCCL
builds only flat rings across nodes, one channel per NIC ("we only build flat rings, no 2D
ring", sjeaugey, NVIDIA/nccl#471); its tuning model (src/graph/tuning.cc, NCCL 2.30.7) gives a
ring 2(nNodes-1) network steps of its 2(n-1).
"""

import math

import pytest

from roofline_book.distributed.allreduce import (
    flat_ring_all_reduce,
    hierarchical_all_reduce,
    multi_node_all_reduce,
)
from roofline_book.distributed.collectives import (
    OPS,
    CommTime,
    algorithm_bandwidth,
    bus_bandwidth,
    bus_factor,
    collective_time,
    crossover_bytes,
    half_bandwidth_bytes,
)

GB = 1e9
US = 1e-6


def test_ops_are_the_six_collectives():
    assert OPS == (
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "broadcast",
        "send_recv",
    )


def test_ring_all_reduce_by_hand():
    # n = 8, S = 800 MB, B = 100 GB/s, alpha = 2 us
    # steps 2 x (8 - 1) = 14 -> 28 us; bytes sent per rank 2 x 7/8 x 800 MB = 1400 MB -> 14 ms
    t = collective_time("all_reduce", 800e6, 8, 100 * GB, 2 * US)
    assert t.latency_s == pytest.approx(28e-6)
    assert t.bandwidth_s == pytest.approx(14e-3)
    assert t.seconds == pytest.approx(14.028e-3)


def test_tree_all_reduce_by_hand():
    # n = 8: depth ceil(log2 8) = 3; reduce up + broadcast down = 6 steps, 6 x the buffer
    # S = 1 MB, B = 100 GB/s, alpha = 2 us: 12 us + 6 x 1e6 / 1e11 = 60 us
    t = collective_time("all_reduce", 1e6, 8, 100 * GB, 2 * US, algorithm="tree")
    assert t.latency_s == pytest.approx(12e-6)
    assert t.bandwidth_s == pytest.approx(60e-6)
    # n = 6 is not a power of two: depth ceil(log2 6) = 3 still
    t6 = collective_time("all_reduce", 1e6, 6, 100 * GB, 2 * US, algorithm="tree")
    assert t6.latency_s == pytest.approx(12e-6)


def test_tree_beats_ring_only_for_small_messages():
    # n = 16, alpha = 5 us, B = 50 GB/s.
    # ring: 30 alpha + 30/16 S/B;  tree: 8 alpha + 8 S/B  (depth 4)
    # equal where 22 alpha = (8 - 1.875) S/B  ->  S = 22 x 5e-6 x 50e9 / 6.125 = 897_959 B
    crossover = 22 * 5e-6 * 50e9 / 6.125
    args = (16, 50 * GB, 5 * US)
    small, large = crossover / 4, crossover * 4
    assert (
        collective_time("all_reduce", small, *args, algorithm="tree").seconds
        < collective_time("all_reduce", small, *args).seconds
    )
    assert (
        collective_time("all_reduce", large, *args, algorithm="tree").seconds
        > collective_time("all_reduce", large, *args).seconds
    )
    ring = collective_time("all_reduce", crossover, *args).seconds
    tree = collective_time("all_reduce", crossover, *args, algorithm="tree").seconds
    assert tree == pytest.approx(ring)


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter", "all_to_all"])
def test_n_minus_one_ops_by_hand(op):
    # n = 4, S = 4 MB (nccl-tests' size: the gathered output, the scattered input, the send
    # buffer), B = 100 GB/s, alpha = 5 us: 3 steps = 15 us; 3/4 x 4 MB = 3 MB -> 30 us
    t = collective_time(op, 4e6, 4, 100 * GB, 5 * US)
    assert t.latency_s == pytest.approx(15e-6)
    assert t.bandwidth_s == pytest.approx(30e-6)


def test_broadcast_and_send_recv_by_hand():
    # ring broadcast, n = 8: a pipelined chain, 7 hops for the first chunk, S/B on the wire
    # S = 1 GB, B = 200 GB/s, alpha = 1 us: 7 us + 5 ms
    t = collective_time("broadcast", 1e9, 8, 200 * GB, 1 * US)
    assert (t.latency_s, t.bandwidth_s) == pytest.approx((7e-6, 5e-3))
    # binomial-tree broadcast: 3 levels, each the whole buffer: 3 us + 15 ms
    t = collective_time("broadcast", 1e9, 8, 200 * GB, 1 * US, algorithm="tree")
    assert (t.latency_s, t.bandwidth_s) == pytest.approx((3e-6, 15e-3))
    # send/recv: one hop whatever n is
    t = collective_time("send_recv", 1e9, 2, 200 * GB, 1 * US)
    assert (t.latency_s, t.bandwidth_s) == pytest.approx((1e-6, 5e-3))


@pytest.mark.parametrize("op", OPS)
def test_one_device_moves_nothing(op):
    assert collective_time(op, 1e9, 1, 100 * GB, 1 * US) == CommTime(0.0, 0.0)


def test_ring_share_is_the_bus_factor():
    # the bytes a ring rank sends, as a share of size, equal nccl-tests' busbw factor, so the
    # busbw of a latency-free ring equals the link bandwidth for every n
    for op in OPS:
        for n in (2, 3, 8, 64):
            seconds = collective_time(op, 1e9, n, 100 * GB, 0.0).seconds
            busbw = bus_bandwidth(op, algorithm_bandwidth(1e9, seconds), n)
            assert busbw == pytest.approx(100 * GB), (op, n)


def test_bus_factors_from_nccl_tests():
    # doc/PERFORMANCE.md, "Summary": AllReduce 2(n-1)/n; ReduceScatter, AllGather, AlltoAll
    # (n-1)/n; Broadcast 1; src/sendrecv.cu SendRecvGetBw: factor = 1
    assert bus_factor("all_reduce", 8) == 14 / 8
    assert bus_factor("all_reduce", 2) == 1.0
    assert bus_factor("reduce_scatter", 8) == 7 / 8
    assert bus_factor("all_gather", 4) == 3 / 4
    assert bus_factor("all_to_all", 16) == 15 / 16
    assert bus_factor("broadcast", 8) == 1.0
    assert bus_factor("send_recv", 2) == 1.0


def test_bandwidth_conversions():
    # algbw = S / t: 256 MiB in 2 ms = 134.217728 GB/s; all-reduce busbw on 8: x 1.75
    algbw = algorithm_bandwidth(256 * 2**20, 2e-3)
    assert algbw == pytest.approx(134.217728e9)
    assert bus_bandwidth("all_reduce", algbw, 8) == pytest.approx(234.881024e9)
    assert bus_bandwidth("all_gather", algbw, 8) == pytest.approx(117.440512e9)


def test_hierarchical_all_reduce_by_hand():
    # 4 nodes x 8 GPUs, S = 1 GB; NVLink 450 GB/s, 1 us; NIC 50 GB/s, 10 us
    # in node: reduce-scatter then all-gather: 2 x 7 steps = 14 us; 2 x 7/8 GB / 450 GB/s
    # across:  all-reduce of S/8 = 125 MB over 4 ranks: 6 steps = 60 us; 2 x 3/4 x 125 MB / 50 GB/s
    # the phases use different links and are pipelined: the bound is the busier link
    t = hierarchical_all_reduce(1e9, 8, 4, 450 * GB, 1 * US, 50 * GB, 10 * US)
    assert t.latency_s == pytest.approx(14e-6 + 60e-6)
    nvlink, nic = 2 * 0.875e9 / 450e9, 1.5 * 0.125e9 / 50e9  # 3.89 ms, 3.75 ms
    assert t.bandwidth_s == pytest.approx(max(nvlink, nic)) == pytest.approx(3.889e-3, rel=1e-3)
    # NVLink SHARP: each GPU sends its 1 GB once into the switch, 2.22 ms; the NIC now binds
    reduced = hierarchical_all_reduce(1e9, 8, 4, 450 * GB, 1 * US, 50 * GB, 10 * US,
                                      intra_reduces=True)  # fmt: skip
    assert reduced.bandwidth_s == pytest.approx(nic)
    # one node: just the in-node ring all-reduce
    one = hierarchical_all_reduce(1e9, 8, 1, 450 * GB, 1 * US, 50 * GB, 10 * US)
    ring = collective_time("all_reduce", 1e9, 8, 450 * GB, 1 * US)
    assert one.seconds == pytest.approx(ring.seconds)


def test_flat_ring_with_a_channel_per_nic_by_hand():
    # 4 nodes x 8 ranks, 1 GiB; 400 GB/s inside, 50 GB/s per NIC (the chapter's numbers).
    # NCCL's flat ring: 8 channels, each leaves every node through one NIC, so each rank's
    # 2 x 31/32 x 1 GiB goes 1/8 over its NIC and 7/8 over NVLink
    s = 2**30
    t = flat_ring_all_reduce(s, 8, 4, 400 * GB, 2 * US, 50 * GB, 10 * US)
    nic = 2 * 31 / 32 * s / 8 / 50e9  # 5.20 ms
    nvlink = 2 * 31 / 32 * 7 / 8 * s / 400e9  # 4.55 ms
    assert (nic, nvlink) == (pytest.approx(5.202e-3, rel=1e-3), pytest.approx(4.552e-3, rel=1e-3))
    assert t.bandwidth_s == pytest.approx(nic)
    # NCCL's ring model: of 62 steps, 2 x (4 - 1) = 6 cross the network
    assert t.latency_s == pytest.approx(56 * 2e-6 + 6 * 10e-6)
    # every hop over a NIC (the ring NCCL does not build): 8 times the NIC's bytes
    every_hop = collective_time("all_reduce", s, 32, 50 * GB, 10 * US)
    assert every_hop.bandwidth_s == pytest.approx(8 * nic)
    # the hierarchical bound, max(4.70, 4.03) ms, is below the flat ring
    h = hierarchical_all_reduce(s, 8, 4, 400 * GB, 2 * US, 50 * GB, 10 * US)
    assert h.bandwidth_s == pytest.approx(max(2 * 7 / 8 * s / 400e9, 1.5 * s / 8 / 50e9))
    assert h.bandwidth_s == pytest.approx(4.697e-3, rel=1e-3)
    assert h.bandwidth_s < t.bandwidth_s
    # one node: the ring stays on NVLink, 2 x 7/8
    one = flat_ring_all_reduce(s, 8, 1, 400 * GB, 2 * US, 50 * GB, 10 * US)
    assert one.seconds == pytest.approx(
        collective_time("all_reduce", s, 8, 400 * GB, 2 * US).seconds
    )
    assert flat_ring_all_reduce(s, 1, 1, 400 * GB, 2 * US, 50 * GB, 10 * US).seconds == 0


def test_multi_node_bound_takes_the_least_busy_schedule():
    S, p = 1e9, 8
    # 8 A100 nodes (NVLink 300 GB/s, no reduction in the switch; a 50 GB/s NIC a GPU): NVLink is
    # the busier link for both schedules, and NCCL's flat ring moves less over it:
    # hierarchical 2 x 7/8 S / 300e9 = 5.83 ms, flat ring 2 x 63/64 x 7/8 S / 300e9 = 5.74 ms
    t = multi_node_all_reduce(S, p, 8, 300 * GB, 0.6 * US, 50 * GB, 2.7 * US)
    assert t.bandwidth_s == pytest.approx(2 * 63 / 64 * 7 / 8 * S / 300e9)
    h = hierarchical_all_reduce(S, p, 8, 300 * GB, 0.6 * US, 50 * GB, 2.7 * US)
    assert t.bandwidth_s < h.bandwidth_s == pytest.approx(2 * 7 / 8 * S / 300e9)
    # 2 nodes, NVLink 500 GB/s: the hierarchical schedule is NVLink-bound (3.5 ms against 2.5 ms
    # on the NIC), the flat ring NIC-bound (4.69 ms against 3.28 ms): a share x of the buffer
    # by the first and 1-x by the second, run together, balances the links
    hier, ring = (
        (1.75 * S / 500e9, 1.0 * S / 8 / 50e9),
        (1.875 * 7 / 8 * S / 500e9, 1.875 * S / 8 / 50e9),
    )
    x = (ring[1] - ring[0]) / ((hier[0] - ring[0]) - (hier[1] - ring[1]))
    mixed = x * hier[0] + (1 - x) * ring[0]
    assert 0 < x < 1 and mixed == pytest.approx(x * hier[1] + (1 - x) * ring[1])
    assert mixed == pytest.approx(3.409e-3, rel=1e-3) and mixed < min(max(hier), max(ring))
    t = multi_node_all_reduce(S, p, 2, 500 * GB, 0.6 * US, 50 * GB, 2.7 * US)
    assert t.bandwidth_s == pytest.approx(mixed)
    # 8 H100 nodes (NVLink SHARP): the NICs bind, the hierarchical schedule is the least busy
    t = multi_node_all_reduce(S, p, 8, 450 * GB, 0.6 * US, 50 * GB, 2.7 * US, intra_reduces=True)
    assert t.bandwidth_s == pytest.approx(2 * 7 / 8 * S / 8 / 50e9)
    # one node: the in-node all-reduce
    one = multi_node_all_reduce(S, p, 1, 450 * GB, 0.6 * US, 50 * GB, 2.7 * US)
    assert one.bandwidth_s == pytest.approx(2 * 7 / 8 * S / 450e9)


def test_comm_time_is_frozen():
    t = CommTime(1.0, 2.0)
    with pytest.raises(AttributeError):
        t.latency_s = 0.0


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: collective_time("allreduce", 1, 2, 1e9, 0), "op must be one of all_reduce"),
        (lambda: collective_time("all_reduce", -1, 2, 1e9, 0), "nbytes must be"),
        (lambda: collective_time("all_reduce", math.nan, 2, 1e9, 0), "nbytes must be"),
        (lambda: collective_time("all_reduce", 1, 0, 1e9, 0), "devices must be an integer >= 1"),
        (lambda: collective_time("all_reduce", 1, 2, 0, 0), "bandwidth must be .* > 0"),
        (lambda: collective_time("all_reduce", 1, 2, 1e9, -1e-6), "latency must be .* >= 0"),
        (
            lambda: collective_time("all_reduce", 1, 2, 1e9, 0, algorithm="butterfly"),
            "algorithm must be one of ring, tree",
        ),
        (
            lambda: collective_time("all_to_all", 1, 2, 1e9, 0, algorithm="tree"),
            "all_to_all has only 'ring'",
        ),
        (lambda: bus_bandwidth("gather", 1e9, 2), "op must be one of"),
        (lambda: bus_factor("all_reduce", 0), "devices must be"),
        (lambda: algorithm_bandwidth(1e6, 0), "seconds must be .* > 0"),
        (lambda: hierarchical_all_reduce(1e9, 0, 2, 1e9, 0, 1e9, 0), "per_node must be"),
        (lambda: hierarchical_all_reduce(1e9, 8, 0, 1e9, 0, 1e9, 0), "nodes must be"),
        (lambda: hierarchical_all_reduce(1e9, 8, 2, 1e9, 0, -1, 0), "inter_bw must be"),
        (lambda: hierarchical_all_reduce(1e9, 8, 2, 1e9, -1, 1, 0), "intra_lat must be"),
        (lambda: flat_ring_all_reduce(1e9, 8, 2, 1e9, 0, 0, 0), "inter_bw must be"),
        (lambda: flat_ring_all_reduce(1e9, 8, 2, 1e9, 0, 1e9, -1), "inter_lat must be"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("devices", [2.0, True, "8"])
def test_devices_must_be_an_integer(devices):
    with pytest.raises(TypeError, match="devices must be an integer"):
        collective_time("all_reduce", 1, devices, 1e9, 0)


def test_half_bandwidth_size_by_hand():
    # ring all-reduce, n = 4, alpha = 10 us, B = 100 GB/s: k = 6, f = 1.5
    # S_half = 6 x 10e-6 x 100e9 / 1.5 = 4 MB; there the two terms are equal (60 us each) and
    # busbw is half the link
    s = half_bandwidth_bytes("all_reduce", 4, 100 * GB, 10 * US)
    assert s == pytest.approx(4e6)
    t = collective_time("all_reduce", s, 4, 100 * GB, 10 * US)
    assert t.latency_s == pytest.approx(t.bandwidth_s) == pytest.approx(60e-6)
    busbw = bus_bandwidth("all_reduce", algorithm_bandwidth(s, t.seconds), 4)
    assert busbw == pytest.approx(50 * GB)
    # tree, n = 8: k = 6, f = 6 -> S_half = alpha x B = 1 MB
    assert half_bandwidth_bytes("all_reduce", 8, 100 * GB, 10 * US, algorithm="tree") == (
        pytest.approx(1e6)
    )
    assert half_bandwidth_bytes("all_gather", 1, 100 * GB, 10 * US) == 0.0


def test_crossover_by_hand():
    # the same case as test_tree_beats_ring_only_for_small_messages
    assert crossover_bytes("all_reduce", 16, 50 * GB, 5 * US) == pytest.approx(
        22 * 5e-6 * 50e9 / 6.125
    )
    # broadcast on 8: ring 7 steps, f 1; tree 3 steps, f 3 -> S = 4 alpha B / 2
    assert crossover_bytes("broadcast", 8, 50 * GB, 5 * US) == pytest.approx(4 * 5e-6 * 50e9 / 2)
    # two ranks: a broadcast's ring and tree are the same single hop
    assert crossover_bytes("broadcast", 2, 50 * GB, 5 * US) is None
    with pytest.raises(ValueError, match="those with a tree"):
        crossover_bytes("all_gather", 8, 50 * GB, 5 * US)
