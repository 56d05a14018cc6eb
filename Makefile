# Every target does its own set-up on a fresh machine: a virtualenv in .venv with olearn installed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Generates a small regression dataset, warms numba's kernel cache, then trains on it.
demo: $(STAMP)
	$(BIN)/python scripts/make_data.py --examples 20000 --features 40 --out data/demo.vw.gz
	$(BIN)/olearn --warm-cache --quiet
	$(BIN)/olearn -d data/demo.vw.gz -p data/demo.preds

# --warm-cache compiles the kernels first (and builds the ahead-of-time ones the CLI starts with).
test: $(STAMP)
	$(BIN)/olearn --warm-cache --quiet
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
