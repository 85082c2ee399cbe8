"""The README's Python samples print what their comments say (its command-line samples are
checked in tests/test_cli.py)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from conftest import ROOT


def _samples() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _expected(line: str) -> str | None:
    """What a ``print(...)  # VALUE...: words`` line promises its output begins with."""
    if not line.startswith("print(") or "#" not in line:
        return None
    comment = line.split("#", 1)[1].strip()
    return re.split(r"\.\.\.|:", comment, maxsplit=1)[0].strip()


SAMPLES = _samples()


def test_the_readme_has_its_python_samples():
    assert len(SAMPLES) >= 2  # the models in your own work; your own model and GPU


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"sample{i}" for i in range(len(SAMPLES))])
def test_each_python_sample_prints_what_its_comments_say(sample):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(sample, "README.md", "exec"), {})
    printed = out.getvalue().splitlines()
    prints = [line for line in sample.splitlines() if line.startswith("print(")]
    assert len(printed) == len(prints)
    promised = [(_expected(line), shown) for line, shown in zip(prints, printed, strict=True)]
    checked = [(want, shown) for want, shown in promised if want is not None]
    assert checked, "a sample with no printed value to check"
    for want, shown in checked:
        assert shown.startswith(want), (want, shown)
