"""Page weight: each page's own bytes (its HTML and the figures it shows), the theme's
shared files counted once. Writes _build/page-weight.json and holds each page to 300 KB."""

from __future__ import annotations

import json
import re
import urllib.parse

import pytest
from conftest import BUILD
from test_site import PAGES

HTML = BUILD / "html"
LIMIT = 300 * 1024  # bytes per page, HTML plus its own figures

pytestmark = pytest.mark.site


def _own_bytes(page: str) -> tuple[int, int]:
    path = HTML / f"{page}.html"
    text = path.read_text("utf-8")
    figures = 0
    for src in set(re.findall(r'<img[^>]+src="([^"]+)"', text)):
        if src.startswith(("http", "data:")):
            continue
        figures += (path.parent / urllib.parse.unquote(src)).resolve().stat().st_size
    return path.stat().st_size, figures


def test_page_weight():
    report = {}
    for page in PAGES:
        html_bytes, figure_bytes = _own_bytes(page)
        report[page] = {
            "html": html_bytes,
            "figures": figure_bytes,
            "total": html_bytes + figure_bytes,
        }
    shared = sum(f.stat().st_size for f in (HTML / "_static").rglob("*") if f.is_file())
    site = sum(f.stat().st_size for f in HTML.rglob("*") if f.is_file())
    (BUILD / "page-weight.json").write_text(
        json.dumps({"pages": report, "shared_static": shared, "site": site}, indent=2)
    )
    heavy = {p: r["total"] for p, r in report.items() if r["total"] > LIMIT}
    assert not heavy, f"pages over {LIMIT // 1024} KB: {heavy}"
