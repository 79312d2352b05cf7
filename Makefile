# Every target is self-sufficient on a fresh machine: it creates .venv and installs
# the project (with its dev and langgraph extras) when pyproject.toml is newer than the venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench bench-quick lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,langgraph]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/dagctx watch . --budget 8000

test: $(STAMP)
	$(BIN)/ruff check dagctx tests benchmarks
	$(BIN)/ruff format --check dagctx tests benchmarks
	$(BIN)/mypy dagctx
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks --quick

clean:
	rm -rf $(VENV) .dagctx build dist
