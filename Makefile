# The README's two commands: `make run` (the main job) and `make test`.
# Each bootstraps .venv/ on first use and reuses it afterwards.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RESULTS ?= results

.PHONY: run test install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python scripts/main_job.py results_dir=$(RESULTS)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --durations=25 tests

clean:
	rm -rf $(VENV) .pytest_cache
