"""The one level rule of ``bounds.bound``, pinned by a table worked by hand.

A toy machine: L1 32 KiB with no measured roof, L2 1 MiB at 400 GB/s, L3 32 MiB at
200 GB/s, DRAM at 20 GB/s; 1e11 vector lane slots per second. The bound lets a level
hold up to CACHE_MARGIN = 4 times its size, so L1 holds 128 KiB, L2 4 MiB and L3 128 MiB.
"""

from __future__ import annotations

import pytest

from roofline_book import adhoc, hardware, time_bound
from roofline_book.ops import Cost
from roofline_book.roofline.bounds import CACHE_MARGIN, Ceilings, Level, TimeBound, bound

KIB, MIB = 2**10, 2**20
L2_BW, L3_BW, DRAM_BW, LANES = 400e9, 200e9, 20e9, 1e11
TOY = Ceilings(
    "toy",
    {("vector", "fp32"): LANES},
    (
        Level("l1", None, 32 * KIB),
        Level("l2", L2_BW, 1 * MIB),
        Level("l3", L3_BW, 32 * MIB),
        Level("dram", DRAM_BW),
    ),
)


def stream(nbytes: int, *, kernels: int = 1, reread: int = 0, footprint: int = 0) -> Cost:
    """An fp32 elementwise pass over ``nbytes``: a third written, one lane slot per 12 bytes."""
    return Cost(
        flops=nbytes // 12,
        bytes_read=nbytes - nbytes // 3,
        bytes_written=nbytes // 3,
        kernels=kernels,
        vector_flops=nbytes // 12,
        reread_bytes=reread,
        reread_footprint=footprint,
    )


# (what it shows, cost, resident, fill, the levels charged and the bytes each carries)
LEVEL_RULE = [
    ("cold: every byte from DRAM, through each level with a roof",
     stream(12 * KIB), False, CACHE_MARGIN, {"l2": 12 * KIB, "l3": 12 * KIB, "dram": 12 * KIB}),
    ("resident, 12 KiB: within 4 x 32 KiB of L1, which has no roof",
     stream(12 * KIB), True, CACHE_MARGIN, {}),
    ("resident, 1 MiB: over 128 KiB, within 4 x 1 MiB of L2",
     stream(1 * MIB), True, CACHE_MARGIN, {"l2": 1 * MIB}),
    ("resident, 4 MiB: exactly 4 x the L2 still counts as held",
     stream(4 * MIB), True, CACHE_MARGIN, {"l2": 4 * MIB}),
    ("resident, 8 MiB: the L3 holds it; its bytes also pass the L2",
     stream(8 * MIB), True, CACHE_MARGIN, {"l2": 8 * MIB, "l3": 8 * MIB}),
    ("resident, 192 MiB: over 4 x 32 MiB, so from DRAM",
     stream(192 * MIB), True, CACHE_MARGIN,
     {"l2": 192 * MIB, "l3": 192 * MIB, "dram": 192 * MIB}),
    ("a prediction's quarter: 1 MiB is over a quarter of the L2, so the L3",
     stream(1 * MIB), True, 0.25, {"l2": 1 * MIB, "l3": 1 * MIB}),
    ("the working set is per kernel: two kernels of 1 MiB each sit in the L2",
     stream(2 * MIB, kernels=2), True, CACHE_MARGIN, {"l2": 2 * MIB}),
    ("cold, re-reads of a 2 MiB footprint come from the L2 that holds them",
     stream(12 * KIB, reread=30 * MIB, footprint=2 * MIB), False, CACHE_MARGIN,
     {"l2": 12 * KIB + 30 * MIB, "l3": 12 * KIB, "dram": 12 * KIB}),
    ("cold, re-reads of a 200 MiB footprint come from DRAM",
     stream(12 * KIB, reread=30 * MIB, footprint=200 * MIB), False, CACHE_MARGIN,
     {"l2": 12 * KIB + 30 * MIB, "l3": 12 * KIB + 30 * MIB, "dram": 12 * KIB + 30 * MIB}),
    ("resident in the L1, re-reads from the L3: the levels out to the L3 carry them",
     stream(12 * KIB, reread=30 * MIB, footprint=8 * MIB), True, CACHE_MARGIN,
     {"l2": 30 * MIB, "l3": 30 * MIB}),
]  # fmt: skip
BANDWIDTH = {"l2": L2_BW, "l3": L3_BW, "dram": DRAM_BW}


@pytest.mark.parametrize(("shows", "cost", "resident", "fill", "charged"), LEVEL_RULE)
def test_the_level_rule(shows, cost, resident, fill, charged):
    t = bound(cost, TOY, "fp32", resident=resident, fill=fill)
    expected = {name: nbytes / BANDWIDTH[name] for name, nbytes in charged.items()}
    expected["vector"] = cost.vector_flops / LANES  # one slot per add
    assert t is not None, shows
    assert dict(t.by_resource) == pytest.approx(expected), shows


def test_units_take_their_own_work_and_a_single_peak_takes_all():
    c = Ceilings(
        "three units",
        {("matrix", "bf16"): 1e15, ("vector", "bf16"): 6.7e13, ("special", "bf16"): 4e12},
        (Level("hbm", 3e12),),
    )
    cost = Cost(10**12, 10**6, 0, vector_flops=2 * 10**9, special_flops=10**8)
    t = bound(cost, c, "bf16")
    # matrix: 1e12 - 2e9 - 1e8 FLOPs at 1e15; vector: 2e9 slots at 6.7e13; special: 1e8 at 4e12
    assert t.by_resource["matrix"] == pytest.approx((10**12 - 2 * 10**9 - 10**8) / 1e15)
    assert t.by_resource["vector"] == pytest.approx(2e9 / 6.7e13)
    assert t.by_resource["special"] == pytest.approx(1e8 / 4e12)
    one = Ceilings("one peak", {("compute", "any"): 1e14}, (Level("memory", 1e12),))
    assert dict(bound(cost, one, "fp8").by_resource) == {"compute": 1e-2, "memory": 1e-6}


def test_an_inner_level_of_unknown_size_may_hold_anything():
    c = Ceilings("no sizes", {("vector", "fp32"): LANES}, (Level("l2", None), Level("dram", 2e10)))
    big = stream(1024 * MIB)
    assert set(bound(big, c, "fp32", resident=True).by_resource) == {"vector"}
    assert set(bound(big, c, "fp32").by_resource) == {"vector", "dram"}


def test_nothing_to_hold_and_a_missing_rate():
    empty = Cost(0, 1000, 0)
    assert bound(empty, TOY, "fp32", resident=True) is None  # 1 kB in the roofless L1
    with pytest.raises(ValueError, match="^dtype 'bf16' has no vector rate on toy; allowed: fp32"):
        bound(stream(12 * KIB), TOY, "bf16")
    with pytest.raises(TypeError, match="ceilings must be a roofline_book.Ceilings"):
        bound(empty, "toy")
    with pytest.raises(ValueError, match="level must be one of l1, l2, l3, dram; got 'hbm'"):
        TOY.level("hbm")
    with pytest.raises(ValueError, match="name must be one of"):
        Level("cache", 1e9)


def test_a_catalog_device_is_its_datasheet():
    """H100 SXM5 from the catalog: the whitepaper's dense BF16 989.4 TFLOP/s, 3.35 TB/s HBM3,
    50 MiB of L2 (NVIDIA H100 Tensor Core GPU Architecture, 2022), FP32 lanes at half of 67
    TFLOP/s (an FMA is two FLOPs in one slot)."""
    h100 = Ceilings.of(hardware("h100-sxm"))
    assert h100.rate("matrix", "bf16") == 989.4e12
    assert h100.rate("vector", "fp32") == 33.5e12
    assert h100.level("l2").capacity == 50 * MIB and h100.memory.bandwidth == 3.35e12
    # the ad-hoc two-roof device has one peak for every FLOP and no level inside its memory
    toy = Ceilings.of(adhoc("toy", 100e12, 1e12))
    assert toy.shared_peak and [lv.name for lv in toy.levels] == ["hbm"]


def test_time_bound_is_the_cold_start_on_the_catalog_ceilings():
    from roofline_book import add, attention, gemm

    h100 = hardware("h100-sxm")
    c = Ceilings.of(h100)
    for cost in (add(2**24), gemm(4096, 4096, 4096), attention(2, 16, 4096, 4096, 128)):
        assert time_bound(cost, h100) == bound(cost, c, "bf16")
    warm = bound(add(2**20), c, "bf16", resident=True)  # 6 MiB: the 50 MiB L2 holds it
    assert isinstance(warm, TimeBound) and warm.resource == "l2"
    assert warm.by_resource["l2"] == pytest.approx(6 * MIB / 8428.6e9)


def test_the_ceilings_of_a_device_are_its_own_however_many_are_made():
    from roofline_book import adhoc

    # more devices than Ceilings.of keeps, made and dropped in turn: ids may repeat
    for i in range(1, 200):
        device = adhoc(f"made {i}", i * 1e12, 1e12)
        assert Ceilings.of(device).rates["compute", "any"] == i * 1e12
        assert Ceilings.of(device) is Ceilings.of(device)


def test_a_level_is_never_slower_than_a_level_further_out():
    """The new-user review's loaded CPU run: L3 measured at 12 GB/s, below DRAM at 17.7 GB/s.
    Data the L3 holds can always be read at least as fast as from DRAM (it could be read from
    there), so the L3's roof is DRAM's: 8 MiB resident in the L3 takes at least
    8 * 2**20 / 17.7e9 = 474 us there, not 8 * 2**20 / 12e9 = 699 us, a bound a real kernel
    would beat by 1.48x."""
    loaded = Ceilings(
        "loaded",
        {("vector", "fp32"): LANES},
        (Level("l2", L2_BW, 1 * MIB), Level("l3", 12e9, 32 * MIB), Level("dram", 17.7e9)),
    )
    t = bound(stream(8 * MIB), loaded, "fp32", resident=True)
    assert t.by_resource["l3"] == pytest.approx(8 * MIB / 17.7e9)  # 473.9 us
    assert t.by_resource["l2"] == pytest.approx(8 * MIB / L2_BW)  # the L2 is faster: kept
    cold = bound(stream(8 * MIB), loaded, "fp32")
    assert cold.by_resource["l3"] == cold.by_resource["dram"] == pytest.approx(8 * MIB / 17.7e9)
    # a level with no roof stays without one, and an ordered machine is left as it is
    assert bound(stream(8 * MIB), TOY, "fp32", resident=True).by_resource["l3"] == pytest.approx(
        8 * MIB / L3_BW
    )
