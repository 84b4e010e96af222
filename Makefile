# The README's commands: `make run` starts the portal with the bundled sandbox, `make test` runs
# every test. Both install what is missing first; `make install` does nothing when nothing changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.install-stamp
VENDOR := static/vendor
CHROMIUM ?= /usr/bin/chromium
PYTEST_ARGS ?=

.PHONY: install run test lint chromium

install: $(STAMP) $(VENDOR)/htmx.min.js

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(VENDOR)/htmx.min.js: node_modules/.package-lock.json
	mkdir -p $(VENDOR)
	cp node_modules/htmx.org/dist/htmx.min.js $@

# Playwright cannot download its own browser here: the tests drive Debian's Chromium.
chromium:
	@test -x "$(CHROMIUM)" || test -n "$$PORTAL_TEST_CHROMIUM" || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "Chromium is missing: install Debian's chromium, or set PORTAL_TEST_CHROMIUM" >&2; exit 1; fi; }

run: install
	$(BIN)/flask --app portal demo

test: install chromium
	$(BIN)/pytest -n auto $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
