"""roofline_book.book.profiling: the profiling chapter's run-file and published figures, against
the fixture run's timings worked out by hand, the vendors' datasheets (H100 SXM 989.4 TFLOP/s
dense BF16 and 3.35 TB/s; A100 SXM 80GB 2.039 TB/s), the published numbers as their sources
print them and Llama-2-7B's config."""

import copy
import json
import pathlib

import pytest

from roofline_book import InvalidArgument
from roofline_book.book import profiling
from roofline_book.measure.runs.runfile import validate_run

FIXTURE = pathlib.Path(__file__).parent / "data" / "fixture-cpu-pass.json"
H100_BF16, H100_HBM = 989.4e12, 3.35e12

PUBLISHED = dict(
    gemm="cublas-bf16-h100[n=8192]",
    gemm_4k="cublas-bf16-h100[n=4096]",
    copy="stream-h100[kernel=copy]",
    attention="fa3-bf16-d128[seqlen=16384]",
    decode="gptfast-llama2-7b[weights=bf16]",
    decode_copy="stream-a100[kernel=copy]",
)


def test_run_roof_figures():
    data = json.loads(FIXTURE.read_text("utf-8"))
    with pytest.raises(InvalidArgument, match="L2 cache roof"):
        profiling.run_roof_figures(validate_run(data))  # the fixture measured no cache level
    edited = copy.deepcopy(data)
    # an L2 roof read from the fixture's copy: 2^25 FP32 elements read and written in 12.5 ms
    l2 = 2 * 2**25 * 4 / 12.5e-3  # 21.47 GB/s
    edited["ceilings"]["cache_bandwidth"] = {
        "L2": {
            "value": l2,
            "entry": "copy/fp32/copy_/numel=33554432",
            "working_set_bytes": 2**18,
            "cache_bytes": 2**21,
        }
    }
    f = profiling.run_roof_figures(validate_run(edited))
    assert f["l2_model_g"] == pytest.approx(l2 / 1e9)
    # write-allocate: the copy's destination is read before it is written, 12 bytes for 8
    assert f["wa_copy"] == pytest.approx(12 / 8)
    assert f["cpu_gemm_g"] == pytest.approx(100 * 2**30 / 1e9)  # the fixture's 100 GiFLOP/s


def test_published_measurement():
    m = profiling.published_measurement("cublas-bf16-h100[n=4096]")
    assert (m.value, m.row.unit) == (716.0, "TFLOP/s")  # fast.cu's README, cuBLAS at n = 4096
    with pytest.raises(InvalidArgument, match="not among cublas-bf16-h100's values"):
        profiling.published_measurement("cublas-bf16-h100[n=12345]")


def test_published_figures():
    f = profiling.published_figures(**PUBLISHED, estimate_params=7e9)
    # compute-bound rows: the published rate over the dense peak
    assert f["pub_gemm_eta"] == pytest.approx(795 / 989.4)  # fast.cu's cuBLAS, n = 8192
    assert f["pub_fa_eta"] == pytest.approx(648 / 989.4, rel=0.03)  # FA3 v1, d 128, 16k
    assert f["pub_copy_eta"] == pytest.approx(2.90 / 3.35)  # STREAM copy on the H100
    assert (f["ans_q5_tf4k"], f["ans_q5_eta4k"]) == pytest.approx((716, 716 / 989.4))
    assert f["ans_q5_us4k"] == pytest.approx(2 * 4096**3 / H100_BF16 * 1e6)  # 138.9 us
    # Llama-2-7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008) + 2 x 32000 x 4096 + 65 x 4096 norms
    params = 32 * (4 * 4096**2 + 3 * 4096 * 11008) + 2 * 32000 * 4096 + 65 * 4096
    assert f["ans_q4_params_b"] == pytest.approx(params / 1e9)  # 6.738
    # gpt-fast: 104.9 token/s; each token reads every weight but a single embedding row
    assert f["gf_tok"] == 104.9
    # and the KV cache: 200 tokens after a 5-token prompt attend over 5 + 200 / 2 = 105
    # positions on average, 2 x 32 x 32 x 128 x 2 = 524288 B each (K and V, 32 layers of 32
    # heads): (13.215 + 0.055) GB x 104.9 = 1.392 TB/s; the activations are the rest
    weights = 2 * (params - 32000 * 4096)
    tb = (weights + 105 * 2 * 32 * 32 * 128 * 2) * 104.9 / 1e12
    assert f["gf_tb"] == pytest.approx(tb, rel=1e-3)
    assert f["ans_q4_tb"] == pytest.approx(tb, rel=1e-3)
    # of the A100's 2.039 TB/s: 0.683
    assert (f["gf_eta"], f["ans_q4_eta"]) == pytest.approx((tb / 2.039, tb / 2.039), rel=1e-3)
    assert (f["a100_copy_tb"], f["a100_bw_tb"]) == pytest.approx((1.61, 2.039))
    assert f["gf_of_copy"] == pytest.approx(tb / 1.61, rel=1e-3)  # 0.865 of STREAM copy
    assert f["ans_q4_est_tb"] == pytest.approx(2 * 7e9 * 104.9 / 1e12)  # 1.47 TB/s
