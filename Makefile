# One entry point for people and CI. `make serve` and `make test` set up
# everything they need on a fresh machine (a .venv, the pinned CPU torch,
# Debian's chromium for the browser tests) and are safe to re-run.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
INDEX  := glossary/entries/_index.sqlite3
HOST   ?= 127.0.0.1
PORT   ?= 8000
# Tests and benchmarks use a fixed thread count so that numbers are comparable.
export OMP_NUM_THREADS ?= 2
# OpenMP threads sleep instead of spinning when idle: on a shared 2-core machine the default
# active wait made torch 10-50x slower whenever another process was busy.
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: setup browser axe postgres catalogs site serve test lint format bench zoo clean

setup: $(STAMP) $(INDEX)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

# The lookup index (glossary/index.py), compiled as the wheel build does, so that the first
# `glossary lookup` after setup is as fast as the next ones instead of compiling it from every
# entry. It records what it was compiled from: after an edit, lookups compile a fresh copy into
# the cache folder until the next `make setup` (the prerequisites are index.CODE_FILES).
INDEX_CODE := $(addprefix glossary/,fields.py index.py i18n.py links.py loader.py model.py \
              normalize.py plainyaml.py schema.py textsearch.py)
$(INDEX): $(STAMP) $(wildcard glossary/entries/*.yaml) $(INDEX_CODE)
	$(PY) -m glossary.index

# Debian's chromium for the Playwright tests (never a browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "browser tests need Debian's chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }

# axe-core for the accessibility tests, by name from the npm registry (Debian's npm if missing).
AXE := .cache/axe/node_modules/axe-core/axe.min.js
axe: $(AXE)

$(AXE):
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq npm >/dev/null; \
	  else echo "accessibility tests need npm: sudo apt-get install -y npm" >&2; exit 1; fi; }
	npm install --silent --no-save --no-audit --no-fund --prefix .cache/axe axe-core@4

# Debian's PostgreSQL server binaries for the grid search's multi-machine storage test (the test
# starts its own throw-away server, as the package's postgres user, in a temporary folder).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; \
	  else echo "grid-search tests need Debian's postgresql: sudo apt-get install -y postgresql" >&2; exit 1; fi; }

catalogs: setup
	$(PY) scripts/i18n.py compile

site: setup catalogs
	$(PY) -m mkdocs build --strict

serve: site
	@echo "Serving the built site on http://$(HOST):$(PORT)/ (Ctrl-C to stop)"
	$(PY) -m http.server $(PORT) --bind $(HOST) --directory site

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: setup browser axe postgres catalogs lint
	$(VENV)/bin/glossary validate
	$(VENV)/bin/glossary bench --check
	$(PY) -m pytest -n 2 --dist loadgroup

bench: setup
	$(PY) scripts/run_benchmarks.py

zoo: setup
	$(PY) scripts/train_zoo.py

clean:
	rm -rf site artifacts .pytest_cache .ruff_cache
