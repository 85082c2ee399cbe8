"""The serving simulator: its step bound, its schedulers, and the laws a queue obeys.

References outside the simulator: ``step_floor`` (one step's bound, computed by its own code
path), ``llm.serving.max_batch`` (vLLM's memory rule, with its hand-checked doctest), the
catalog's link bandwidth, Little's law L = lambda W (Little 1961), and the shape of a queue's
throughput and latency against its arrival rate.
"""

from __future__ import annotations

import math
import random
import time

import pytest

from roofline_book import InvalidArgument, hardware
from roofline_book.distributed.parallel import infer
from roofline_book.distributed.split import Split
from roofline_book.llm.config import model
from roofline_book.llm.inference import Precisions, kv_bytes_per_token, step_floor
from roofline_book.llm.serving import max_batch
from roofline_book.serving.engine import BLOCK, Engine
from roofline_book.serving.search import Load, Slo, max_rate, run
from roofline_book.serving.simulate import Deployment, percentile, simulate
from roofline_book.serving.steps import StepModel
from roofline_book.serving.workload import Lengths, Request, generate, read_trace

H100 = hardware("h100-sxm")
L3 = model("llama-3-8b")
PROMPT, OUTPUT = Lengths.parse("prompt", 1000), Lengths.parse("output", 200)


def one_at_a_time(n: int = 3, prompt: int = 1000, output: int = 200) -> list[Request]:
    # 30 s apart: each request finishes (about 1 s) long before the next arrives
    return [Request(30.0 * i, prompt, output) for i in range(n)]


# ---- the step bound ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "device"),
    [
        ("llama-3-8b", "h100-sxm"),
        ("llama-2-7b", "a100-sxm"),
        ("gemma-2-9b", "h100-sxm"),  # sliding window: the decode share is not affine
        ("mixtral-8x7b", "h100-sxm"),  # MoE: the experts a step reads depend on its tokens
        ("deepseek-v3", "h800-sxm"),  # MLA: absorbed decode, expanded prefill
    ],
)
def test_uniform_steps_equal_step_floor(key: str, device: str) -> None:
    m, d = model(key), hardware(device)
    s = StepModel(m, d)
    for batch, new, context in [(1, 1000, 1000), (8, 1, 2000), (64, 1, 1500), (4, 512, 3000)]:
        want = step_floor(m, batch, new, context, d).seconds
        if new == 1:
            got = s.time(decodes=batch, context_sum=batch * context, contexts=[context] * batch)
        else:
            got = s.time(chunks=[(new, context, True)] * batch)
        assert got.seconds == pytest.approx(want, rel=1e-9)


def test_mixed_step_is_the_sum_of_its_sequences() -> None:
    # two decodes at different contexts: their FLOPs and cache bytes add, the weights are read
    # once; against step_floor of each alone, minus one copy of the weights' time
    s = StepModel(L3, H100)
    both = s.time(decodes=2, context_sum=1000 + 3000).seconds
    alone = [step_floor(L3, 1, 1, c, H100).seconds for c in (1000, 3000)]
    weights = step_floor(L3, 1, 1, 1, H100).seconds  # almost all of it the weights
    assert max(alone) < both < sum(alone)
    assert both == pytest.approx(sum(alone) - weights, rel=0.01)


def test_split_steps_stay_below_the_parallel_floor() -> None:
    # a mixed step's bound on a split divides the work evenly: at or below infer's floor for
    # the same uniform batch (which takes the busiest device), and close to it
    for m, split, dev in [
        (model("llama-3-70b"), Split(tp=4), H100),
        (model("deepseek-v3"), Split(ep=16), hardware("h800-sxm")),
    ]:
        p = m.checkpoint or Precisions()
        s = StepModel(m, dev, split, p)
        r = infer(m, dev, split, batch=64, context=4096, precisions=p)
        got = s.time(decodes=64, context_sum=64 * 4096).seconds
        assert got <= r.decode.floor_s * (1 + 1e-9)
        assert got >= 0.5 * r.decode.floor_s


# ---- one request alone: the bounds themselves ---------------------------------------------


@pytest.mark.parametrize("scheduler", ["static", "continuous", "chunked"])
def test_one_request_alone_takes_the_step_bounds(scheduler: str) -> None:
    r = simulate(Deployment(L3, H100, scheduler=scheduler, chunk=4096), one_at_a_time())
    prefill = step_floor(L3, 1, 1000, 1000, H100).seconds
    # token i (2..200) is decoded in a step whose new token sits at position 1000 + i - 1
    decode = math.fsum(step_floor(L3, 1, 1, 1000 + i - 1, H100).seconds for i in range(2, 201))
    for ttft, tpot, e2e in zip(r.ttft_each, r.tpot_each, r.e2e_each, strict=True):
        assert ttft == pytest.approx(prefill, rel=1e-9)
        assert tpot == pytest.approx(decode / 199, rel=1e-9)
        assert e2e == pytest.approx(prefill + decode, rel=1e-9)


def test_chunked_prefill_of_one_request_is_its_chunks() -> None:
    # a 1000-token prompt in chunks of 256: 256, 256, 256, 232 tokens at contexts 256 ... 1000
    r = simulate(Deployment(L3, H100, scheduler="chunked", chunk=256), one_at_a_time(1))
    s = StepModel(L3, H100)
    want = math.fsum(
        s.time(chunks=[(n, c, c == 1000)]).seconds
        for n, c in [(256, 256), (256, 512), (256, 768), (232, 1000)]
    )
    assert r.ttft_each[0] == pytest.approx(want, rel=1e-12)
    assert r.ttft_each[0] > step_floor(L3, 1, 1000, 1000, H100).seconds  # weights read 4 times


def test_disaggregated_request_waits_for_its_kv_cache() -> None:
    # prefill on one GPU, decode on another: the second token comes after the KV cache
    # (1000 x 131072 B, Llama-3-8B: 2 x 32 layers x 8 KV heads x 128 x 2 B) crosses NVLink
    # (450 GB/s a direction on H100 SXM), sent layer by layer as the prefill goes
    d = Deployment(L3, H100, scheduler="disaggregated", replicas=2)
    r = simulate(d, one_at_a_time(1), timeline=1000)
    assert kv_bytes_per_token(L3) == 2 * 32 * 8 * 128 * 2
    send = 1000 * 131072 / 450e9
    prefill = step_floor(L3, 1, 1000, 1000, H100).seconds
    ready = max(send, prefill + send / 32)
    second = [s for s in r.timeline if s.engine == 1][0]
    assert r.ttft_each[0] == pytest.approx(prefill, rel=1e-9)
    assert second.start == pytest.approx(ready, rel=1e-9)


# ---- memory: vLLM's rule -------------------------------------------------------------------


def test_kv_capacity_is_vllms_rule() -> None:
    # the same free memory as max_batch: (0.9 x capacity - weights - activations) / KV bytes
    d = Deployment(L3, H100)
    tokens = d.kv_capacity_tokens()
    for context in (1024, 4096, 8192):
        assert tokens // context == max_batch(L3, H100, context)


def test_memory_limits_the_batch_and_preempts() -> None:
    # 2000 requests of 1000 + 200 tokens at once: about 380 fit in the cache (75 blocks each);
    # whole prompts admitted greedily run out of blocks as they decode, and the newest are
    # preempted; chunked prefill admits fewer at a time here and preempts none
    rs = generate(2000, math.inf, PROMPT, OUTPUT)
    cont = simulate(Deployment(L3, H100, scheduler="continuous"), rs)
    blocks = Deployment(L3, H100).kv_capacity_tokens() // BLOCK
    assert cont.preemptions > 0
    assert cont.mean_batch <= blocks / 63  # each admitted request holds >= 63 blocks
    assert simulate(Deployment(L3, H100, scheduler="chunked"), rs).preemptions == 0


def test_a_request_that_cannot_fit_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="context window"):
        simulate(Deployment(L3, H100), [Request(0.0, 8000, 500)])
    with pytest.raises(InvalidArgument, match="weights"):
        simulate(Deployment(model("llama-3-70b"), H100), [Request(0.0, 100, 10)])


# ---- queueing: Little's law, saturation, percentiles ---------------------------------------


@pytest.mark.parametrize("scheduler", ["static", "continuous", "chunked", "disaggregated"])
def test_littles_law(scheduler: str) -> None:
    # L = lambda W: the time-mean of requests in the system (integrated from the event loop)
    # equals the completion rate times the mean time in system (from each request's times)
    d = Deployment(L3, H100, scheduler=scheduler, replicas=2 if scheduler == "disaggregated" else 1)
    for rate in (5.0, 30.0, 200.0):
        r = simulate(d, generate(600, rate, PROMPT, OUTPUT, seed=3))
        assert r.mean_in_system == pytest.approx(r.requests_per_s * r.e2e_s.mean, rel=1e-9)


def test_throughput_rises_then_saturates_and_latency_grows() -> None:
    d = Deployment(L3, H100)
    load = Load(1500, PROMPT, OUTPUT, seed=1)
    rates = [2.0, 8.0, 32.0, 128.0, 512.0]
    runs = [run(d, load, r) for r in rates]
    thr = [x.requests_per_s for x in runs]
    # below saturation the throughput follows the rate (within the Poisson run's spread) ...
    for rate, t in zip(rates[:3], thr[:3], strict=True):
        assert t == pytest.approx(rate, rel=0.08)
    # ... and above it, it stops rising
    saturated = run(d, load, math.inf).steady_requests_per_s
    assert thr[3] < 128 and thr[4] < 1.05 * saturated
    assert thr[4] == pytest.approx(thr[3], rel=0.1)
    # past saturation the queue grows: every percentile of TTFT grows with the rate
    for q in ("p50", "p90", "p99"):
        seq = [getattr(x.ttft_s, q) for x in runs]
        assert seq[4] > seq[3] > 10 * seq[1]


def test_chunked_prefill_lowers_p99_tpot_on_a_mixed_load() -> None:
    # long prompts stall every decode for a whole prefill without chunking (Sarathi-Serve)
    load = Load(1000, Lengths.parse("p", "uniform:500:4000"), Lengths.parse("o", "uniform:50:400"))
    cont = run(Deployment(L3, H100, scheduler="continuous"), load, 20.0)
    chunk = run(Deployment(L3, H100, scheduler="chunked", chunk=512), load, 20.0)
    assert chunk.tpot_s is not None and cont.tpot_s is not None
    assert chunk.tpot_s.p99 < 0.7 * cont.tpot_s.p99


def test_static_batching_pads_to_the_longest() -> None:
    # two requests at once, outputs 10 and 100: the short one's slot steps until the long ends
    rs = [Request(0.0, 100, 10), Request(0.0, 100, 100)]
    r = simulate(Deployment(L3, H100, scheduler="static"), rs)
    s = StepModel(L3, H100)
    # 99 decode steps of two sequences at contexts 101 + j (j = 0 .. 98)
    decode = math.fsum(s.time(decodes=2, context_sum=2 * (101 + j)).seconds for j in range(99))
    prefill = s.time(chunks=[(100, 100, True)] * 2).seconds
    assert r.e2e_each[1] == pytest.approx(prefill + decode, rel=1e-9)
    assert r.steps == 1 + 99


def test_blocks_last_counts_the_steps_whose_new_blocks_fit() -> None:
    # step j from now starts a block for every sequence whose context then crosses a block edge:
    # phase[(-(k + j)) % BLOCK] of them; count steps one by one until one no longer fits
    rng = random.Random(7)
    for _ in range(400):
        e = Engine(0, None, "continuous", capacity_blocks=rng.randrange(0, 300))  # type: ignore[arg-type]
        e.phase = [rng.choice((0, 0, 1, 3)) for _ in range(BLOCK)]
        e.k = rng.randrange(0, 5000)
        if not sum(e.phase):
            assert e._blocks_last() == 1 << 62
            continue
        left, n = e.free_blocks, 0
        while left >= e.phase[(-(e.k + n)) % BLOCK]:
            left -= e.phase[(-(e.k + n)) % BLOCK]
            n += 1
        assert e._blocks_last() == n


def test_fast_forward_matches_stepping_one_by_one() -> None:
    # the closed form for runs of decode-only steps against every step planned one by one
    # (recording a timeline turns the closed form off)
    for scheduler in ("static", "continuous", "chunked", "disaggregated"):
        d = Deployment(L3, H100, scheduler=scheduler, replicas=2 if scheduler[0] == "d" else 1)
        rs = generate(300, 15.0, Lengths.parse("p", "uniform:200:2000"), OUTPUT, seed=5)
        fast, slow = simulate(d, rs), simulate(d, rs, timeline=10**9)
        assert fast.steps == slow.steps
        for a, b in zip(fast.e2e_each, slow.e2e_each, strict=True):
            assert a == pytest.approx(b, rel=1e-9)


def test_prefix_hits_shorten_the_prefill() -> None:
    # half of each prompt cached, in whole 16-token blocks: 500 // 16 = 31 blocks, 496 tokens;
    # the prefill computes the other 504 over a context of 1000
    r = simulate(Deployment(L3, H100, prefix_hit=0.5), one_at_a_time(1))
    assert r.ttft_each[0] == pytest.approx(step_floor(L3, 1, 504, 1000, H100).seconds, rel=1e-9)


def test_prefix_hits_share_blocks_and_survive_preemption() -> None:
    # a 90% hit leaves each request only its own blocks to take: more fit at once than without,
    # and a preempted request recomputes only what the cache does not hold
    rs = generate(1500, math.inf, PROMPT, OUTPUT)
    plain = simulate(Deployment(L3, H100, scheduler="continuous"), rs)
    hit = simulate(Deployment(L3, H100, scheduler="continuous", prefix_hit=0.9), rs)
    assert hit.mean_batch > 2 * plain.mean_batch
    assert hit.makespan_s < plain.makespan_s


def test_estimates_divide_the_bounds() -> None:
    # one request alone: its decode steps are memory-bound, so an estimate at memory
    # efficiency 0.5 doubles every TPOT; its prefill is compute-bound and takes 1 / 0.8
    rs = one_at_a_time(1)
    bound = simulate(Deployment(L3, H100), rs)
    est = simulate(Deployment(L3, H100, efficiency=(0.8, 0.5)), rs)
    assert est.estimate and not bound.estimate
    assert est.tpot_each[0] == pytest.approx(2 * bound.tpot_each[0], rel=1e-9)  # type: ignore[operator]
    assert est.ttft_each[0] == pytest.approx(bound.ttft_each[0] / 0.8, rel=1e-9)


def test_max_rate_meets_the_slo_and_a_little_more_does_not() -> None:
    d, load = Deployment(L3, H100), Load(800, PROMPT, OUTPUT, seed=2)
    slo = Slo(ttft=0.2, tpot=0.05)
    best = max_rate(d, load, slo, tolerance=0.01)
    assert best.result is not None and slo.met(best.result)
    assert not slo.met(run(d, load, best.rate * 1.05))
    assert best.rate <= best.saturation.steady_requests_per_s


# ---- workloads, percentiles, bad input -----------------------------------------------------


def test_percentile_is_numpys_linear() -> None:
    xs = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [percentile(xs, q) for q in (0, 50, 90, 99, 100)] == pytest.approx(
        [1.0, 3.0, 4.6, 4.96, 5.0]
    )


def test_poisson_arrivals_have_the_rate_and_a_seed() -> None:
    rs = generate(20000, 10.0, PROMPT, OUTPUT, seed=7)
    gaps = [b.arrival - a.arrival for a, b in zip(rs, rs[1:], strict=False)]
    assert sum(gaps) / len(gaps) == pytest.approx(0.1, rel=0.03)
    # exponential gaps: the share above the mean is e^-1 = 0.368
    assert sum(g > 0.1 for g in gaps) / len(gaps) == pytest.approx(math.exp(-1), abs=0.015)
    assert generate(5, 10.0, PROMPT, OUTPUT, seed=7) == rs[:5]


def test_lengths_and_traces_refuse_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="uniform:LO:HI"):
        Lengths.parse("prompt", "uniform:5")
    with pytest.raises(InvalidArgument, match="HI must be >= LO"):
        Lengths.parse("prompt", "uniform:9:5")
    with pytest.raises(InvalidArgument, match="arrival_s"):
        read_trace("t,p,o\n1,2,3\n")
    with pytest.raises(InvalidArgument, match="line 3"):
        read_trace("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,0,5\n")
    with pytest.raises(InvalidArgument, match="scheduler"):
        Deployment(L3, H100, scheduler="fcfs")
    with pytest.raises(InvalidArgument, match="replicas"):
        Deployment(L3, H100, scheduler="disaggregated")


def test_ten_thousand_requests_simulate_in_two_seconds() -> None:
    # CPU time, so that a loaded machine does not fail it: Llama-3-8B, one H100, 1000-token
    # prompts and 200-token outputs, near saturation, chunked prefill
    rs = generate(10_000, 40.0, PROMPT, OUTPUT)
    start = time.process_time()
    r = simulate(Deployment(L3, H100), rs)
    assert time.process_time() - start < 2.0
    assert r.requests == 10_000


def test_a_slower_engine_is_at_most_a_few_per_cent_faster_at_a_percentile() -> None:
    # scheduling anomalies: every step 1/0.99 longer changes which requests share a batch, and
    # a percentile can come out lower than with every step at its bound; on mixed loads under
    # static and continuous batching the printed percentiles stay within 5 % of the slower ones
    lengths = (Lengths.parse("p", "uniform:200:1800"), Lengths.parse("o", "uniform:50:350"))
    for scheduler, rate in (("static", 4.0), ("continuous", 32.0), ("chunked", 32.0)):
        rs = generate(150, rate, *lengths)
        fast = simulate(Deployment(L3, H100, scheduler=scheduler), rs)
        slow = simulate(Deployment(L3, H100, scheduler=scheduler, efficiency=(0.99, 0.99)), rs)
        for name in ("ttft_s", "tpot_s", "e2e_s"):
            for q in ("p50", "p90", "p99"):
                bound, real = getattr(getattr(fast, name), q), getattr(getattr(slow, name), q)
                assert real >= 0.95 * bound, (scheduler, name, q)
    # a request's TTFT never falls below its prompt's prefill alone, whatever the engine
    alone = {p: step_floor(L3, 1, p, p, H100).seconds for p in {r.prompt for r in rs}}
    for r, ttft in zip(rs, slow.ttft_each, strict=True):
        assert ttft >= alone[r.prompt] * (1 - 1e-12)
