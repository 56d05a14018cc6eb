# Every target does its own set-up on a fresh machine: a virtualenv in .venv with olearn installed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FAST := not slow and not oracle and not dask
# pytest-xdist: a worker per core (at most 4). Most of a first run is numba compiling kernels,
# one function at a time per process; two workers halve a fresh clone's make test on 2 cores.
PYTEST := $(BIN)/python -m pytest -q -n auto --maxprocesses 4

.PHONY: install demo test check lint test-boundscheck bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/python -m compileall -q olearn  # bytecode even under PYTHONDONTWRITEBYTECODE (tests)
	touch $(STAMP)

install: $(STAMP)

# Generates a small regression dataset, then trains on it. The first run compiles the kernels it
# needs (about a minute) and starts the start-up module's build in the background.
demo: $(STAMP)
	$(BIN)/python scripts/make_data.py --examples 20000 --features 40 --out data/demo.vw.gz
	$(BIN)/olearn -d data/demo.vw.gz -p data/demo.preds

# The contributor's loop: every test but the slow, VW-oracle and Dask ones (pyproject.toml's
# markers). Kernels compile as the tests first need them, into numba's cache.
test: $(STAMP)
	$(PYTEST) -m "$(FAST)"

# Everything, as CI runs it: the lint, then --warm-cache (which compiles the kernels and builds
# the ahead-of-time ones the CLI starts with), the whole suite, and the suite again with
# numba's bounds checks on. The kernel fuzzers (the slowest tests by far) run in the second only:
# they are there to give the bounds checks odd input, and unchecked they catch nothing more.
check: lint $(STAMP)
	@echo "Compiling olearn's kernels, once (about 15 minutes on 2 cores)..."
	$(BIN)/olearn --warm-cache --quiet
	$(PYTEST) --ignore=tests/test_kernel_fuzz.py
	$(MAKE) test-boundscheck

lint: $(STAMP)
	$(BIN)/ruff check .

# The suite with numba's bounds checks on, so that an out-of-bounds access in a kernel fails a
# test instead of corrupting memory. numba's cache does not tell bounds-checked code apart, hence
# its own cache directory (no AOT module there: the CLI runs the checked JIT code), filled first
# by --warm-cache on every core (each pytest worker would otherwise compile the command line's
# kernels itself). Dask (a cluster of processes), VW's oracle and the AOT build add no kernel path
# of their own.
BOUNDSCHECK := NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$(CURDIR)/$(VENV)/numba-boundscheck
test-boundscheck: $(STAMP)
	$(BOUNDSCHECK) OLEARN_NO_BUILD=1 $(BIN)/olearn --warm-cache --quiet
	$(BOUNDSCHECK) $(PYTEST) -m "not oracle and not dask" --ignore=tests/test_aot.py

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
