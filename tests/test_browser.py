"""The built site in a real browser: headless Debian Chromium driven by Playwright.

Serves _build/html on 127.0.0.1 and checks each page as a reader gets it:
no console errors, no request leaving 127.0.0.1, math typeset, figures visible,
Chinese search, the copy button, and figures legible in dark mode. A
screenshot of each page is saved under _build/screenshots/.
"""

from __future__ import annotations

import functools
import http.server
import io
import os
import pathlib
import threading
import urllib.parse

import pytest
from conftest import BUILD
from test_site import PAGES

from roofline_book.present import plotting

HTML = BUILD / "html"
SHOTS = BUILD / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

pytestmark = [
    pytest.mark.site,
    # CI installs Chromium, so there a missing browser is a failure, not a skip.
    pytest.mark.skipif(
        not pathlib.Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason=f"no Chromium at {CHROMIUM}",
    ),
]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture(scope="module")
def server():
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} holds no built book: run `make html` first")
    handler = functools.partial(_Quiet, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    # The screenshots' body text needs a CJK font, and the machine may have none (CI installs
    # no font package): Chromium's fontconfig also reads the build's Noto Sans CJK folder.
    # The figures' text does not depend on it: the site serves its own fonts (see below).
    conf = tmp_path_factory.mktemp("fontconfig") / "fonts.conf"
    folder = pathlib.Path(plotting.cjk_font_file()).parent
    conf.write_text(
        '<?xml version="1.0"?>\n<fontconfig>\n'
        '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
        f"  <dir>{folder}</dir>\n</fontconfig>\n"
    )
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True, env=env)
        yield b
        b.close()


class _Page:
    """A page plus the console errors and outside requests it produced."""

    def __init__(self, browser, base: str, **context_args):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, **context_args)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            host = urllib.parse.urlsplit(r.request.url).hostname
            if host in ("127.0.0.1", None) or r.request.url.startswith("data:"):
                r.continue_()
            else:
                self.outside.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.base = base

    def open(self, path: str):
        self.page.goto(f"{self.base}/{path}", wait_until="load")
        return self.page

    def close(self):
        self.context.close()


def _wait_for_math(page) -> int:
    """Wait until MathJax has typeset the page; return how many formulas it rendered."""
    has_math = page.evaluate("() => !!window.MathJax")
    if not has_math:
        return 0
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    return page.locator("mjx-container").count()


@pytest.mark.parametrize("name", PAGES)
def test_page_in_browser(browser, server, name):
    p = _Page(browser, server)
    try:
        page = p.open(f"{name}.html")
        rendered = _wait_for_math(page)
        text = page.inner_text("article")
        # raw TeX left visible means MathJax did not run
        for raw in ("\\frac", "\\text{", "\\le", "$$", "\\("):
            assert raw not in text, f"{name}: raw TeX {raw!r} visible"
        source = (HTML / f"{name}.html").read_text("utf-8")
        if "\\(" in source or "\\[" in source:
            assert rendered > 0, f"{name}: math in the page but none typeset"
        imgs = page.locator("article img")
        for i in range(imgs.count()):
            img = imgs.nth(i)
            img.scroll_into_view_if_needed()
            box = img.bounding_box()
            natural = img.evaluate("e => e.naturalWidth")
            assert box and box["width"] > 50 and box["height"] > 50 and natural > 0, (
                f"{name}: figure {i} not visible"
            )
        figures = page.locator("article .roofline-figure svg")  # written into the page
        for i in range(figures.count()):
            figure = figures.nth(i)
            figure.scroll_into_view_if_needed()
            box = figure.bounding_box()
            article = page.locator("article").bounding_box()
            assert box and box["width"] > 50 and box["height"] > 50, f"{name}: figure {i} hidden"
            assert article and box["width"] <= article["width"] + 1, f"{name}: figure {i} too wide"
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name.replace('/', '__')}.png"), full_page=True)
        assert not p.outside, f"{name}: requests left 127.0.0.1: {p.outside}"
        assert not p.errors, f"{name}: console errors: {p.errors}"
    finally:
        p.close()


def test_chinese_search_finds_arithmetic_intensity(browser, server):
    p = _Page(browser, server)
    try:
        page = p.open("search.html?q=" + urllib.parse.quote("算术强度"))
        page.wait_for_selector("#search-results li a", timeout=20000)
        hrefs = page.eval_on_selector_all("#search-results li a", "els => els.map(e => e.href)")
        assert any("03-arithmetic-intensity" in h for h in hrefs), hrefs
        assert not p.errors, p.errors
    finally:
        p.close()


def test_copy_button_copies_code(browser, server):
    p = _Page(browser, server, permissions=["clipboard-read", "clipboard-write"])
    try:
        page = p.open("chapters/01-flops.html")
        cell = page.locator("div.cell_input pre").first
        expected = cell.inner_text().strip()
        cell.hover()
        page.locator("div.cell_input button.copybtn").first.click()
        copied = page.evaluate("() => navigator.clipboard.readText()")
        assert copied.strip() == expected and "gemm" in copied
    finally:
        p.close()


def test_figures_legible_in_dark_mode(browser, server):
    from PIL import Image

    p = _Page(browser, server, color_scheme="dark")
    try:
        page = p.open("chapters/04-roofline.html")
        page.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        img = page.locator("article .roofline-figure svg").first
        img.scroll_into_view_if_needed()
        shot = Image.open(io.BytesIO(img.screenshot())).convert("L")
        lo, hi = shot.getextrema()
        histogram = shot.histogram()
        light = sum(histogram[200:]) / sum(histogram)
        # no white card: the dark page shows through the figure, and its ink turns light
        assert light < 0.2, f"figure shows a light card in dark mode ({light:.2f} light pixels)"
        assert hi - lo > 150, f"too little contrast in the figure ({lo}..{hi})"
        assert background != "rgb(255, 255, 255)", "the page itself did not turn dark"
    finally:
        p.close()


def test_body_text_falls_back_to_the_served_cjk_face(browser, server):
    # With no CJK font earlier in its stack, a paragraph's Chinese is set in the site's own
    # Noto Sans CJK SC file, so a machine with no CJK font still shows it.
    p = _Page(browser, server)
    try:
        page = p.open("chapters/01-flops.html")
        stack = page.evaluate(
            "() => getComputedStyle(document.querySelector('article p')).fontFamily"
        )
        assert "Noto Sans CJK SC" in stack, stack
        page.evaluate("() => document.fonts.ready")
        loaded = page.evaluate(
            """() => [...document.fonts].filter(f => f.family.includes('Noto Sans CJK SC')
                                                  && f.status === 'loaded').length"""
        )
        assert loaded >= 1
        assert page.evaluate("() => document.fonts.check('16px \"Noto Sans CJK SC\"', '算术强度')")
    finally:
        p.close()


@pytest.mark.parametrize("name", [n for n in PAGES if n.startswith("chapters/")])
def test_tables_fit_the_column_or_scroll_with_their_first_column_fixed(browser, server, name):
    p = _Page(browser, server)
    try:
        page = p.open(f"{name}.html")
        bad = page.evaluate(
            """() => [...document.querySelectorAll('article table')].filter(t => {
                const box = t.parentElement;
                const column = document.querySelector('article').clientWidth;
                if (t.offsetParent === null) return false;          // folded away
                if (t.scrollWidth <= Math.min(box.clientWidth, column) + 1) return false;
                const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
                const cell = t.querySelector('tr > :first-child');
                const sticky = cell && getComputedStyle(cell).position === 'sticky';
                return !(scrolls && sticky);
            }).map(t => (t.id || t.className) + ' ' + t.scrollWidth)"""
        )
        assert not bad, f"{name}: tables wider than the column that do not scroll: {bad}"
    finally:
        p.close()


def test_the_search_status_line_is_chinese(browser, server):
    p = _Page(browser, server)
    try:
        page = p.open("search.html?q=" + urllib.parse.quote("算术强度"))
        # the status line is written once every result is listed
        page.wait_for_function(
            "() => document.querySelector('#search-results .search-summary')?.innerText",
            timeout=20000,
        )
        status = page.inner_text("#search-results .search-summary")
        assert "搜索完成" in status and "matching" not in status, status
    finally:
        p.close()


_PROBE = """pattern => {
  const texts = [...document.querySelectorAll("article .roofline-figure svg text")];
  const text = texts.find(e => new RegExp(pattern).test(e.textContent));
  text.setAttribute("data-font-probe", "");
  return text.textContent;
}"""


def _fonts_of(page, cdp, pattern: str) -> tuple[str, list[dict]]:
    """The first figure text matching ``pattern`` and the fonts Chromium drew it with
    (DevTools' platform fonts: family, and whether the page loaded it)."""
    text = page.evaluate(_PROBE, pattern)
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-font-probe]"})
    page.evaluate(
        "() => document.querySelector('[data-font-probe]').removeAttribute('data-font-probe')"
    )
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
    return text, [{k: f[k] for k in ("familyName", "isCustomFont")} for f in fonts]


def test_figure_text_is_drawn_in_the_sites_own_fonts(browser, server):
    """The figures' text is set in the font files matplotlib laid it out with, which the site
    serves itself (``_static/fonts``): not in whatever the reader's system has."""
    p = _Page(browser, server)
    try:
        fonts: list[str] = []
        p.page.on(
            "requestfinished", lambda r: fonts.append(r.url) if "/figures-" in r.url else None
        )
        page = p.open("chapters/04-roofline.html")
        page.evaluate("() => document.fonts.ready")
        assert sorted(fonts) == [
            f"{server}/_static/fonts/figures-cjk.woff2",
            f"{server}/_static/fonts/figures-latin.woff2",
        ], fonts
        cdp = p.context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        text, used = _fonts_of(page, cdp, "[\\u4e00-\\u9fff]")  # e.g. 算术强度 I [FLOP/byte]
        assert {f["familyName"] for f in used} == {"DejaVu Sans", "Noto Sans CJK SC"}, (text, used)
        assert all(f["isCustomFont"] for f in used), (text, used)  # no glyph from the system
        text, used = _fonts_of(page, cdp, "^[A-Za-z ]+$")
        assert used == [{"familyName": "DejaVu Sans", "isCustomFont": True}], (text, used)
        assert not p.outside and not p.errors, (p.outside, p.errors)
    finally:
        p.close()
