"""The built book as a learner reads it: a core path per chapter, depth folded beneath it,
rules of thumb, schematic diagrams, problems that teach, short captions (run `make html`).

The counts come from tools/core_prose.py, which reads each chapter's built HTML the way the
note of the chapter-shape work reports them.
"""

from __future__ import annotations

import importlib.util
import re

import pytest
from bs4 import BeautifulSoup
from conftest import BUILD, ROOT

HTML = BUILD / "html"
pytestmark = pytest.mark.site

_spec = importlib.util.spec_from_file_location("core_prose", ROOT / "tools" / "core_prose.py")
assert _spec is not None and _spec.loader is not None
core_prose = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(core_prose)

CHAPTERS = sorted(p.stem for p in (ROOT / "docs" / "chapters").glob("[0-9][0-9]-*.md"))
SUMMARY = CHAPTERS[-1]


def _soup(chapter: str) -> BeautifulSoup:
    path = HTML / "chapters" / f"{chapter}.html"
    if not path.exists():
        pytest.fail(f"{path} is missing: build the book first (make html)")
    return BeautifulSoup(path.read_text("utf-8"), "html.parser")


@pytest.fixture(scope="module")
def counts():
    if not (HTML / "chapters").is_dir():
        pytest.fail(f"{HTML} holds no built book: run `make html` first")
    return {row["chapter"]: row for row in core_prose.book(HTML)}


def test_the_counter_counts_what_a_learner_reads(tmp_path):
    # one paragraph of 19 Chinese characters with 3 numbers (H100 and BF16 are names, not numbers,
    # and the cross reference's 2.1 is not data),
    # one folded dropdown and one code cell that must not count
    page = """<article><p>在 H100 上，BF16 的加法每个元素搬 6 字节，做 1 次运算，强度 0.17
    （<a class="reference internal" href="#x">式 (2.1)</a>）。</p>
    <details class="sd-dropdown"><summary>深入一步：别的</summary>
    <p>这里有 99 个数 1 2 3。</p></details>
    <div class="cell"><p>42 43 44</p></div></article>"""
    soup_path = tmp_path / "sample.html"
    soup_path.write_text(page, "utf-8")
    row = core_prose.chapter(soup_path)
    assert row["numbers"] == 3 and row["max_in_paragraph"] == 3
    # 在上的加法每个元素搬字节做次运算强度式: 19 ideographs (punctuation not counted)
    assert row["cjk"] == 19
    assert row["dropdowns"] == 1 and row["deeper"] == 1


def test_core_prose_is_light_in_numbers(counts):
    # about 2.5 numbers per 100 Chinese characters (the median of the chapters), about 5 in a
    # paragraph; the summary and the five chapters of the reference chapter's ground included
    heavy = {c: r["per_100"] for c, r in counts.items() if r["per_100"] > 2.7}
    assert not heavy, f"numbers per 100 Chinese characters of core prose: {heavy}"
    dense = {c: r["max_in_paragraph"] for c, r in counts.items() if r["max_in_paragraph"] > 6}
    assert not dense, f"most numbers in one core paragraph: {dense}"


def test_the_roofline_ground_is_short(counts):
    ground = sum(counts[c]["cjk"] for c in core_prose.REFERENCE_GROUND)
    assert ground <= 9000, (
        f"{ground} Chinese characters of core prose in {core_prose.REFERENCE_GROUND}"
    )


def test_every_chapter_folds_its_depth_and_keeps_rules_of_thumb(counts):
    for chapter in CHAPTERS:
        if chapter == SUMMARY:
            continue
        soup = _soup(chapter)
        assert counts[chapter]["deeper"] >= 1, f"{chapter}: no 深入一步 dropdown"
        rules = soup.select("div.admonition.rule-of-thumb")
        assert rules, f"{chapter}: no 经验法则 box"
        for rule in rules:
            title = rule.select_one(".admonition-title").get_text(strip=True)
            assert title == "经验法则", f"{chapter}: a rule box titled {title!r}"


def test_every_chapter_has_an_estimate_and_a_measurement_problem():
    for chapter in CHAPTERS:
        heading = _soup(chapter).find(lambda tag: tag.name == "h2" and "习题" in tag.get_text())
        assert heading is not None, f"{chapter}: no 习题 section"
        text = heading.find_parent("section").get_text(" ")
        assert "先估算" in text, f"{chapter}: no estimate-before-you-compute problem"
        assert "在你的 GPU 上测" in text, f"{chapter}: no measure-it-on-your-GPU problem"


def test_the_book_draws_its_pictures():
    diagrams = {}
    for chapter in CHAPTERS:
        for figure in _soup(chapter).select("figure.diagram"):
            assert figure.select_one(".roofline-figure svg"), f"{chapter}: diagram without its SVG"
            diagrams[figure.get("id")] = chapter
    assert len(diagrams) >= 12, f"{len(diagrams)} schematic diagrams: {diagrams}"


def test_captions_are_one_or_two_sentences():
    long = []
    for chapter in CHAPTERS:
        for caption in _soup(chapter).select("figure figcaption .caption-text"):
            text = caption.get_text(" ", strip=True)
            sentences = [s for s in re.split(r"[。！？]", text) if s.strip()]
            if len(sentences) > 2:
                long.append(f"{chapter}: {text[:40]}…")
    assert not long, "captions of more than two sentences:\n" + "\n".join(long)


def test_the_interface_speaks_chinese():
    for chapter in CHAPTERS:
        page = (HTML / "chapters" / f"{chapter}.html").read_text("utf-8")
        for words in ("System Settings", "Link to this", "Show code cell", "Hide code cell"):
            assert words not in page, f"{chapter}: {words!r} left in English"
    page = (HTML / "chapters" / f"{CHAPTERS[0]}.html").read_text("utf-8")
    assert "跟随系统" in page
    script = (HTML / "_static" / "roofline-words.js").read_text("utf-8")
    assert "roofline-words.js" in page and "搜索完成" in script


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_terms_of_the_gpu_chapter_are_not_used_before_it(chapter):
    # SM, warp and lane are defined in the GPU chapter; chapters before it use them only in
    # folded depth (深入一步) that links to it
    gpu = next(c for c in CHAPTERS if c.endswith("-gpu"))
    if chapter >= gpu:
        return
    soup = _soup(chapter)
    for node in soup.select("details, div.cell, pre, table, figure, span.math, div.math"):
        node.decompose()
    text = (soup.find("article") or soup).get_text(" ")
    used = sorted({w for w in re.findall(r"\b(SM|SMs|warp|lane|thread block)\b", text)})
    assert not used, f"{chapter} uses {used} on its main line before the GPU chapter"


def test_no_stray_space_where_a_chinese_sentence_wraps():
    # A line break between two Chinese characters shows as a space in the browser
    # (docs/_ext/roofline_cjk.py removes them from running text).
    joined = re.compile(r"[\u4e00-\u9fff，。、：；）（]\n[\u4e00-\u9fff，。、：；（）]")
    found = []
    for chapter in CHAPTERS:
        for paragraph in _soup(chapter).find("article").find_all("p"):
            text = paragraph.get_text()
            found += [
                f"{chapter}: {text[max(0, m.start() - 20) : m.end() + 5]!r}"
                for m in joined.finditer(text)
            ]
    assert not found, found[:10]
