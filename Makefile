# The README's two commands: `make run` (the main job) and `make test` (the full suite, as CI
# runs it); `make test-quick` is the fast tier for the edit loop (the tests not marked slow).
# Each bootstraps .venv/ on first use and reuses it afterwards.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RESULTS ?= results

.PHONY: run test test-quick install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python scripts/main_job.py results_dir=$(RESULTS)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=25 tests

test-quick: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not slow" --durations=10 tests

clean:
	rm -rf $(VENV) .pytest_cache
