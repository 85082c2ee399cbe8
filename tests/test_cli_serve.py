"""``roofline-book serve``: every scheduler on a catalog model and on a config.json, the JSON
keys the issue names, estimates beside bounds, the searches, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline_book import hardware
from roofline_book.cli import calculator
from roofline_book.llm.config import model
from roofline_book.llm.inference import step_floor
from roofline_book.serving.search import Load, Slo, max_rate
from roofline_book.serving.simulate import Deployment
from roofline_book.serving.workload import Lengths

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "roofline_book" / "llm" / "data" / "configs" / "llama-3.1-8b.json"
QWEN = ROOT / "tests" / "data" / "hf_configs" / "qwen3-30b-a3b.json"


def serve(*args: str) -> dict:
    done = calculator.run(["serve", *args, "--json"])
    assert done["code"] == 0, done["stderr"]
    assert done["stderr"] == ""
    return json.loads(done["stdout"])


def fails(*args: str) -> str:
    done = calculator.run(["serve", *args])
    assert done["code"] == 2 and done["stdout"] == ""
    return done["stderr"]


@pytest.mark.parametrize("scheduler", ["static", "continuous", "chunked", "disaggregated"])
@pytest.mark.parametrize("name", ["llama-3-8b", str(CONFIG), str(QWEN)])
def test_every_scheduler_on_catalog_and_config_models(scheduler: str, name: str) -> None:
    extra = ["--replicas", "2"] if scheduler == "disaggregated" else []
    out = serve("--model", name, "--device", "h100-sxm", "--rate", "4", "--requests", "60",
                "--scheduler", scheduler, *extra)  # fmt: skip
    assert out["scheduler"] == scheduler and out["kind"] == "bound"
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert set(out[key]) >= {"p50", "p90", "p99"}
        assert 0 < out[key]["p50"] <= out[key]["p90"] <= out[key]["p99"]
    assert out["requests_per_s"] > 0 and out["output_tokens_per_s"] > 0
    # 60 requests, each 200 output tokens: output tokens / requests = 200
    assert out["output_tokens_per_s"] == pytest.approx(200 * out["requests_per_s"])


def test_one_request_at_a_time_prints_the_step_bounds() -> None:
    # constant arrivals 20 s apart: each request runs alone
    out = serve("--model", "llama-3-8b", "--device", "h100-sxm", "--rate", "0.05",
                "--arrivals", "constant", "--requests", "3")  # fmt: skip
    m, d = model("llama-3-8b"), hardware("h100-sxm")
    prefill = step_floor(m, 1, 1000, 1000, d).seconds
    decode = math.fsum(step_floor(m, 1, 1, 1000 + i - 1, d).seconds for i in range(2, 201)) / 199
    assert out["ttft_s"]["p50"] == pytest.approx(prefill, rel=1e-9)
    assert out["tpot_s"]["p99"] == pytest.approx(decode, rel=1e-9)


def test_text_says_bound_on_every_line() -> None:
    done = calculator.run(["serve", "--model", "llama-3-8b", "--rate", "5", "--requests", "50",
                           "--slo-ttft", "0.2", "--slo-tpot", "0.05"])  # fmt: skip
    text = done["stdout"]
    for row in ("TTFT, lower bound", "TPOT, lower bound", "end to end, lower bound",
                "throughput, upper bound", "output tokens, upper bound",
                "goodput, upper bound"):  # fmt: skip
        assert row in text
    assert "latencies are lower bounds, throughputs upper bounds" in text


def test_efficiency_prints_estimates_beside_the_bounds() -> None:
    out = serve("--model", "llama-3-8b", "--device", "h100-sxm", "--rate", "5",
                "--requests", "100", "--efficiency")  # fmt: skip
    assert out["kind"] == "estimate" and out["run"]["kind"] == "estimate"
    assert out["bound"]["kind"] == "bound"
    # MAMF's 794.5 of 989.4 TFLOP/s on H100 SXM
    assert out["efficiency_compute"] == pytest.approx(794.5e12 / 989.4e12, rel=1e-3)
    assert "mamf-bf16-h100" in out["efficiency_source"]
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert out[key]["p50"] > out["bound"][key]["p50"]
    assert out["requests_per_s"] <= out["bound"]["requests_per_s"] * 1.001
    text = calculator.run(["serve", "--model", "llama-3-8b", "--rate", "5", "--requests",
                           "100", "--efficiency", "0.5"])["stdout"]  # fmt: skip
    assert "TTFT, estimate (bound)" in text and "(bound " in text


def test_max_rate_is_the_packages_search() -> None:
    out = serve("--model", "llama-3-8b", "--device", "h100-sxm", "--max-rate",
                "--slo-ttft", "0.2", "--slo-tpot", "0.05", "--requests", "300")  # fmt: skip
    d = Deployment(model("llama-3-8b"), hardware("h100-sxm"))
    load = Load(300, Lengths.parse("p", "1000"), Lengths.parse("o", "200"))
    want = max_rate(d, load, Slo(0.2, 0.05))
    assert out["max_rate"]["max_rate_per_s"] == pytest.approx(want.rate)
    assert out["max_rate"]["at_max_rate"]["slo_met"] is True


def test_max_rate_warns_when_the_run_is_too_short() -> None:
    # DeepSeek-V3 at EP 16 holds hundreds of requests at once near its capacity: 300 requests
    # end before a queue could form, and the output says how many it takes
    args = ["serve", "--model", "deepseek-v3", "--device", "h800-sxm", "--ep", "16",
            "--max-rate", "--slo-ttft", "0.2", "--slo-tpot", "0.05"]  # fmt: skip
    short = calculator.run([*args, "--requests", "300"])["stdout"]
    assert "too few to reach a steady state" in short
    llama = calculator.run(["serve", "--model", "llama-3-8b", "--max-rate", "--slo-ttft", "0.2",
                            "--slo-tpot", "0.05"])["stdout"]  # fmt: skip
    assert "too few" not in llama


def test_compare_puts_both_deployments_side_by_side() -> None:
    out = serve("--model", "llama-3-8b", "--device", "h100-sxm", "--compare", "--replicas",
                "2", "--slo-ttft", "0.2", "--slo-tpot", "0.05", "--requests", "200")  # fmt: skip
    agg, dis = out["compare"]
    assert agg["scheduler"] == "chunked" and dis["scheduler"] == "disaggregated"
    assert dis["prefill_replicas"] == 1 and out["devices"] == 2


def test_trace_replays_its_arrivals(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,10\n100,100,10\n")
    out = serve("--model", "llama-3-8b", "--trace", str(trace))
    assert out["requests"] == 2 and out["arrivals"] == "trace"
    # two lone requests: equal latencies
    assert out["e2e_s"]["p50"] == pytest.approx(out["e2e_s"]["p99"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give --rate R"),
        (("--rate", "0"), "argument --rate: ('0') must be above 0, or 'inf'"),
        (("--rate", "fast"), "requests per second or 'inf'"),
        (("--rate", "1", "--prompt", "uniform:5"), "--prompt ('uniform:5') must be"),
        (("--rate", "1", "--efficiency", "1.5"), "--efficiency '1.5'"),
        (("--max-rate",), "need --slo-ttft"),
        (("--rate", "1", "--scheduler", "disaggregated"), "--replicas disaggregation needs"),
        (("--rate", "1", "--prefix-hit", "1"), "--prefix-hit must be below 1"),
        (("--rate", "1", "--trace", "/nonexistent.csv"), "cannot read it"),
        (("--rate", "1", "--prompt", "9000"), "context window"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(args: tuple[str, ...], message: str) -> None:
    err = fails("--model", "llama-3-8b", *args)
    assert message in err and "Traceback" not in err
