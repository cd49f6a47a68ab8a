# Two commands: `make lab` (set up, then open JupyterLab) and `make test` (set up, then run every test).
# Setup is a .venv in the repo root with the pinned dependencies and tutorial_lib installed editable;
# it is redone only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test notebooks reset-exercises html bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Jupyter refuses to start as root unless told (containers and CI images often run as root).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: setup
	cd notebooks && ../$(BIN)/jupyter lab $(ALLOW_ROOT) 00_start_here.ipynb

test: setup
	$(BIN)/python -m pytest

# Restart & Run All on every notebook (or NB=notebooks/01_....ipynb), for maintainers after editing one.
notebooks: setup
	$(BIN)/python .ci/execute_notebooks.py $(NB)

# Put every exercise cell (stub + check) back as committed; other cells, solutions and the library stay.
# REF=<git revision> resets to another commit than HEAD.
reset-exercises: setup
	$(BIN)/python .ci/reset_exercises.py --ref $(or $(REF),HEAD)

# A static reading copy of the course in build/html (open build/html/index.html; works offline).
html: setup
	$(BIN)/python .ci/build_html.py build/html

# Speed and memory figures, printed as tables (quoted in the README; never asserted in tests).
bench: setup
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build
