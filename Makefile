# The two commands a reader needs are `make serve` and `make test`.
# Every target sets up what it needs first (virtual environment, Python and npm
# packages), once, so each works on a fresh clone.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup serve test lint build check relock impact train results bench bench-docs bench-scale properdocs zensical clean

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[test]'
	touch $(STAMP)

NPM_STAMP := node_modules/.installed

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $(NPM_STAMP)

setup: $(STAMP) $(NPM_STAMP)

serve: setup
	$(BIN)/mkdocs serve

# The tests in one process per core (pytest-xdist), a file to a worker, in the order tests/conftest.py gives them;
# the model's tests together (docs_hooks.pytest_linemap), so the worker that runs them writes the line map.
test: setup
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

build: setup
	$(BIN)/mkdocs build --strict

check: setup
	$(BIN)/python -m docs_hooks check

relock: setup
	$(BIN)/python -m docs_hooks relock

impact: setup
	$(BIN)/python -m docs_hooks impact $(or $(REV),origin/main)

train: setup
	$(BIN)/python src/train.py

# Train, then record the run for the site's Training results page.
results: setup
	$(BIN)/python src/train.py --out runs/sort.npz
	$(BIN)/python -m docs_hooks results runs/sort.history.json docs/data/training-run.json \
		--command "python src/train.py --out runs/sort.npz"

bench: setup
	$(BIN)/python bench/bench_model.py

# The generator against MkDocs alone (about two minutes), and its growth from 1x to 10x (about five).
bench-docs: setup
	$(BIN)/python bench/bench_docs.py --runs 5

bench-scale: setup
	$(BIN)/python bench/bench_scale.py --runs 3

# The site also builds with ProperDocs, the maintained fork of MkDocs (in a venv of its own,
# since Material still depends on MkDocs).
PD := .venv-properdocs
properdocs: setup
	test -x $(PD)/bin/python || $(PYTHON) -m venv $(PD)
	$(PD)/bin/python -m pip install --quiet -c requirements.lock -e '.[test]' properdocs==1.6.7
	$(PD)/bin/python -m pytest -q -p no:cacheprovider tests/docs_hooks/test_site_build.py -k properdocs

# The site also builds with Zensical, which runs the generator's Python-Markdown extension (named in
# mkdocs.yml) but no plugin: 'pages' first writes what the plugin would add (source pages, stylesheets).
zensical: setup
	$(BIN)/python -m docs_hooks pages
	$(BIN)/python -m zensical build --clean

clean:
	rm -rf site .cache docs/source docs/assets/docs_hooks docs/.docs_hooks-pages docs/spec/model.pdf
