"""The hosts build the book by the Makefile's recipe, and what they publish is whole.

- ``.readthedocs.yaml`` and ``.github/workflows/pages.yml`` install tools and call make;
- ``requirements.txt`` resolves, by its markers, on each platform the README names;
- the mirror variables reach pip and npm;
- the built site, served under a sub-path as GitHub Pages serves a project (marker ``site``),
  has every page, the calculator's files and the PDF.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import json
import re
import shlex
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml
from conftest import BUILD, ROOT
from packaging.markers import default_environment
from packaging.requirements import Requirement
from test_site import PAGES

HTML = BUILD / "html"

# -------------------------------------------------------------- one build recipe

# What a host may run besides make: tools put in place, the built site copied out.
NOT_MAKE = {"apt-get", "mkdir", "cp"}
# What builds or installs the book other than through make.
BYPASSES = re.compile(r"sphinx|jupyter[- ]book|pip3? install|-m pip|requirements\.txt|npm ")


def _make_targets() -> set[str]:
    """The targets the Makefile declares .PHONY (its interface)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith(".PHONY:"))
    return set(line.split(":", 1)[1].split())


def _rtd_commands(config: dict) -> list[str]:
    """Every command Read the Docs runs: build.commands, and build.jobs at any depth."""
    build = config.get("build", {})
    commands = list(build.get("commands", []))

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            commands.extend(str(c) for c in node)

    walk(build.get("jobs", {}))
    return commands


def _workflow_commands(workflow: dict) -> list[str]:
    """Every shell line of the workflow's steps (multi-line `run:` blocks joined at `\\`)."""
    lines: list[str] = []
    for job in workflow["jobs"].values():
        for step in job.get("steps", []):
            run = step.get("run", "").replace("\\\n", " ")
            lines.extend(line.strip() for line in run.splitlines() if line.strip())
    return lines


def _judge(commands: list[str]) -> list[str]:
    """The commands that build the book other than by a Makefile target."""
    targets = _make_targets()
    wrong = []
    for command in commands:
        words = shlex.split(command)
        while words and (words[0] == "sudo" or "=" in words[0]):  # sudo, VAR=value
            words.pop(0)
        if BYPASSES.search(command) or not words:
            wrong.append(command)
        elif words[0] == "make":
            named = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
            if not named or not set(named) <= targets:
                wrong.append(command)
        elif words[0] not in NOT_MAKE or any(c in command for c in (";", "&", "|", "`", "$(")):
            wrong.append(command)
    return wrong


def _readthedocs() -> dict:
    return yaml.safe_load((ROOT / ".readthedocs.yaml").read_text(encoding="utf-8"))


def _pages_workflow() -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text("utf-8"))


def test_the_judge_refuses_a_direct_build():
    # the host configuration this file replaced: sphinx and pip called by hand
    old = [
        "python -m pip install -r requirements.txt",
        "make mathjax",
        "python -m sphinx -n -W --keep-going -c . docs $READTHEDOCS_OUTPUT/html",
        "make publish",  # no such target
        "sphinx-build -c . docs out",
    ]
    assert _judge(old) == [old[0], old[2], old[3], old[4]]


def test_read_the_docs_calls_only_make():
    config = _readthedocs()
    commands = _rtd_commands(config)
    assert _judge(commands) == []
    made = " ".join(c for c in commands if c.startswith("make "))
    # the HTML with the calculator (make html needs pyodide) and the PDF, as the site has it
    assert "make html" in made and "make pdf" in made, commands
    assert commands[-1] == "cp -r _build/html/. $READTHEDOCS_OUTPUT/html/", commands
    # make pdf's tools: the same Debian packages .ci/run installs
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_packages = set(re.search(r"PACKAGES=\(([^)]*)\)", ci, re.S)[1].split()) - {"chromium"}
    assert set(config["build"]["apt_packages"]) == ci_packages


def test_the_pages_workflow_calls_only_make_and_publishes_what_it_tested():
    workflow = _pages_workflow()
    assert _judge(_workflow_commands(workflow)) == []
    steps = workflow["jobs"]["build"]["steps"]
    upload = next(i for i, s in enumerate(steps) if "upload-pages-artifact" in s.get("uses", ""))
    # the step right before the upload is the README's test command, and the upload takes
    # the folder it checked: nothing runs between the tests and the publication
    assert steps[upload - 1].get("run", "").strip() == "make test"
    assert steps[upload]["with"]["path"] == "_build/html"


# -------------------------------------------------------------- requirements per platform

LINUX_X86_64 = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}
MACOS_ARM64 = {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"}
PLATFORMS = {"linux-x86_64": LINUX_X86_64, "macos-arm64": MACOS_ARM64}
"""The platforms the README names (it builds the book with Python 3.11)."""

LOCAL_VERSIONS = {"linux-x86_64": {"cpu"}, "macos-arm64": set()}
"""The local version labels some index carries for each platform: PyTorch's CPU index has
``+cpu`` builds for Linux x86_64; its macOS wheels, like PyPI's, carry no label."""


def _pins(text: str) -> list[Requirement]:
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [Requirement(line) for line in lines if line]


def _resolve(text: str, platform: str) -> dict[str, str]:
    """The exact version of each pin whose marker holds on the platform."""
    env = {key: str(value) for key, value in default_environment().items()}
    env.update(python_version="3.11", python_full_version="3.11.2")
    env.update(PLATFORMS[platform])
    chosen: dict[str, str] = {}
    for req in _pins(text):
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        (spec,) = req.specifier
        assert spec.operator == "==", f"{req}: pins are exact"
        assert req.name not in chosen, f"{req.name} pinned twice on {platform}"
        chosen[req.name] = spec.version
    return chosen


def _unavailable(text: str, platform: str) -> list[str]:
    """The pins no index carries for the platform: a local version it has no build of."""
    return [
        f"{name}=={version}"
        for name, version in _resolve(text, platform).items()
        if "+" in version and version.split("+", 1)[1] not in LOCAL_VERSIONS[platform]
    ]


REQUIREMENTS = (ROOT / "requirements.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_requirements_resolve_on_each_named_platform(platform):
    chosen = _resolve(REQUIREMENTS, platform)
    assert _unavailable(REQUIREMENTS, platform) == []
    # torch, once, at the version the book is built with; its CPU build only on Linux
    expected = {"linux-x86_64": "2.13.0+cpu", "macos-arm64": "2.13.0"}[platform]
    assert chosen["torch"] == expected
    assert len(chosen) == len({r.name for r in _pins(REQUIREMENTS)})


def test_an_unconditional_cpu_pin_fails_on_macos():
    # the pin this file had before its markers
    old = re.sub(r"^torch==.*\n", "", REQUIREMENTS, flags=re.M) + "torch==2.13.0+cpu\n"
    assert _unavailable(old, "macos-arm64") == ["torch==2.13.0+cpu"]
    assert _unavailable(old, "linux-x86_64") == []


def test_the_makefile_takes_only_the_cpu_line_from_pytorchs_index():
    # make -n prints the venv's recipe; pip evaluates the lines' markers, and only the +cpu
    # line (whose marker is Linux x86_64) goes to pip with the CPU index
    out = _dry_run(".venv/.installed", "TORCH_INDEX=https://torch.example/cpu")
    (grep,) = [line for line in out if line.startswith("mkdir -p _build && grep")]
    pattern = shlex.split(grep.split("grep", 1)[1])[0]
    found = subprocess.run(["grep", pattern, "requirements.txt"], capture_output=True, cwd=ROOT)
    cpu_lines = found.stdout.decode().splitlines()
    assert [_pins(line)[0].marker for line in cpu_lines] == [
        _pins(line)[0].marker for line in REQUIREMENTS.splitlines() if "+cpu" in line
    ]
    assert len(cpu_lines) == 1 and "x86_64" in cpu_lines[0]
    index = [line for line in out if "--extra-index-url https://torch.example/cpu" in line]
    assert len(index) == 1 and index[0].endswith("-r _build/torch-cpu-requirements.txt")
    # without an index (a local wheel folder), no step names one
    plain = _dry_run(".venv/.installed", "TORCH_INDEX=")
    assert not any("extra-index-url" in line for line in plain), plain


# -------------------------------------------------------------- mirrors

PYPI_MIRROR = "https://pypi.tuna.tsinghua.edu.cn/simple"
NPM_MIRROR = "https://registry.npmmirror.com"
TORCH_MIRROR = "https://mirrors.nju.edu.cn/pytorch/whl/cpu"
# What the Makefile fetches: the venv, MathJax, Pyodide and the calculator's wheels.
FETCHING = [
    ".venv/.installed",
    "_build/mathjax/mathjax/tex-chtml.js",
    "_build/calculator/calculator/pyodide/package.json",
    "_build/calculator-deps.fetched",
]


def _dry_run(*args: str) -> list[str]:
    """make's commands for these targets and variables, printed and not run (-n), as if
    nothing were built yet (-B)."""
    done = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return done.stdout.replace("\\\n", " ").splitlines()


def test_the_mirror_variables_reach_pip_and_npm():
    out = _dry_run(
        *FETCHING,
        f"PIP_INDEX_URL={PYPI_MIRROR}",
        f"NPM_REGISTRY={NPM_MIRROR}",
        f"TORCH_INDEX={TORCH_MIRROR}",
    )
    pip = [line for line in out if re.match(r"\.venv/bin/pip (install|download) ", line)]
    npm = [line for line in out if line.startswith("npm ")]
    assert len(pip) == 5 and len(npm) == 2, out  # upgrade, torch, pins, package, wheels
    assert all(f"--index-url {PYPI_MIRROR}" in line for line in pip), pip
    assert all(f"--registry {NPM_MIRROR}" in line for line in npm), npm
    assert sum(f"--extra-index-url {TORCH_MIRROR}" in line for line in pip) == 1
    # and without them, pip and npm use their own defaults
    plain = _dry_run(*FETCHING, "TORCH_INDEX=")
    assert not any("--index-url" in line or "--registry" in line for line in plain), plain


def test_the_readme_names_each_mirror_variable():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for variable, example in [
        ("PIP_INDEX_URL", PYPI_MIRROR),
        ("NPM_REGISTRY", NPM_MIRROR),
        ("TORCH_INDEX", TORCH_MIRROR),
    ]:
        assert f"{variable}={example}" in readme, variable


# -------------------------------------------------------------- the site as Pages serves it

SUB_PATH = "/roofline-book/"
"""A project's GitHub Pages site: https://OWNER.github.io/REPOSITORY/."""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The built site served under SUB_PATH, and nothing at the server's root."""
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} holds no built book: run `make html` first")
    top = tmp_path_factory.mktemp("pages")
    (top / SUB_PATH.strip("/")).symlink_to(HTML.resolve(), target_is_directory=True)
    handler = functools.partial(_Quiet, directory=str(top))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}{SUB_PATH}"
    httpd.shutdown()
    httpd.server_close()


class _Local(html.parser.HTMLParser):
    """The URLs a page loads or links: href, src and data of every element."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src", "data") and value:
                self.urls.append(value)


def _status(url: str, method: str = "HEAD") -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method)) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.site
def test_the_site_carries_nojekyll():
    # without it, GitHub Pages drops every folder whose name begins with "_" (_static)
    assert (HTML / ".nojekyll").is_file(), "make html writes _build/html/.nojekyll"


@pytest.mark.site
def test_every_page_and_what_it_loads_is_found_under_the_sub_path(pages):
    origin = pages[: -len(SUB_PATH) + 1]
    missing, checked = [], set()
    for page in PAGES:
        url = urllib.parse.urljoin(pages, f"{page}.html")
        with urllib.request.urlopen(url) as response:
            parser = _Local()
            parser.feed(response.read().decode("utf-8"))
        for ref in parser.urls:
            target = urllib.parse.urljoin(url, ref)
            parts = urllib.parse.urlsplit(target)
            if parts.scheme not in ("http", "https") or not target.startswith(origin):
                continue  # another site (the repository's links), mailto:, data:
            path = parts.path
            if path.endswith(".pdf"):
                continue  # the PDF: test_the_pdf_is_served_under_the_sub_path
            if not path.startswith(SUB_PATH):
                missing.append(f"{page}: {ref} leaves {SUB_PATH}")
            elif path not in checked:
                checked.add(path)
                if _status(origin + path) != 200:
                    missing.append(f"{page}: {ref}")
    assert missing == []
    assert len(checked) > len(PAGES)


@pytest.mark.site
def test_the_calculator_and_its_files_are_found_under_the_sub_path(pages):
    assert _status(pages + "calculator.html", "GET") == 200
    manifest_url = pages + "_static/calculator/manifest.json"
    with urllib.request.urlopen(manifest_url) as response:
        manifest = json.load(response)
    files = [entry["path"] for entry in manifest["wheels"] + manifest["pyodide_files"]]
    assert any(f.endswith(".wasm") for f in files) and any(f.endswith(".whl") for f in files)
    assert [f for f in files if _status(urllib.parse.urljoin(manifest_url, f)) != 200] == []


@pytest.mark.site
def test_the_pdf_is_served_under_the_sub_path(pages):
    if not (HTML / "roofline-book.pdf").is_file():
        pytest.fail(f"{HTML}/roofline-book.pdf is missing: run `make pdf` (after `make html`)")
    # every page's footer links it (docs/_templates/pdf-download.html)
    with urllib.request.urlopen(pages + "index.html") as response:
        assert "roofline-book.pdf" in response.read().decode("utf-8")
    with urllib.request.urlopen(pages + "roofline-book.pdf") as response:
        assert response.read(5) == b"%PDF-"
