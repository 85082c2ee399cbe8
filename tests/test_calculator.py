"""The calculator page: the package run by Pyodide in a real browser, against the installed CLI.

The browser tests (marker ``site``) serve the built site and drive Debian's Chromium, as
test_browser.py does: ``window.rooflineBook.run(argv)`` must give exactly what the venv's
``roofline-book`` prints for the same arguments; the form must show the numbers the command's
text output shows, and a point on the roofline at the command's intensity; no request may
leave the site, which must also work served from a subdirectory. The budgets: the page's own
downloads at most 15 MB, the first answer within 10 s of opening it, a later one within
200 ms. The figures each run measured go to _build/calculator-timing.json.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest
from conftest import BUILD, ROOT
from test_browser import CHROMIUM, _Page, _Quiet, browser  # noqa: F401 - the fixture

from roofline_book.book import calculator as page_spec
from roofline_book.cli import calculator

HTML = BUILD / "html"
CLI = pathlib.Path(sys.executable).with_name("roofline-book")
PAGE = "calculator.html"
DOWNLOAD_LIMIT = 15 * 1024 * 1024
FIRST_ANSWER_S = 10.0
LATER_ANSWER_S = 0.2
TIMING = BUILD / "calculator-timing.json"


def in_browser(test):
    """A test of the built page in Chromium (marker ``site``; CI installs Chromium, so there a
    missing browser is a failure, not a skip)."""
    missing = not pathlib.Path(CHROMIUM).exists() and not os.environ.get("CI")
    return pytest.mark.site(pytest.mark.skipif(missing, reason=f"no Chromium at {CHROMIUM}")(test))


def _installed(argv: list[str]) -> subprocess.CompletedProcess:
    """The installed command, in a fresh interpreter, as a reader's terminal runs it."""
    return subprocess.run([str(CLI), *argv], capture_output=True, text=True, cwd=ROOT)


def _serve(directory: pathlib.Path):
    handler = functools.partial(_Quiet, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    """The site served under /roofline-book/, as a project's Pages site is."""
    if not (HTML / PAGE).exists():
        pytest.fail(f"{HTML / PAGE} is missing: run `make html` first")
    top = tmp_path_factory.mktemp("pages")
    (top / "roofline-book").symlink_to(HTML.resolve(), target_is_directory=True)
    httpd, url = _serve(top)
    yield f"{url}/roofline-book"
    httpd.shutdown()
    httpd.server_close()


def _open(browser, base: str, query: str = ""):  # noqa: F811 - the fixture's value
    p = _Page(browser, base)
    requested: list[str] = []
    p.page.on("request", lambda r: requested.append(r.url))
    started = time.perf_counter()
    p.open(PAGE + query)
    p.page.wait_for_function(
        "() => ['done', 'error', 'failed'].includes("
        "document.getElementById('roofline-calculator').dataset.state)",
        timeout=60_000,
    )
    first = time.perf_counter() - started
    return p, requested, first


@contextlib.contextmanager
def _on(browser, hosted, command: str, state: str = "done"):  # noqa: F811
    """The calculator opened on ``command`` (its ``?cmd=``), once it has answered with
    ``state``; on leaving, no request has left the site and the console shows no error."""
    p, _, _ = _open(browser, hosted, "?" + urllib.parse.urlencode({"cmd": command}))
    try:
        assert p.page.locator("#roofline-calculator").get_attribute("data-state") == state
        yield p.page
        assert not p.outside and not p.errors, (p.outside, p.errors)
    finally:
        p.close()


@pytest.fixture(scope="module")
def opened(browser, hosted):  # noqa: F811
    """One calculator page, opened once, for the tests that only call its run()."""
    p, _, _ = _open(browser, hosted)
    yield p
    p.close()


def _record(**figures: float) -> None:
    data = json.loads(TIMING.read_text()) if TIMING.is_file() else {}
    data.update(figures)
    TIMING.write_text(json.dumps(data, indent=2) + "\n")


CASES = {
    "gemm": ["op", "gemm", "--m", "4096", "--k", "4096", "--n", "4096", "--json"],
    "softmax": ["op", "softmax", "--rows", "8192", "--cols", "32000", "--dtype", "fp32", "--json"],
    "infer": [
        "infer",
        "--model",
        "llama-3-8b",
        "--batch",
        "8",
        "--context",
        "8192",
        "--kv-dtype",
        "fp8",
        "--device",
        "h200-sxm",
        "--json",
    ],
    "serve": [
        "serve",
        "--model",
        "llama-3-8b",
        "--rate",
        "20",
        "--slo-ttft",
        "0.2",
        "--slo-tpot",
        "0.05",
        "--json",
    ],
    "bad input": ["op", "softmax", "--rows", "0", "--cols", "8", "--json"],
    "ad-hoc device": ["op", "add", "--numel", "1M", "--peak", "100T", "--bandwidth", "1T"],
}


@in_browser
@pytest.mark.parametrize("case", CASES)
def test_run_gives_the_installed_commands_output(opened, case):
    argv = CASES[case]
    got = opened.page.evaluate("argv => window.rooflineBook.run(argv)", argv)
    want = _installed(argv)
    assert (got["code"], got["stdout"], got["stderr"]) == (
        want.returncode,
        want.stdout,
        want.stderr,
    )
    if case == "bad input":
        assert want.returncode == 2 and "--rows" in want.stderr
    else:
        assert want.returncode == 0 and want.stdout
    assert not opened.outside, f"requests left the site: {opened.outside}"
    assert not opened.errors, opened.errors


def _cli_text_rows(argv: list[str]) -> dict[str, str]:
    """The installed command's text output, label -> value."""
    out = _installed(argv).stdout
    return {
        m.group(1).strip(): m.group(2).strip()
        for m in re.finditer(r"^(\S.*?)\s{2,}(\S.*)$", out, re.M)
    }


def _page_rows(page, caption_part: str) -> dict[str, str]:
    return page.evaluate(
        """part => {
            const t = [...document.querySelectorAll('.calc-table')]
                .find(t => t.caption.textContent.includes(part));
            return Object.fromEntries([...t.tBodies[0].rows].map(
                r => [r.cells[0].textContent, r.cells[1].textContent]));
        }""",
        caption_part,
    )


@in_browser
def test_form_shows_the_commands_numbers_and_a_point_on_the_roofline(browser, hosted):  # noqa: F811
    command = "op gemm --m 4096 --k 4096 --n 4096 --dtype bf16 --device h100-sxm"
    query = "?" + urllib.parse.urlencode({"cmd": command})
    p, requested, first = _open(browser, hosted, query)
    try:
        page = p.page
        assert page.locator("#roofline-calculator").get_attribute("data-state") == "done"
        text = _cli_text_rows(command.split())
        shown = _page_rows(page, "代价与时间下界")
        pairs = {  # the page's row -> the text output's row
            "FLOPs": "FLOPs",
            "读取的字节": "bytes read",
            "写入的字节": "bytes written",
            "kernel 数": "kernels",
            "时间下界": "time lower bound",
        }
        for zh, en in pairs.items():
            assert shown[zh] == text[en], (zh, shown[zh], text[en])
        assert text["bytes"].startswith(shown["必需字节数"])
        assert text["intensity"] == shown["算术强度"]
        # the point sits at its unit's intensity (chapter 4: I_u = F_u / bytes) and the
        # attainable rate the command gives
        result = json.loads(_installed([*command.split(), "--json"]).stdout)
        dot = page.locator(".calc-point").first
        unit = result["attainable_unit"]
        assert unit == "matrix" and result["flops_by_unit"][unit] == 2 * 4096**3
        assert float(dot.get_attribute("data-intensity")) == 2 * 4096**3 / result["bytes"]
        assert float(dot.get_attribute("data-rate")) == result["attainable_per_s"]
        box = dot.bounding_box()
        frame = page.locator(".calc-roofline").bounding_box()
        assert box and frame and frame["x"] <= box["x"] <= frame["x"] + frame["width"]
        # a later change: the table follows within the budget
        later = []
        for m in ("8192", "512", "300"):
            before = page.evaluate(
                "() => document.getElementById('roofline-calculator').dataset.answers"
            )
            started = time.perf_counter()
            page.fill("input[name='arg:m']", m)
            page.wait_for_function(
                "n => document.getElementById('roofline-calculator').dataset.answers !== n",
                arg=before,
            )
            later.append(time.perf_counter() - started)
            changed = command.replace("--m 4096", f"--m {m}")
            assert (
                _page_rows(page, "代价与时间下界")["FLOPs"]
                == _cli_text_rows(changed.split())["FLOPs"]
            )
        # the address carries the command shown, for a reader to share
        address = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["cmd"]
        assert ["roofline-book " + address[0]] == [page.locator(".calc-command").inner_text()]
        assert address[0] == changed
        own = _own_bytes(requested)
        _record(
            first_answer_s=round(first, 2),
            later_answer_s=round(max(later), 3),
            page_download_bytes=own,
        )
        assert first <= FIRST_ANSWER_S, f"first answer after {first:.1f} s"
        assert max(later) <= LATER_ANSWER_S, f"a later answer took {max(later) * 1e3:.0f} ms"
        assert own <= DOWNLOAD_LIMIT, f"the page downloads {own / 2**20:.1f} MiB"
        assert not p.outside and not p.errors, (p.outside, p.errors)
    finally:
        p.close()


def _own_bytes(requested: list[str]) -> int:
    """Bytes of the files the calculator page fetched that no other page fetches."""
    total = 0
    for url in set(requested):
        path = urllib.parse.urlsplit(url).path.split("/roofline-book/", 1)[-1]
        if path.startswith("_static/calculator") or path == PAGE:
            total += (HTML / urllib.parse.unquote(path)).stat().st_size
    return total


@in_browser
def test_a_bad_input_shows_the_commands_error_in_place(browser, hosted):  # noqa: F811
    with _on(browser, hosted, "op softmax --rows 0", state="error") as page:
        want = _installed(
            ["op", "softmax", "--rows", "0", "--cols", "4096", "--device", "h100-sxm", "--json"]
        )
        assert page.locator(".calc-error").inner_text() == want.stderr.strip()
        page.fill("input[name='arg:rows']", "4096")
        page.wait_for_function(
            "() => document.getElementById('roofline-calculator').dataset.state === 'done'"
        )
        assert page.locator(".calc-error").is_hidden()


@in_browser
def test_a_model_shows_prefill_decode_and_the_batch_that_fits(browser, hosted):  # noqa: F811
    command = "infer --model llama-2-7b --batch 4 --kv-dtype fp8 --device h100-sxm"
    with _on(browser, hosted, command) as page:
        text = _cli_text_rows(command.split())
        shown = _page_rows(page, "的推理")
        assert shown["显存装得下的最大 batch"] == text["largest batch that fits"]
        assert shown["整个 batch 的 KV cache"] == text["KV cache, whole batch"]
        assert text["decode step, kernel by kernel"].startswith(
            shown["decode 一步的时间下界（算子逐个执行）"]
        )
        groups = page.eval_on_selector_all(".calc-point", "ds => ds.map(d => d.dataset.group)")
        result = json.loads(_installed([*command.split(), "--json"]).stdout)
        # one point per operator that does FLOPs on a FLOP/s unit, in its phase's colour
        expected = [
            phase
            for phase in ("prefill", "decode")
            for op in result[phase]["layer_ops"]
            if op["flops"] > 0 and op["attainable_unit"] not in (None, "special")
        ]
        assert sorted(groups) == sorted(expected) and len(expected) > 10


@in_browser
def test_other_pages_load_nothing_of_the_calculator(browser, hosted):  # noqa: F811
    p = _Page(browser, hosted)
    requested: list[str] = []
    p.page.on("request", lambda r: requested.append(r.url))
    try:
        p.open("chapters/06-gemm.html")
        p.page.wait_for_load_state("networkidle")
        assert not [
            u
            for u in requested
            if "calculator" in u.rsplit("/", 1)[-1] or "/_static/calculator/" in u
        ]
    finally:
        p.close()


# -- no browser: the page's Python side and the chapters' links --------------------------


def test_tables_show_what_the_text_output_shows():
    argv = ["infer", "--model", "mistral-7b", "--batch", "16", "--weights-dtype", "int4"]
    result = json.loads(calculator.run([*argv, "--json"])["stdout"])
    text = _cli_text_rows(argv)
    rows = dict(calculator.tables(result)[0]["rows"])
    assert rows["显存装得下的最大 batch"] == text["largest batch that fits"]
    assert rows["权重"] == text["weights"]
    assert text["prefill, any implementation"].startswith(rows["prefill 的时间下界（任何实现）"])
    tokens = text["decode tokens per second"].split()[0]
    assert rows["decode 每秒 token 数的上限（算子逐个执行）"] == tokens
    assert rows["权重 GEMM 达到 ridge point 的 decode batch"] == text["decode batch to the ridge"]


def test_an_ad_hoc_device_gets_one_compute_roof_and_its_tables():
    argv = ["op", "add", "--numel", "1M", "--peak", "100T", "--bandwidth", "1T"]
    result = json.loads(calculator.run([*argv, "--json"])["stdout"])
    first, times = calculator.tables(result)
    text = _cli_text_rows(argv)
    assert dict(first["rows"])["时间下界"] == text["time lower bound"] == "6 us"  # 6 MB / 1 TB/s
    assert [row[:2] for row in times["rows"]] == [["计算", "100 TFLOP/s"], ["HBM", "1 TB/s"]]
    (point,) = calculator.points(result)
    assert point["intensity"] == 1e6 / 6e6 and point["rate"] == 1e12 / 6  # B x I on the HBM roof


def test_points_leave_out_the_special_unit_and_ops_without_flops():
    result = json.loads(calculator.run(["infer", "--model", "llama-2-7b", "--json"])["stdout"])
    names = {p["label"] for p in calculator.points(result) if p["group"] == "decode"}
    assert "KV cache write" not in names and "QKV projection" in names
    # an operator the special function unit bounds: its rate counts evaluations, not FLOPs
    gelu = json.loads(calculator.run(["op", "gelu", "--numel", "1M", "--json"])["stdout"])
    assert calculator.points(gelu)[0]["unit"] == "vector"
    assert calculator.points({**gelu, "attainable_unit": "special"}) == []
    # nor is there a FLOP/s roof for it: H100's roofs are its two memory levels and two units
    names = [r["name"] for r in calculator.roofs(gelu)]
    assert sorted(names) == ["hbm", "l2", "matrix", "vector"]


def test_run_in_process_matches_a_fresh_interpreter():
    for argv in CASES.values():
        got = calculator.run(argv)
        want = _installed(argv)
        assert (got["code"], got["stdout"], got["stderr"]) == (
            want.returncode,
            want.stdout,
            want.stderr,
        )
    with pytest.raises(TypeError, match="argv"):
        calculator.run("op gemm")


def test_every_operator_argument_has_a_label_and_flag_the_command_accepts():
    spec = page_spec.spec()
    for operator in spec["operators"]:
        helptext = calculator.run(["op", operator["key"], "--help"])["stdout"]
        for arg in operator["args"]:
            assert arg["flag"] in helptext, (operator["key"], arg["flag"])
            # a required size starts filled in, or the form's first answer is an error
            assert not arg["required"] or isinstance(arg["example"], int), arg
        example = ["op", operator["key"]]
        for arg in operator["args"]:
            if arg["required"]:
                example += [arg["flag"], str(arg["example"])]
        # the form's first answer for each operator is a real answer, not an error
        assert calculator.run(example)["code"] == 0, example


LINK = re.compile(r"\{calculator\}`([^`]+)`")


def _links() -> list[tuple[str, str]]:
    return [
        (page.relative_to(ROOT / "docs").as_posix(), m.group(1))
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for m in LINK.finditer(page.read_text("utf-8"))
    ]


def test_the_chapters_link_the_calculator_with_commands_that_run():
    links = _links()
    assert len({page for page, _ in links}) >= 6, links
    for page, command in links:
        done = calculator.run(command.split())
        assert done["code"] == 0, (page, command, done["stderr"])


def _sample_links() -> list[str]:
    """A chapter link with a flag, one with a device, and one of a model."""
    commands = [c for _, c in _links()]
    picks = [
        next(c for c in commands if c.startswith("op") and "--causal" in c),
        next(c for c in commands if c.startswith("op") and "--device" in c),
        next(c for c in commands if c.startswith("infer")),
    ]
    return picks


@in_browser
@pytest.mark.parametrize("command", _sample_links())
def test_a_chapters_link_opens_the_calculator_on_its_command(browser, hosted, command):  # noqa: F811
    with _on(browser, hosted, command) as page:
        shown = page.locator(".calc-command").inner_text()
        expected = command if "--device" in command else f"{command} --device h100-sxm"
        assert shown == f"roofline-book {expected}"
        got = page.evaluate("argv => window.rooflineBook.run(argv)", [*command.split(), "--json"])
        assert got["stdout"] == _installed([*command.split(), "--json"]).stdout


def _many_commands() -> list[list[str]]:
    """Every chapter link, every catalog model on two devices (TP 1 and 8, quantized KV), and
    every operator's first form answer: each with --json."""
    from roofline_book.llm.config import models

    commands = [c.split() for _, c in _links()]
    for key in models():
        commands.append(["infer", "--model", key, "--batch", "16", "--device", "h200-sxm"])
        commands.append(["infer", "--model", key, "--tp", "8", "--kv-dtype", "fp8"])
    for operator in page_spec.spec()["operators"]:
        example = ["op", operator["key"], "--device", "mi300x"]
        for arg in operator["args"]:
            if arg["required"]:
                example += [arg["flag"], str(arg["example"])]
        commands.append(example)
    return [[*c, "--json"] for c in commands]


@in_browser
def test_the_browser_prints_what_this_python_prints_for_many_commands(opened):
    """Pyodide's Python is not this one (another version, libm in WebAssembly): every float
    the package prints must still come out the same, bit for bit."""
    commands = _many_commands()
    got = opened.page.evaluate(
        "async list => { const out = []; for (const a of list) "
        "out.push((await window.rooflineBook.run(a)).stdout); return out; }",
        commands,
    )
    differ = [
        " ".join(c)
        for c, out in zip(commands, got, strict=True)
        if out != calculator.run(c)["stdout"]
    ]
    assert not differ, differ


@in_browser
def test_an_ad_hoc_device_in_the_form(browser, hosted):  # noqa: F811
    command = "op add --numel 1M --peak 100T --bandwidth 1T"
    with _on(browser, hosted, command) as page:
        assert page.locator("select[name='device']").input_value() == ""
        shown = _page_rows(page, "代价与时间下界")
        assert shown["时间下界"] == _cli_text_rows(command.split())["time lower bound"]
        legend = page.locator(".calc-roofline").text_content() or ""
        assert "计算 100 TFLOP/s" in legend and "特殊函数单元" not in legend


def test_tp_layer_tables_say_they_are_the_whole_layer():
    # with --tp 8 the layer tables are the text output's "one layer, before the split": the
    # whole layer's operators. Llama-3-70B (config.json: hidden_size 8192, 64 heads, 8 KV
    # heads, head_dim 128): the QKV projection of a 4096-token prompt is
    # 2 x 4096 x 8192 x (8192 + 2 x 1024) = 687_194_767_360 FLOPs, the whole layer's, not
    # an eighth of it (85.9 GFLOP), so no title may say "on one device"
    argv = ["infer", "--model", "llama-3-70b", "--tp", "8", "--context", "4096", "--json"]
    result = json.loads(calculator.run(argv)["stdout"])
    _, prefill, decode = calculator.tables(result)
    for table in (prefill, decode):
        assert "一块设备上" not in table["title"]
        assert table["title"].endswith("（整层，拆分到各设备之前）"), table["title"]
    qkv = {row[0]: row for row in prefill["rows"]}["QKV projection"]
    assert qkv[1] == "687.2 GFLOP"
    # without a split the titles say nothing of devices
    one = json.loads(calculator.run(["infer", "--model", "llama-3-8b", "--json"])["stdout"])
    assert [t["title"] for t in calculator.tables(one)[1:]] == [
        "一层的算子：prefill",
        "一层的算子：decode 一步",
    ]


@in_browser
@pytest.mark.parametrize(
    "command,argv",
    [
        # each name is one the form has no choice for: the page shows the command's own error
        ("infer --model deepseek-v9", ["infer", "--model", "deepseek-v9"]),
        ("op gemm --m 64 --k 64 --n 64 --device tpu-v9",
         ["op", "gemm", "--m", "64", "--k", "64", "--n", "64", "--device", "tpu-v9"]),
        ("op conv2d --m 4", ["op", "conv2d", "--m", "4"]),
    ],
)  # fmt: skip
def test_a_link_with_an_unknown_name_shows_the_commands_error(browser, hosted, command, argv):  # noqa: F811
    want = _installed([*argv, "--json"])
    assert want.returncode == 2
    with _on(browser, hosted, command, state="error") as page:
        assert page.locator(".calc-error").inner_text() == want.stderr.strip()
        assert page.locator(".calc-command").inner_text() == f"roofline-book {command}"
        assert page.locator(".calc-table").count() == 0  # no default model's or op's numbers


@in_browser
def test_a_link_with_another_spelling_selects_the_name_the_command_answers_with(
    browser,  # noqa: F811
    hosted,
):
    # the command line takes any case (--device H100-SXM); the form selects its key
    with _on(browser, hosted, "infer --model Llama-2-7B --device H20") as page:
        assert page.locator("select[name='model']").input_value() == "llama-2-7b"
        assert page.locator("select[name='device']").input_value() == "h20"
        assert "--model llama-2-7b" in page.locator(".calc-command").inner_text()


# -- a pasted config.json ------------------------------------------------------------------

DEEPSEEK_V3 = ROOT / "roofline_book" / "llm" / "data" / "configs" / "deepseek-v3.json"
#: The infer form with DeepSeek-V3 pasted: EP 8 on one H200 node, attention data-parallel.
PASTED = ["infer", "--model", "config.json", "--tp", "1", "--ep", "8", "--device", "h200-sxm"]
#: DeepSeek-V3's KV cache per token, by hand from its config.json: each of the 61 layers
#: caches the kv_lora_rank 512 latent and the qk_rope_head_dim 64 RoPE key, BF16.
V3_KV_BYTES = 61 * (512 + 64) * 2


def test_a_pasted_config_runs_as_the_command_reads_the_saved_file(tmp_path):
    text = DEEPSEEK_V3.read_text("utf-8")
    here = os.getcwd()
    got = calculator.run([*PASTED, "--json"], config=text)
    assert os.getcwd() == here  # the scratch folder is left
    # the same text saved as config.json, the installed command run beside it
    (tmp_path / "config.json").write_text(text, "utf-8")
    want = subprocess.run([str(CLI), *PASTED, "--json"], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert (got["code"], got["stdout"], got["stderr"]) == (0, want.stdout, want.stderr)
    result = json.loads(got["stdout"])
    assert result["kv_cache_bytes_per_token"] == V3_KV_BYTES == 70272
    rows = dict(calculator.tables(result)[0]["rows"])
    assert rows["每个 token 的 KV cache"] == "70.27 kB"
    assert rows["精度（取自 config.json 的 quantization_config）"].endswith(
        "（W8A8），每 128×128 块一个 FP32 scale"
    )
    assert rows["设备数"] == "8（max(TP 1, EP 8) × PP 1，一个节点）"


@pytest.mark.parametrize(
    "text,message",
    [
        ("{not json", "--model: 'config.json' is not valid JSON"),
        ('{"model_type": "gpt2"}', "--model: model_type 'gpt2' is not supported in config.json"),
        ('{"model_type": "llama", "hidden_size": 64}', "--model: "),
    ],
)
def test_a_bad_pasted_config_is_the_commands_one_line_error(text, message):
    done = calculator.run([*PASTED, "--json"], config=text)
    assert done["code"] == 2 and done["stdout"] == ""
    assert done["stderr"].startswith(f"roofline-book infer: error: {message}")
    assert len(done["stderr"].splitlines()) == 1 and "Traceback" not in done["stderr"]
    with pytest.raises(TypeError, match="config"):
        calculator.run(PASTED, config=b"{}")


@in_browser
def test_a_pasted_deepseek_v3_config_shows_its_kv_cache_per_token(browser, hosted):  # noqa: F811
    text = DEEPSEEK_V3.read_text("utf-8")
    command = "infer --model llama-2-7b --tp 1 --ep 8 --device h200-sxm"
    # llama-2-7b is dense: --ep 8 is the command's error until the config is pasted
    with _on(browser, hosted, command, state="error") as page:
        before = page.evaluate(
            "() => document.getElementById('roofline-calculator').dataset.answers || '0'"
        )
        # a loaded 2-core CI machine can keep the page's thread busy past playwright's default
        # 30 s; the answer-time budgets are held by test_form_shows_the_commands_numbers_...
        page.fill("textarea[name='config']", text, timeout=120_000)
        page.wait_for_function(
            "n => (document.getElementById('roofline-calculator').dataset.answers || '0') !== n",
            arg=before,
            timeout=120_000,
        )
        assert page.locator("#roofline-calculator").get_attribute("data-state") == "done"
        assert page.locator(".calc-command").inner_text() == (
            "roofline-book " + " ".join(PASTED[:3] + ["--tp", "1", "--ep", "8"] + PASTED[-2:])
        )
        shown = _page_rows(page, "的推理")
        assert shown["每个 token 的 KV cache"] == "70.27 kB"  # 70,272 bytes
        got = page.evaluate(
            "([argv, text]) => window.rooflineBook.run(argv, text)", [[*PASTED, "--json"], text]
        )
        assert json.loads(got["stdout"])["kv_cache_bytes_per_token"] == V3_KV_BYTES
        assert page.locator("select[name='model']").is_disabled()
        # a broken paste: the command's own one-line error in the error area
        page.fill("textarea[name='config']", text.replace('"deepseek_v3"', '"gpt2"'))
        page.wait_for_function(
            "() => document.getElementById('roofline-calculator').dataset.state === 'error'"
        )
        error = page.locator(".calc-error").inner_text()
        assert error.startswith("roofline-book infer: error: --model: model_type 'gpt2'")
        assert "Traceback" not in error and len(error.splitlines()) == 1


# -- the serving form ----------------------------------------------------------------------

#: The serving form's command: Llama-3-8B on one H100, 1000-token prompts, 200-token outputs.
SERVE = (
    "serve --model llama-3-8b --rate 20 --prompt 1000 --output 200 --slo-ttft 0.2 "
    "--slo-tpot 0.05 --device h100-sxm"
)


def _cli_cells(argv: list[str]) -> dict[str, list[str]]:
    """The installed command's text output, label -> its cells (split at 2+ spaces)."""
    out = _installed(argv).stdout
    return {
        m.group(1).strip(): re.split(r"\s{2,}", m.group(2).strip())
        for m in re.finditer(r"^(\S.*?)\s{2,}(\S.*)$", out, re.M)
    }


def _serve_rows_match_the_text_output(rows: dict[str, list[str]], argv: list[str]) -> None:
    """The page's latency and throughput cells are the text output's, labelled as it labels
    them: latencies lower bounds, throughputs upper bounds."""
    text = _cli_cells(argv)
    assert rows["TTFT（下界）"] == text["TTFT, lower bound"]
    assert rows["TPOT（下界）"] == text["TPOT, lower bound"]
    assert rows["端到端延迟（下界）"] == text["end to end, lower bound"]
    assert rows["吞吐（上界）"] == text["throughput, upper bound"]
    assert rows["输出 token 的吞吐（上界）"] == text["output tokens, upper bound"]
    goodput = text["goodput, upper bound"][0].split(" requests/s")[0]
    assert rows["goodput（上界）"][0].startswith(f"{goodput} requests/s 满足 TTFT ≤ 200 ms")


def test_serve_tables_show_what_the_text_output_shows():
    argv = SERVE.split()
    result = json.loads(calculator.run([*argv, "--json"])["stdout"])
    found = calculator.tables(result)
    assert [t["title"] for t in found] == [
        "llama-3-8b 的服务",
        "延迟（下界）",
        "吞吐与 goodput",
    ]
    rows = {row[0]: row[1:] for t in found[1:] for row in t["rows"]}
    _serve_rows_match_the_text_output(rows, argv)
    # an estimate is labelled as one, with the bound beside it in parentheses, as the CLI does
    est = json.loads(calculator.run([*argv, "--efficiency", "0.5", "--json"])["stdout"])
    latency = calculator.tables(est)[1]
    assert latency["title"] == "延迟（估计，括号内为下界）"
    ttft = dict((r[0], r[1:]) for r in latency["rows"])["TTFT（估计，括号内为下界）"]
    text = _cli_cells([*argv, "--efficiency", "0.5"])["TTFT, estimate (bound)"]
    assert ttft == text and all(" (" in cell for cell in ttft)


def test_serve_figures_are_the_commands_deployment_and_load():
    # one request alone: step 0 prefills its 1000-token prompt, step 1 decodes one token. A
    # decode step at batch 1 reads every weight but the embedding table once, and the KV cache
    # of 1001 tokens (Llama-3-8B's config.json: hidden 4096, 32 layers, FFN 14336, 8 KV heads of
    # 128, vocabulary 128256). Per layer 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336
    # = 218_103_808 weights; x 32, + the LM head 128256 x 4096 = 7_504_658_432; BF16 bytes
    # 2 x that + KV 32 x 2 x 1024 x 2 x 1001 = 15_140_557_824 B; / 3.35 TB/s (H100 SXM's HBM)
    # = 4.5196 ms (norm weights and activations add 0.005 %)
    argv = ["serve", "--model", "llama-3-8b", "--rate", "1", "--requests", "1"]
    got = calculator.serve_figures(argv)
    first, second = got["timeline"][:2]
    assert first["items"] == [[0, "prefill", 1000]] and first["start"] == 0
    assert second["items"] == [[0, "decode", 1]] and second["bound"] == "memory"
    assert second["end"] - second["start"] == pytest.approx(15_140_557_824 / 3.35e12, rel=1e-3)
    # static batching with everyone there at once takes all four prompts into its first step
    argv = ["serve", "--model", "llama-3-8b", "--rate", "inf", "--requests", "4"]
    static = calculator.serve_figures([*argv, "--scheduler", "static"])
    assert static["timeline"][0]["items"] == [[i, "prefill", 1000] for i in range(4)]
    # the curve: below saturation the engine keeps up, so throughput is the offered rate;
    # its last point (the saturated steady throughput) queues, so p90 TTFT has grown
    curve = calculator.serve_figures(SERVE.split())["pareto"]
    assert [round(p["rate_per_s"] / curve[-1]["rate_per_s"], 2) for p in curve[:3]] == [
        0.1,
        0.2,
        0.3,
    ]
    low = curve[1]
    assert low["requests_per_s"] == pytest.approx(low["rate_per_s"], rel=0.1)
    assert curve[-1]["ttft_p90_s"] > 5 * low["ttft_p90_s"]
    # a longer run is drawn from its first CURVE_REQUESTS requests, and says so
    many = calculator.serve_figures([*argv[:4], "1", "--requests", "1001"])
    assert many["curve_requests"] == 1000
    with pytest.raises(TypeError, match="argv"):
        calculator.serve_figures("serve --model llama-3-8b")


def _serve_page_rows(page) -> dict[str, list[str]]:
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.calc-table tbody tr')]
            .map(r => [r.cells[0].textContent, [...r.cells].slice(1).map(c => c.textContent)]))"""
    )


def _figures_drawn(page, before: str) -> None:
    page.wait_for_function(
        "n => (document.getElementById('roofline-calculator').dataset.figures || '0') !== n",
        arg=before,
        timeout=120_000,
    )


@in_browser
def test_the_serving_form_answers_as_the_cli_does(browser, hosted):  # noqa: F811
    with _on(browser, hosted, SERVE) as page:
        _figures_drawn(page, "0")
        assert page.locator(".calc-command").inner_text() == f"roofline-book {SERVE}"
        _serve_rows_match_the_text_output(_serve_page_rows(page), SERVE.split())
        # the curve and the timeline hold the numbers this Python simulates, bit for bit
        want = calculator.serve_figures(SERVE.split())
        dots = page.eval_on_selector_all(
            ".calc-pareto-point",
            "ds => ds.map(d => [d.dataset.line, +d.dataset.throughput, +d.dataset.latency])",
        )
        expected = [
            [line, p["requests_per_s"], p[f"{line}_p90_s"]]
            for line in ("ttft", "tpot")
            for p in want["pareto"]
        ]
        assert dots == expected and len(dots) == 20
        bars = page.eval_on_selector_all(
            ".calc-step",
            "bs => bs.map(b => [+b.dataset.request, b.dataset.kind, +b.dataset.tokens])",
        )
        assert bars == [item for step in want["timeline"] for item in step["items"]]
        assert page.locator(".calc-figure").is_hidden()  # no roofline for a stream of requests
        # another scheduler, chosen in the form: the page follows the command again
        before = page.evaluate(
            "() => document.getElementById('roofline-calculator').dataset.figures"
        )
        page.select_option("select[name='serve_scheduler']", "static")
        _figures_drawn(page, before)
        # the form's order: the scheduler after the lengths
        changed = SERVE.replace("--output 200", "--output 200 --scheduler static")
        assert page.locator(".calc-command").inner_text() == f"roofline-book {changed}"
        _serve_rows_match_the_text_output(_serve_page_rows(page), changed.split())
        page.locator(".calc-serve-figures").screenshot(path=str(BUILD / "calculator-serve.png"))


#: 10,000 requests near saturation: Llama-3-8B on one H100, 1000-token prompts, 200-token outputs
#: at 50 a second (the saturated steady throughput is about 54 a second, checked below).
TEN_THOUSAND = [
    "serve", "--model", "llama-3-8b", "--device", "h100-sxm", "--prompt", "1000",
    "--output", "200", "--requests", "10000", "--rate", "50", "--json",
]  # fmt: skip
SERVE_10K_S = 10.0


@in_browser
def test_ten_thousand_requests_simulate_in_the_page_within_ten_seconds(opened):
    saturated = json.loads(
        calculator.run(
            ["serve", "--model", "llama-3-8b", "--rate", "inf", "--requests", "2000", "--json"]
        )["stdout"]  # fmt: skip
    )
    assert 0.8 * saturated["requests_per_s"] < 50 < 1.2 * saturated["requests_per_s"]
    took_ms, code, out = opened.page.evaluate(
        """async argv => { const t = performance.now();
            const r = await window.rooflineBook.run(argv);
            return [performance.now() - t, r.code, r.stdout]; }""",
        TEN_THOUSAND,
    )
    _record(serve_10k_requests_s=round(took_ms / 1e3, 2))
    assert code == 0 and json.loads(out)["requests"] == 10_000
    assert out == calculator.run(TEN_THOUSAND)["stdout"]  # the same simulation, bit for bit
    assert took_ms / 1e3 < SERVE_10K_S, f"10,000 requests took {took_ms / 1e3:.1f} s in the page"


def test_a_pasted_config_serves_as_its_catalog_model():
    # the serving form shares the paste box: Llama-3.1-8B's config.json, pasted, is served
    # exactly as the catalog's llama-3.1-8b, which is read from that same file
    text = (ROOT / "roofline_book" / "llm" / "data" / "configs" / "llama-3.1-8b.json").read_text()
    argv = ["serve", "--rate", "20", "--requests", "200", "--json"]
    pasted = calculator.run([*argv, "--model", "config.json"], config=text)
    catalog = calculator.run([*argv, "--model", "llama-3.1-8b"])
    # only the name differs: a pasted file is named by its model_type
    assert (
        pasted["code"] == 0
        and pasted["stdout"].replace('"model": "llama"', '"model": "llama-3.1-8b"')
        == catalog["stdout"]
    )
    assert calculator.serve_figures(argv[:-1] + ["--model", "config.json"], config=text) == (
        calculator.serve_figures(argv[:-1] + ["--model", "llama-3.1-8b"])
    )
