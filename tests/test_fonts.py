"""No system font decides whether a figure has its glyphs.

A fresh process draws one of the book's figures (the roofline of chapter 4, in Chinese)
with fontconfig pointed at an empty configuration, an empty matplotlib config and cache
folder (``MPLCONFIGDIR``) and, where the test runs as root with ``unshare``, the system's
font folder hidden in a mount namespace. It must warn nothing about fonts and set the
Chinese text in Noto Sans CJK SC from noto-cjk-sans-otc (``plotting.use_cjk_font``).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("noto_cjk_sans_otc", reason="the [zh] extra (noto-cjk-sans-otc)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
SYSTEM_FONTS = pathlib.Path("/usr/share/fonts")

DRAW = """
import io, json, os, re
import matplotlib
matplotlib.use("svg")
from matplotlib import font_manager, pyplot as plt
from roofline_book import hardware
from roofline_book.present import plotting

plotting.setup_notebook("zh")
h100 = hardware("h100-sxm")
fig, ax = plt.subplots()
plotting.roofline(ax, h100.peak_flops("bf16"), h100.memory_bandwidth, label="H100 SXM")
ax.set_xlabel(plotting.text("intensity axis"))
ax.set_ylabel(plotting.text("attainable axis", unit="TFLOP/s"))
ax.set_title("H100 SXM 的 roofline（BF16）")
out = io.StringIO()
fig.savefig(out, format="svg")
svg = out.getvalue()
found = font_manager.findfont(font_manager.FontProperties(family=plotting.CJK_FONT))
print(json.dumps({
    "cjk_file": str(found), "cjk_face": getattr(found, "face_index", 0),
    "registered": str(plotting.cjk_font_file()),
    "families": sorted(set(re.findall(r"font-family: ([^;\\"]+)", svg))),
    "chinese": "算术强度" in svg and "可达性能" in svg,
    "system_fonts": sorted(os.listdir("/usr/share/fonts")),
}))
"""


def _can_hide_system_fonts() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not SYSTEM_FONTS.is_dir():
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    return probe.returncode == 0


def _draw(tmp_path: pathlib.Path, hide: bool) -> subprocess.CompletedProcess:
    empty = tmp_path / "empty"
    (empty / "mpl").mkdir(parents=True)
    (empty / "no-fonts").mkdir()
    conf = tmp_path / "fonts.conf"  # fontconfig with no font folder at all
    conf.write_text('<?xml version="1.0"?>\n<fontconfig></fontconfig>\n')
    env = {
        **os.environ,
        "MPLCONFIGDIR": str(empty / "mpl"),
        "FONTCONFIG_FILE": str(conf),
        "HOME": str(empty),  # no ~/.cache/matplotlib, no ~/.fonts
        "XDG_CACHE_HOME": str(empty / "cache"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    command = [sys.executable, "-c", DRAW]
    if hide:
        mount = f'mount --bind {empty / "no-fonts"} {SYSTEM_FONTS} && exec "$@"'
        command = ["unshare", "-m", "sh", "-c", mount, "sh", *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("hide", [False, True], ids=["empty-config", "system-fonts-hidden"])
def test_a_book_figure_needs_no_system_font(tmp_path, hide):
    if hide and not _can_hide_system_fonts():
        pytest.skip("hiding /usr/share/fonts needs root and a mount namespace (unshare -m)")
    done = _draw(tmp_path, hide)
    assert done.returncode == 0, done.stderr
    assert "findfont" not in done.stderr, done.stderr
    # the only thing matplotlib may say is that it built its (empty folder's) font list
    noise = [line for line in done.stderr.splitlines() if "building the font cache" not in line]
    assert not noise, done.stderr
    result = json.loads(done.stdout)
    # findfont answers a realpath; the registered file may lie under a symlinked venv
    found, registered = (pathlib.Path(result[k]).resolve() for k in ("cjk_file", "registered"))
    assert found == registered
    assert result["cjk_file"].endswith("noto_cjk_sans_otc/NotoSansCJK-Regular.ttc")
    assert result["cjk_face"] == 2  # Noto Sans CJK SC in the collection (JP, KR, SC, ...)
    # the text in the book's families (tick labels' mathtext in DejaVu Sans alone)
    assert "'DejaVu Sans', 'Noto Sans CJK SC'" in result["families"], result["families"]
    assert set(result["families"]) <= {"'DejaVu Sans'", "'DejaVu Sans', 'Noto Sans CJK SC'"}
    assert result["chinese"]
    if hide:
        assert result["system_fonts"] == [], "the system's fonts were not hidden"
