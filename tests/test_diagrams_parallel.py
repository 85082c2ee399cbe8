"""The ring and partition diagrams, against hand arithmetic.

Ring reduce-scatter and all-gather (Patarasuk & Yuan 2009; nccl-tests doc/PERFORMANCE.md):
p - 1 steps, in each every device sends one of p chunks, m/p bytes, to its neighbour;
(p - 1)/p x m in all, and the all-reduce that chains them 2 (p - 1)/p x m.
"""

from fractions import Fraction

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline_book import InvalidArgument  # noqa: E402
from roofline_book.present.diagrams import parallel  # noqa: E402
from roofline_book.present.plotting.layout import overlaps  # noqa: E402

pytestmark = pytest.mark.usefixtures("chinese_figures")


def _texts(fig):
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_text()]


@pytest.mark.parametrize("p", [2, 3, 4, 8])
@pytest.mark.parametrize("op", parallel.RING_OPS)
def test_each_step_every_device_sends_one_chunk_to_its_neighbour(op, p):
    schedule = parallel.ring_schedule(op, p)
    assert len(schedule) == p - 1
    for step in schedule:
        assert sorted(src for src, _, _ in step) == list(range(p))
        assert all(dst == (src + 1) % p for src, dst, _ in step)
        # every chunk is on the wire once a step: one chunk (m/p) per device
        assert sorted(c for _, _, c in step) == list(range(p))


@pytest.mark.parametrize("p", [2, 4, 5, 8])
def test_reduce_scatter_then_all_gather_is_an_all_reduce(p):
    everyone = frozenset(range(p))
    rs = parallel.ring_states("reduce_scatter", p)[-1]
    # after p - 1 steps device i holds the sum of every device's chunk i + 1, and only that
    for i, chunks in enumerate(rs):
        full = [c for c, have in enumerate(chunks) if have == everyone]
        assert full == [(i + 1) % p]
    ag = parallel.ring_states("all_gather", p)
    assert [[c == (i + 1) % p for c in range(p)] for i in range(p)] == [
        [have == everyone for have in chunks] for chunks in ag[0]
    ]
    assert all(have == everyone for chunks in ag[-1] for have in chunks)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_bytes_per_step_from_the_alpha_beta_model(p):
    for op in parallel.RING_OPS:
        steps, per_step, total = parallel.ring_step_share(op, p)
        assert (steps, per_step, total) == (p - 1, Fraction(1, p), Fraction(p - 1, p))
    # all-reduce = reduce-scatter + all-gather: 2 (p - 1)/p of the message a device
    from roofline_book.distributed.collectives import collective_time

    ar = collective_time("all_reduce", 1, p, 1, 0).bandwidth_s
    assert ar == pytest.approx(2 * float(parallel.ring_step_share("all_gather", p)[2]))
    assert ar == pytest.approx(2 * (p - 1) / p)


def test_the_ring_figures_say_what_they_draw():
    rs = _texts(parallel.ring_reduce_scatter(p=4))
    assert "ring reduce-scatter：4 块 GPU，消息 m 切成 4 块，3 步" in rs
    assert rs.count("每卡送出 m/4") == 3 and "共送出 3m/4" in rs
    assert rs.count("第 3 步") == 1 and "第 4 步" not in rs
    # the last row: device 0 holds chunk 1's total, built of all four devices (Σ)
    assert rs.count("Σ") == 4
    ag = _texts(parallel.ring_all_gather(p=3))
    assert ag.count("每卡送出 m/3") == 2 and "共送出 2m/3" in ag
    # all-gather at p = 3: 3 at the start, 3 more each step, 9 at the end: 3 + 6 + 9 sums
    assert ag.count("Σ") == 3 + 6 + 9


def test_partition_shares_against_hand_arithmetic():
    shares = parallel.partition_shares(p=4)
    # Llama-3-8B BF16, 4-way TP: every matrix in four, the norms whole: a hair over 1/4
    assert shares["TP"] == pytest.approx(0.25, abs=1e-3) and shares["TP"] > 0.25
    assert shares["DP"] == 1.0
    # 4-way PP: 8 of 32 layers, one of the two 128256 x 4096 tables (2 bytes each) and the
    # final norm, counted on the busiest stage
    layer = 2 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096)
    table = 2 * 128256 * 4096
    whole = 32 * layer + 2 * table + 2 * 4096
    assert shares["PP"] == pytest.approx((8 * layer + table + 2 * 4096) / whole)
    # Mixtral's 8 experts over 4 GPUs, attention by 4-way TP: about a quarter again
    assert shares["EP"] == pytest.approx(0.25, abs=2e-3)


def test_partition_panels():
    texts = _texts(parallel.partitions(p=4))
    for title in ("张量并行 TP", "数据并行 DP", "流水线并行 PP", "专家并行 EP"):
        assert any(t.startswith(title) for t in texts), title
    assert "32 层分成 4 段，每段 8 层" in texts
    assert any(t.startswith("8 个专家，每块 GPU 2 个") for t in texts)
    assert texts.count("GPU 3") == 4 and "GPU 4" not in texts
    assert "每块 GPU 至多存权重的 28%" in texts  # PP, from the arithmetic above: 28.3%


@pytest.mark.parametrize(
    "draw", [parallel.ring_reduce_scatter, parallel.ring_all_gather, parallel.partitions]
)
@pytest.mark.parametrize("p", [2, 4, 8])
def test_no_label_hides_another(draw, p):
    assert overlaps(draw(p=p)) == []


def test_bad_input_names_the_argument():
    with pytest.raises(InvalidArgument, match="^p "):
        parallel.ring_reduce_scatter(p=16)
    with pytest.raises(InvalidArgument, match="^p "):
        parallel.partitions(p=3)  # 32 layers do not split in three
    with pytest.raises(InvalidArgument, match="^op "):
        parallel.ring_schedule("all_reduce", 4)
