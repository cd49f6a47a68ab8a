# Two commands: `make lab` (set up, then open JupyterLab) and `make test` (set up, then run every test).
# Setup is a .venv in the repo root with the pinned dependencies and tutorial_lib installed editable;
# it is redone only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

lab: setup
	cd notebooks && ../$(BIN)/jupyter lab 00_start_here.ipynb

test: setup
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
