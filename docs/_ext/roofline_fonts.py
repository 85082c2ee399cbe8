"""The figures' fonts: one set of files, from the registry, for the figures, the site and the PDF.

The chapters' figures are SVG with their text kept as text (``svg.fonttype: none``), set in
``'DejaVu Sans', 'Noto Sans CJK SC'`` (``roofline_book.present.plotting.CJK_FONTS``). matplotlib
lays the
text out with two files: DejaVu Sans from matplotlib itself and Noto Sans CJK SC from PyPI's
noto-cjk-sans-otc (``plotting.use_cjk_font``). Every reader must see the text in those files:

- HTML: an SVG shown with ``<img>`` is a separate document that loads no font, so the
  figures are written into the page itself (a post-transform), and the page's
  ``roofline-figures.css`` gives both families with ``@font-face``. At the end of the build
  the two files are cut down to the characters the figures use and served as WOFF2 from the
  site's ``_static/fonts/`` (no font from outside, none from the reader's system). The CJK
  file also holds every Chinese character of the pages' text: the body text falls back to
  it on a machine with no CJK font of its own (the stylesheet's font stack).
- PDF: rsvg-convert turns each SVG into a vector PDF through fontconfig, so the LaTeX build
  points fontconfig (``FONTCONFIG_FILE``) at a configuration that holds these two folders
  only; XeLaTeX loads the same files by path (``docs/_latex/fonts.tex``, the ``@...@`` names
  filled in here).

The kernels' matplotlib has the build's own config and cache folder (``MPLCONFIGDIR``):
no matplotlibrc or font cache of the user's changes a figure.
"""

from __future__ import annotations

import functools
import hashlib
import html
import importlib.util
import io
import json
import os
import pathlib
import re
import subprocess
import sys
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

CSS = "roofline-figures.css"
#: each family the figures name, and the web font file the site serves for it
WEB_FONTS = {"DejaVu Sans": "figures-latin.woff2", "Noto Sans CJK SC": "figures-cjk.woff2"}
_SC_FACE = "Noto Sans CJK SC"
_MONO_SC_FACE = "Noto Sans Mono CJK SC"


def _package_folder(name: str) -> pathlib.Path | None:
    """A package's folder, found without importing it (conf.py imports no NumPy)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def cjk_collection() -> pathlib.Path:
    """``NotoSansCJK-Regular.ttc`` from noto-cjk-sans-otc (requirements.txt)."""
    folder = _package_folder("noto_cjk_sans_otc")
    path = folder / "NotoSansCJK-Regular.ttc" if folder else None
    if path is None or not path.is_file():
        raise ConfigError(
            "the figures' Chinese font is missing: pip install noto-cjk-sans-otc "
            "(requirements.txt pins it; `make venv` installs it)"
        )
    return path


def latin_folder() -> pathlib.Path:
    """matplotlib's own DejaVu fonts (``mpl-data/fonts/ttf``)."""
    folder = _package_folder("matplotlib")
    if folder is None:
        raise ConfigError("matplotlib is not installed")
    return folder / "mpl-data" / "fonts" / "ttf"


@functools.cache
def face_index(collection: pathlib.Path, name: str) -> int:
    """The index of the face called ``name`` in a font collection."""
    from fontTools.ttLib import TTCollection

    with TTCollection(str(collection), lazy=True) as fonts:
        for i, font in enumerate(fonts.fonts):
            if font["name"].getDebugName(1) == name:
                return i
    raise ConfigError(f"{collection} has no face {name!r}")


# -- matplotlib in the kernels -------------------------------------------------------------


def _matplotlib_home(app: Sphinx, config: Config) -> None:
    """The kernels' matplotlib reads no matplotlibrc and no font list of the user's: its
    config and cache folder is the build's own (``_build/matplotlib``). Its font list is
    made here, before any kernel starts: matplotlib's one-time notice that it is building
    the font cache then goes to the build's log, not to a cell's stderr, which would fail
    the build (roofline_stderr)."""
    folder = pathlib.Path(app.outdir).parent / "matplotlib"
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["MPLCONFIGDIR"] = str(folder)
    if any(folder.glob("fontlist-*.json")):
        return
    done = subprocess.run(
        [sys.executable, "-c", "import matplotlib.font_manager"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ConfigError(f"matplotlib could not list its fonts: {done.stderr.strip()[-500:]}")
    logger.info("matplotlib's font list made in %s", folder)


# -- PDF ----------------------------------------------------------------------------------


def _latex_fonts(app: Sphinx, config: Config) -> None:
    """Fill in the font files' folders and faces in latex_elements["fontpkg"]."""
    fontpkg = config.latex_elements.get("fontpkg", "")
    if "@CJK_FONT_DIR@" not in fontpkg:
        return
    collection = cjk_collection()
    values = {
        "@CJK_FONT_DIR@": f"{collection.parent}/",
        "@CJK_FONT_FILE@": collection.name,
        "@CJK_SC_INDEX@": str(face_index(collection, _SC_FACE)),
        "@CJK_MONO_SC_INDEX@": str(face_index(collection, _MONO_SC_FACE)),
        "@LATIN_FONT_DIR@": f"{latin_folder()}/",
    }
    for key, value in values.items():
        fontpkg = fontpkg.replace(key, value)
    config.latex_elements = {**config.latex_elements, "fontpkg": fontpkg}


def _fontconfig_for_rsvg(app: Sphinx) -> None:
    """rsvg-convert (the SVG figures into PDF) sees the figures' two font folders only."""
    if app.builder.format != "latex":
        return
    folder = pathlib.Path(app.outdir).parent / "fontconfig"
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{html.escape(str(latin_folder()))}</dir>\n"
        f"  <dir>{html.escape(str(cjk_collection().parent))}</dir>\n"
        f"  <cachedir>{html.escape(str(folder / 'cache'))}</cachedir>\n</fontconfig>\n",
        encoding="utf-8",
    )
    os.environ["FONTCONFIG_FILE"] = str(conf)


# -- HTML ---------------------------------------------------------------------------------

_PROLOGUE = re.compile(r"\A.*?(?=<svg\b)", re.S)  # the XML declaration and the DOCTYPE
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
# matplotlib's one global rule would style the whole page once the SVG is in it; the same
# two defaults, as attributes of the root, reach only the figure
_GLOBAL_STYLE = re.compile(
    r'\s*<style type="text/css">\*\{stroke-linejoin: round; stroke-linecap: butt\}</style>'
)
_TEXT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.S)
_FIGURE = re.compile(r'<div class="roofline-figure"[^>]*>(.*?)</div>', re.S)


# Geometry attributes whose numbers a page needs to a tenth of a point, no finer.
_GEOMETRY = re.compile(r'(\s(?:d|x|y|x1|x2|y1|y2|cx|cy|r|width|height|points)=")([^"]*)"')
_FINE = re.compile(r"-?\d+\.\d{2,}")
_INDENT = re.compile(r"\n[ \t]+")


def compact_svg(svg: str) -> str:
    r"""``svg`` with its geometry rounded to 0.1 pt and its indentation dropped.

    The words a figure shows are left as they are; only coordinates lose digits no
    screen shows (0.1 pt is about a tenth of a pixel).

    Examples
    --------
    >>> svg = '<path d="M 50.172656 222.199313 \n    L 3.04 0"/>\n  <text x="1.2345">3.3512</text>'
    >>> compact_svg(svg)
    '<path d="M 50.2 222.2 \nL 3.0 0"/>\n<text x="1.2">3.3512</text>'
    """

    def tenth(m: re.Match[str]) -> str:
        return m.group(1) + _FINE.sub(lambda n: f"{float(n.group(0)):.1f}", m.group(2)) + '"'

    body = _GEOMETRY.sub(tenth, svg)
    return _INDENT.sub("\n", body)


def inline_svg(svg: str, label: str = "") -> str:
    r"""matplotlib's SVG file as markup for an HTML page.

    Examples
    --------
    >>> svg = '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg viewBox="0 0 1 1">'
    >>> svg += '<style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>'
    >>> print(inline_svg(svg + "</svg>", 'a "b"'))  # doctest: +NORMALIZE_WHITESPACE
    <div class="roofline-figure"><svg role="img" aria-label="a &quot;b&quot;"
    stroke-linejoin="round" stroke-linecap="butt" viewBox="0 0 1 1"></svg></div>
    """
    if "<svg" not in svg:
        raise ValueError("svg must hold an <svg> element")
    body = _GLOBAL_STYLE.sub("", _METADATA.sub("", _PROLOGUE.sub("", svg, count=1)))
    body = compact_svg(body)
    root = f'<svg role="img" aria-label="{html.escape(label)}" '
    root += 'stroke-linejoin="round" stroke-linecap="butt" '
    return f'<div class="roofline-figure">{root}{body.strip().removeprefix("<svg ")}</div>'


class InlineFigures(SphinxPostTransform):
    """Writes each matplotlib SVG figure into the page instead of an ``<img>``."""

    default_priority = 100
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for image in list(self.document.findall(nodes.image)):
            source = image.get("candidates", {}).get("image/svg+xml") or image.get("uri", "")
            path = pathlib.Path(self.app.srcdir, source)
            if not source.endswith(".svg") or not path.is_file():
                continue
            svg = path.read_text(encoding="utf-8")
            if "<dc:title>Matplotlib" not in svg[:3000]:
                continue
            caption = next(iter(image.parent.findall(nodes.caption)), None)
            label = caption.astext() if isinstance(image.parent, nodes.figure) and caption else ""
            image.replace_self(nodes.raw("", inline_svg(svg, label), format="html"))


def figure_characters(page: str) -> set[str]:
    """The characters of the figures' text in an HTML page."""
    chars: set[str] = set()
    for figure in _FIGURE.findall(page):
        for text in _TEXT.findall(figure):
            chars.update(html.unescape(re.sub(r"<[^>]+>", "", text)))
    return chars - {"\n", "\r", "\t"}


# CJK radicals, punctuation, kana, ideographs, compatibility forms and full-width forms
_CJK = re.compile(
    r"[\u2e80-\u2fff\u3000-\u303f\u3040-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"
)
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1>", re.S)


def text_characters(page: str) -> set[str]:
    """The CJK characters of an HTML page's text: the body text is set in the same face."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", _SCRIPT.sub(" ", page)))
    return set(_CJK.findall(text))


def web_font(font: Any, chars: set[str]) -> bytes:
    """``font`` (a fontTools TTFont) cut down to ``chars``, as WOFF2."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff2"
    options.notdef_outline = True
    options.drop_tables += ["FFTM"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def _write_web_fonts(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from fontTools.ttLib import TTFont

    outdir = pathlib.Path(app.outdir)
    chars: set[str] = set()
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        chars |= figure_characters(text) | text_characters(text)
    collection = cjk_collection()
    sources = {
        "DejaVu Sans": (latin_folder() / "DejaVuSans.ttf", 0),
        _SC_FACE: (collection, face_index(collection, _SC_FACE)),
    }
    target = outdir / "_static" / "fonts"
    stamp = target / "figures.json"
    key = hashlib.sha256(
        json.dumps([sorted(chars), {k: str(v) for k, v in sources.items()}]).encode()
    ).hexdigest()
    if stamp.is_file() and json.loads(stamp.read_text()).get("key") == key:
        if all((target / name).is_file() for name in WEB_FONTS.values()):
            return
    target.mkdir(parents=True, exist_ok=True)
    left = set(chars)
    for family, (path, index) in sources.items():  # the order of the figures' font-family
        font = TTFont(str(path), fontNumber=index, lazy=False)
        has = set(map(chr, font.getBestCmap()))
        mine, left = left & has, left - has
        (target / WEB_FONTS[family]).write_bytes(web_font(font, mine or {" "}))
    if left - {" "}:
        logger.warning(
            "figure text has characters neither font has: %s", "".join(sorted(left)),
            type="roofline", subtype="fonts",
        )  # fmt: skip
    stamp.write_text(json.dumps({"key": key, "characters": "".join(sorted(chars))}))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _matplotlib_home)
    app.connect("config-inited", _latex_fonts)
    app.connect("builder-inited", _fontconfig_for_rsvg)
    app.add_post_transform(InlineFigures)
    app.add_css_file(CSS)
    app.connect("build-finished", _write_web_fonts)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
