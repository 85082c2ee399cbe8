# The one interface: make html, make pdf, make check (the fast loop), make test, make bench.
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
SPHINX  := $(VENV)/bin/sphinx-build
SPHINXOPTS ?= -n -W --keep-going -j 2
BUILD   := _build
# MathJax 3 from the npm registry, served from the site's own static files.
MATHJAX_VERSION := 3.2.2
MATHJAX := $(BUILD)/mathjax/mathjax
ES5     := $(BUILD)/npm/node_modules/mathjax/es5
# The calculator page (docs/calculator.md) runs the package in the reader's browser: the
# Pyodide core from the npm registry, and the package's pure-Python dependencies as wheels
# from PyPI, both served from the site's own files (_static/calculator/); the package's own
# wheel is built by docs/_ext/roofline_calculator.py.
PYODIDE_VERSION := 0.29.3
CALCULATOR := $(BUILD)/calculator/calculator
PYODIDE := $(CALCULATOR)/pyodide
# What the page loads of the npm package: the loader, the interpreter (JS glue and
# WebAssembly), the standard library and the package index the loader reads at start.
PYODIDE_FILES := pyodide.js pyodide.asm.js pyodide.asm.wasm python_stdlib.zip pyodide-lock.json
# The base install's dependencies, at the versions requirements.txt pins.
CALCULATOR_DEPS := tabulate
# Where `make bench` writes its run file: one new file per run, never overwritten.
BENCH_OUT ?= $(BUILD)/bench/$(shell hostname)-$(shell date -u +%Y%m%dT%H%M%SZ).json

.PHONY: all venv mathjax pyodide html pdf check check-types check-tests check-subprocess-tests test \
	doctest bench lint dist livehtml clean distclean html-tools pdf-tools

all: html

# What a fresh machine must have (README, "Before the two commands"), checked before any
# step starts: a missing one stops make with one line that names it.
need = $(if $(shell command -v $(1) 2>/dev/null),,$(error $(1) not found: $(2)))
need_tex = $(if $(shell kpsewhich $(1) 2>/dev/null),,$(error TeX file $(1) not found: install $(2)))
PYTHON_OK = $(shell $(PYTHON) -c 'import sys; print(sys.hexversion >= 0x30B0000 or "")' 2>/dev/null)
VENV_OK = $(shell $(PYTHON) -c 'import ensurepip, venv; print(1)' 2>/dev/null)

html-tools:
	$(call need,$(PYTHON),install Python 3.11 or newer (or set PYTHON=...))
	$(if $(PYTHON_OK),,$(error $(PYTHON) is older than Python 3.11: install 3.11 or newer and set PYTHON= (README: Before the two commands)))
	$(if $(wildcard $(PY))$(VENV_OK),,$(error $(PYTHON) cannot create a virtual environment: install its venv module (Debian: python3-venv)))
	$(if $(wildcard $(MATHJAX)/tex-chtml.js),,$(call need,node,install Node.js and npm (Debian: nodejs npm); MathJax comes from the npm registry))
	$(if $(wildcard $(MATHJAX)/tex-chtml.js),,$(call need,npm,install npm (Debian: npm); MathJax comes from the npm registry))
	$(if $(wildcard $(PYODIDE)/package.json),,$(call need,npm,install npm (Debian: npm); Pyodide comes from the npm registry))
	@:

pdf-tools:
	$(call need,xelatex,install XeLaTeX (Debian: texlive-xetex))
	$(call need,latexmk,install latexmk (Debian: latexmk))
	$(call need,rsvg-convert,install rsvg-convert (Debian: librsvg2-bin))
	$(call need_tex,xeCJK.sty,Debian's texlive-lang-chinese)
	$(call need_tex,needspace.sty,Debian's texlive-latex-extra)
	$(call need_tex,texgyrepagella-regular.otf,Debian's tex-gyre)
	$(call need_tex,texgyrepagella-math.otf,Debian's fonts-texgyre-math)
	@:

# Mirrors, one variable each, empty for the default: PIP_INDEX_URL replaces PyPI for every pip
# command (pip reads the same name from the environment), NPM_REGISTRY replaces the npm
# registry for MathJax and Pyodide, TORCH_INDEX replaces PyTorch's CPU index (below).
PIP_INDEX_URL ?=
NPM_REGISTRY ?=
PIP := $(VENV)/bin/pip
PIP_FLAGS := --quiet $(if $(PIP_INDEX_URL),--index-url $(PIP_INDEX_URL))
NPM_FLAGS := --silent --no-save --no-audit --no-fund $(if $(NPM_REGISTRY),--registry $(NPM_REGISTRY))

# The build environment: exact pins from requirements.txt, the package editable. Its markers
# pick torch's build per platform: on Linux x86_64 the CPU build (torch==X+cpu), which PyPI
# does not carry (its Linux torch is the CUDA build, several GB), so it comes from PyTorch's
# CPU index first; on macOS arm64 PyPI's own wheel. pip reads the +cpu line's marker itself,
# so the CPU index is used only where that line applies. Where pip already finds that wheel
# (a local wheel folder), `make html TORCH_INDEX=` skips the index.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_CPU_REQUIREMENTS := $(BUILD)/torch-cpu-requirements.txt
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install $(PIP_FLAGS) --upgrade pip
	$(if $(TORCH_INDEX),mkdir -p $(BUILD) && grep '^torch==.*+cpu' requirements.txt > $(TORCH_CPU_REQUIREMENTS))
	$(if $(TORCH_INDEX),$(PIP) install $(PIP_FLAGS) --extra-index-url $(TORCH_INDEX) -r $(TORCH_CPU_REQUIREMENTS))
	$(PIP) install $(PIP_FLAGS) -r requirements.txt
	$(PIP) install $(PIP_FLAGS) --no-deps --no-build-isolation -e .
	touch $@

venv: $(VENV)/.installed

$(MATHJAX)/tex-chtml.js:
	mkdir -p $(BUILD)/npm
	npm install $(NPM_FLAGS) --prefix $(BUILD)/npm mathjax@$(MATHJAX_VERSION)
	rm -rf $(MATHJAX) && mkdir -p $(MATHJAX)/output/chtml/fonts $(MATHJAX)/input/tex
	cp -r $(ES5)/output/chtml/fonts/woff-v2 $(MATHJAX)/output/chtml/fonts/
	cp -r $(ES5)/input/tex/extensions $(MATHJAX)/input/tex/
	cp -r $(ES5)/ui $(ES5)/a11y $(MATHJAX)/
	cp $(ES5)/tex-chtml.js $(MATHJAX)/

mathjax: $(MATHJAX)/tex-chtml.js

$(PYODIDE)/package.json:
	mkdir -p $(BUILD)/npm-pyodide
	npm install $(NPM_FLAGS) --prefix $(BUILD)/npm-pyodide \
	  pyodide@$(PYODIDE_VERSION)
	rm -rf $(PYODIDE) && mkdir -p $(PYODIDE)
	cp $(addprefix $(BUILD)/npm-pyodide/node_modules/pyodide/,$(PYODIDE_FILES) package.json) $(PYODIDE)/

$(BUILD)/calculator-deps.fetched: requirements.txt
	rm -rf $(CALCULATOR)/wheels/deps && mkdir -p $(CALCULATOR)/wheels/deps
	$(PIP) download $(PIP_FLAGS) --no-deps --only-binary :all: --dest $(CALCULATOR)/wheels/deps \
	  $(foreach d,$(CALCULATOR_DEPS),"$$(grep -i '^$(d)==' requirements.txt)")
	touch $@

pyodide: $(PYODIDE)/package.json $(BUILD)/calculator-deps.fetched

# Everything the book's build reads: the sources, the package, conf, the pins, and the data
# the chapters load (tests/data holds the published measurements ch14 and ch15 read). When
# none is newer than the last good build, the site is current and make skips Sphinx. The
# stamp is taken before Sphinx starts, so an edit made during a build is seen next time.
BOOK_INPUTS := conf.py requirements.txt pyproject.toml \
  $(shell find docs roofline_book tests/data -type f -not -path '*/__pycache__/*')
BOOK_STAMP := $(BUILD)/html/.book-built
# The CPU run the chapters read, measured when it is missing before Sphinx starts, so the
# stamp below is newer than it (a plain sphinx-build measures it in docs/_ext too).
CPU_RUN := $(BUILD)/bench/cpu-quick.json
$(CPU_RUN): | $(VENV)/.installed
	@mkdir -p $(dir $@)
	@echo "measuring this CPU (quick suite) into $@ ..."
	$(PY) -m roofline_book bench --device cpu --quick --no-progress --out $@ > /dev/null

# .nojekyll: GitHub Pages serves the folders whose names begin with "_" (_static, _sources)
# only with it; every host gets the same folder.
html: html-tools $(BOOK_STAMP)
	@touch $(BUILD)/html/.nojekyll
	@echo "The book in $(BUILD)/html is current with its sources."

$(BOOK_STAMP): $(VENV)/.installed $(MATHJAX)/tex-chtml.js $(PYODIDE)/package.json \
  $(BUILD)/calculator-deps.fetched $(BOOK_INPUTS) $(CPU_RUN)
	@mkdir -p $(dir $@) && touch $@.new
	$(SPHINX) $(SPHINXOPTS) -c . docs $(BUILD)/html
	@mv $@.new $@


# The whole book as one PDF: the LaTeX builder on the same sources, conf and notebook
# cache as html (so no notebook runs twice), then XeLaTeX; into _build/pdf and the site.
# -E rereads every page (from the cache: seconds), so a changed extension always shows.
PDF_NAME := roofline-book.pdf
pdf: pdf-tools html
	$(SPHINX) -E $(SPHINXOPTS) -c . -b latex docs $(BUILD)/latex
	$(MAKE) -C $(BUILD)/latex all-pdf LATEXMKOPTS="-halt-on-error -interaction=nonstopmode -quiet"
	mkdir -p $(BUILD)/pdf
	cp $(BUILD)/latex/$(PDF_NAME) $(BUILD)/pdf/$(PDF_NAME)
	cp $(BUILD)/pdf/$(PDF_NAME) $(BUILD)/html/$(PDF_NAME)

# The contributor's loop, under a minute and with no book built: lint, imports, types, and
# every test and doctest that needs no built site, PDF or fresh install (markers `site` and
# `install`), in three jobs side by side: types, the tests that start Sphinx, kernels, the
# command line, collective ranks, profiled scripts or font-less drawings in subprocesses
# (their output shown when they end; about half the tests' time on this machine), and the rest.
CHECK_MARKERS := -m "not site and not install and not compile"
# Bytecode on: where the environment sets PYTHONDONTWRITEBYTECODE (as this project's machines
# do), pytest would parse and rewrite the asserts of every test module and doctest again on
# each run, and each interpreter a test starts would compile what it imports (about 10 s of
# the cores' time a run); the caches live in __pycache__, which git ignores.
CHECK_ENV := env -u PYTHONDONTWRITEBYTECODE
CHECK_SUBPROCESS := tests/test_notebook_execution.py tests/test_shown_code.py \
  tests/test_build_extension.py tests/test_stderr.py tests/test_cli.py \
  tests/test_measure_collectives.py tests/test_cli_profile.py tests/test_fonts.py
check: $(VENV)/.installed
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/lint-imports
	$(MAKE) --no-print-directory -j3 check-types check-tests check-subprocess-tests

check-types:
	$(VENV)/bin/mypy $(LINTED)

check-tests:
	$(CHECK_ENV) $(PY) -m pytest -q $(CHECK_MARKERS) $(addprefix --ignore=,$(CHECK_SUBPROCESS))

check-subprocess-tests:
	@mkdir -p $(BUILD)
	@$(CHECK_ENV) $(PY) -m pytest -q $(CHECK_MARKERS) $(CHECK_SUBPROCESS) > $(BUILD)/check-subprocess.log 2>&1; \
	  status=$$?; echo "== $(CHECK_SUBPROCESS)"; cat $(BUILD)/check-subprocess.log; exit $$status

# Everything: the book and PDF built, lint, then every test (the built site's and the PDF's,
# the browser's and the fresh install's included).
test: pdf-tools html pdf lint
	$(PY) -m pytest

doctest: $(VENV)/.installed
	$(PY) -m pytest roofline_book

# The full benchmark suite on this machine's CPU; DEVICE=cuda on a GPU.
DEVICE ?= cpu
bench: $(VENV)/.installed
	mkdir -p $(dir $(BENCH_OUT))
	$(PY) -m roofline_book bench --device $(DEVICE) --out $(BENCH_OUT)

# The package as users install it: a wheel and an sdist, checked by twine.
dist: $(VENV)/.installed
	rm -rf $(BUILD)/dist
	$(PY) -m build --no-isolation --outdir $(BUILD)/dist .
	$(PY) -m twine check --strict $(BUILD)/dist/*

# Everything Python: the package, tests, conf.py, the Sphinx extension, the GPU scripts.
LINTED := roofline_book tests conf.py docs/_ext gpu
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy $(LINTED)

livehtml: html-tools $(VENV)/.installed $(MATHJAX)/tex-chtml.js $(PYODIDE)/package.json \
  $(BUILD)/calculator-deps.fetched
	$(VENV)/bin/sphinx-autobuild -c . docs $(BUILD)/html --watch roofline_book --watch docs/_ext \
	  --ignore "*.ipynb" --ignore "$(BUILD)/*" --re-ignore "jupyter_execute/.*"

clean:
	rm -rf $(BUILD) .jupyter_cache .pytest_cache .hypothesis

distclean: clean
	rm -rf $(VENV)
