# Two commands: `make lab` (set up, then open JupyterLab) and `make test` (set up, then run every test).
# Setup is a .venv in the repo root with the pinned dependencies and tutorial_lib installed editable;
# it is redone only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser lab lint test notebooks reset-exercises html bench course-stats clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Jupyter refuses to start as root unless told (containers and CI images often run as root).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: setup
	cd notebooks && ../$(BIN)/jupyter lab $(ALLOW_ROOT) 00_start_here.ipynb

# The browser test (tests/test_browser.py) drives Debian's chromium. Installed here when missing and allowed
# (root, with apt-get; the emoji font so screenshots show what learners see); otherwise this says why, and the
# test is skipped with the same reason. Playwright itself comes with the test extra; it never downloads a browser.
CHROMIUM := /usr/bin/chromium

browser:
	@if [ -x $(CHROMIUM) ]; then \
		true; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "NOTE: $(CHROMIUM) is missing and this is not root: not installing it, so the browser test will be SKIPPED (as root: apt-get install chromium)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "NOTE: $(CHROMIUM) is missing and there is no apt-get: the browser test will be SKIPPED (install Debian's chromium package)"; \
	else \
		echo "Installing Debian's chromium for the browser test (apt-get)"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null; } \
			|| echo "NOTE: apt-get could not install chromium: the browser test will be SKIPPED"; \
	fi

# ruff, configured in pyproject.toml's [tool.ruff] (notebooks and tests/inplace_corpus are left alone), and
# lint-imports, which checks the layer contracts in [tool.importlinter].
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

test: setup browser lint
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

# How long each notebook takes a learner (words, cells, outputs, exercises, predictions → minutes), core path and
# deep dives; exits 1 when a core chapter is over its budget (tests/test_course_budget.py holds it there).
course-stats: setup
	$(BIN)/python .ci/course_stats.py

# Speed and memory figures, printed as tables (quoted in the README; never asserted in tests).
bench: setup
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis test-artifacts build
