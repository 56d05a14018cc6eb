# Every target does its own set-up on a fresh machine: a virtualenv in .venv with olearn installed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-boundscheck bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Generates a small regression dataset, warms numba's kernel cache, then trains on it.
demo: $(STAMP)
	$(BIN)/python scripts/make_data.py --examples 20000 --features 40 --out data/demo.vw.gz
	@echo "Compiling olearn's kernels, once (about 2 minutes on 2 cores)..."
	$(BIN)/olearn --warm-cache --quiet
	$(BIN)/olearn -d data/demo.vw.gz -p data/demo.preds

# --warm-cache compiles the kernels first (and builds the ahead-of-time ones the CLI starts with).
# Then the suite again with numba's bounds checks on, so an out-of-bounds access in a kernel
# fails a test instead of corrupting memory. numba's cache does not tell bounds-checked code
# apart, hence its own cache directory (no AOT module there: the CLI runs the checked JIT code).
# Dask (a cluster of processes), VW's oracle and the AOT build add no kernel path of their own.
test: $(STAMP)
	@echo "Compiling olearn's kernels, once (about 2 minutes on 2 cores)..."
	$(BIN)/olearn --warm-cache --quiet
	$(BIN)/python -m pytest -q
	$(MAKE) test-boundscheck

test-boundscheck: $(STAMP)
	NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$(CURDIR)/$(VENV)/numba-boundscheck $(BIN)/python -m pytest -q \
		--ignore=tests/test_dask.py --ignore=tests/test_vw_oracle.py --ignore=tests/test_aot.py

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
