# Every target is self-sufficient on a fresh machine: it creates .venv and installs the
# project when pyproject.toml is newer than the venv: `run` the project alone, the other
# targets with its dev and langgraph extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench bench-stores bench-quick bench-relevance bench-relevance-quick \
	bench-relevance-heldout lint clean

RUN_STAMP := $(VENV)/.installed-run

$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,langgraph]'
	touch $(STAMP)

# Aider (the relevance benchmark's baseline) pins exact versions of what dagctx also uses,
# so it gets a venv of its own, from the `aider` extra of pyproject.toml. When it cannot be
# installed the benchmark still runs and prints n/a for aider.
AIDER_VENV := .venv-aider
AIDER_STAMP := $(AIDER_VENV)/.installed

$(AIDER_STAMP): pyproject.toml $(STAMP)
	test -x $(AIDER_VENV)/bin/python || $(PYTHON) -m venv $(AIDER_VENV)
	$(BIN)/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["aider"]))' > $(AIDER_VENV)/requirements.txt
	$(AIDER_VENV)/bin/python -m pip install --quiet -r $(AIDER_VENV)/requirements.txt \
		&& touch $(AIDER_STAMP) || echo "aider not installed: its rows will read n/a"

run: $(RUN_STAMP)
	$(BIN)/dagctx watch . --budget 8000

# The tests start a throwaway PostgreSQL server and drive the viz page in a headless
# Chromium; the scripts install each when missing (and do nothing when present).
test: $(STAMP)
	sh scripts/ensure_postgres.sh
	sh scripts/ensure_chromium.sh
	$(BIN)/ruff check dagctx tests benchmarks
	$(BIN)/ruff format --check dagctx tests benchmarks
	$(BIN)/mypy dagctx
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Claims and locks, SQLite vs PostgreSQL over loopback (starts a throwaway server).
bench-stores: $(STAMP)
	sh scripts/ensure_postgres.sh
	$(BIN)/python -m benchmarks.bench_stores

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks --quick

# Repositories come from $$DAGCTX_MIRRORS (bare mirrors) when set, else are cloned.
bench-relevance: $(STAMP) $(AIDER_STAMP)
	$(BIN)/python -m benchmarks.relevance

bench-relevance-quick: $(STAMP) $(AIDER_STAMP)
	$(BIN)/python -m benchmarks.relevance --quick

# The held-out set: repositories and languages the ranking was not developed on.
bench-relevance-heldout: $(STAMP) $(AIDER_STAMP)
	$(BIN)/python -m benchmarks.relevance --tasks heldout

clean:
	rm -rf $(VENV) $(AIDER_VENV) .dagctx build dist
