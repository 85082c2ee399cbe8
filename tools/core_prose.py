"""Count each chapter's core prose in the built HTML: what a learner reads on the main line.

Core prose is the text of paragraphs and list items in the page's article, outside folded
dropdowns (the answers to problems among them), code cells and their outputs, inline code,
math, figures and tables.
For each chapter the script prints the Chinese characters of that prose, the numbers it holds
(per 100 Chinese characters, and in its densest paragraph), the paragraphs with more than five
numbers, and the dropdowns, figures and diagrams of the page.

    python tools/core_prose.py [_build/html] [--json]

A number is a run of digits (with a decimal point or thousands separators) that is not part of
a name such as H100, BF16 or L2: the character before it is not a Latin letter or an underscore.
The numbers of a cross reference (图 6.1, 式 (6.2)) are not counted.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:[.,]\d+)*")
# What a learner does not read on the main line.
FOLDED = [
    "details",  # sphinx-design dropdowns (深入一步, answers)
    "div.cell",  # code cells and their outputs
    "div.highlight",
    "pre",
    "code",  # inline code is code, not prose
    "table",
    "figure",
    "div.figure",
    "div.math",
    "span.math",
    "math",
    "mjx-container",
    "nav",
]
# The roofline ground of the reference chapter: FLOPs, memory traffic, intensity, roofline, GEMM.
REFERENCE_GROUND = (
    "01-flops",
    "02-memory-traffic",
    "03-arithmetic-intensity",
    "04-roofline",
    "06-gemm",
)


def numbers(text: str) -> int:
    """How many numbers ``text`` holds (see the module's docstring)."""
    return len(NUMBER.findall(text))


def chapter(path: Path) -> dict[str, object]:
    """The counts of one built chapter page."""
    soup = BeautifulSoup(path.read_text("utf-8"), "html.parser")
    article = soup.find("article") or soup
    dropdowns = article.select("details.sd-dropdown")
    deeper = [
        d
        for d in dropdowns
        if "深入一步" in (d.find("summary").get_text() if d.find("summary") else "")
    ]
    figures = article.select("figure")
    diagrams = [f for f in figures if "diagram" in (f.get("class") or [])]
    for selector in FOLDED:
        for node in article.select(selector):
            node.decompose()
    for ref in article.select("a.reference.internal"):
        # "图 6.1", "式 (6.2)", "第 3 章": the numbers of a cross reference are not data
        ref.string = NUMBER.sub("", ref.get_text())
    paragraphs = []
    for node in article.find_all(["p", "li"]):
        if node.name == "li" and node.find("p"):
            continue  # its paragraphs are counted themselves
        text = node.get_text(" ", strip=True)
        if text:
            paragraphs.append(text)
    cjk = sum(len(CJK.findall(p)) for p in paragraphs)
    counts = [numbers(p) for p in paragraphs]
    total = sum(counts)
    return {
        "chapter": path.stem,
        "cjk": cjk,
        "numbers": total,
        "per_100": round(100 * total / cjk, 2) if cjk else 0.0,
        "paragraphs": len(paragraphs),
        "max_in_paragraph": max(counts, default=0),
        "paragraphs_over_5": sum(1 for c in counts if c > 5),
        "dropdowns": len(dropdowns),
        "deeper": len(deeper),
        "figures": len(figures),
        "diagrams": len(diagrams),
    }


CHAPTERS = Path(__file__).resolve().parents[1] / "docs" / "chapters"


def book(html: Path) -> list[dict[str, object]]:
    """The counts of every chapter of docs/chapters, from its page under ``html/chapters``."""
    stems = sorted(p.stem for p in CHAPTERS.glob("[0-9][0-9]-*.md"))
    return [chapter(html / "chapters" / f"{stem}.html") for stem in stems]


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    html = Path(args[0]) if args else Path("_build/html")
    rows = book(html)
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    keys = [
        "cjk",
        "numbers",
        "per_100",
        "max_in_paragraph",
        "paragraphs_over_5",
        "dropdowns",
        "deeper",
        "figures",
        "diagrams",
    ]
    print("| chapter | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for r in rows:
        print(f"| {r['chapter']} | " + " | ".join(str(r[k]) for k in keys) + " |")
    ground = sum(r["cjk"] for r in rows if r["chapter"] in REFERENCE_GROUND)
    cjk = sum(r["cjk"] for r in rows)
    nums = sum(r["numbers"] for r in rows)
    print(
        f"\nall chapters: {cjk} CJK characters of core prose, "
        f"{100 * nums / cjk:.2f} numbers per 100; "
        f"roofline ground ({', '.join(REFERENCE_GROUND)}): {ground} CJK characters; "
        f"diagrams: {sum(r['diagrams'] for r in rows)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
