# The README's commands: `make run` starts the portal with the bundled sandbox, `make test` runs
# every test, `make lint` checks style and types. Each installs what is missing first;
# `make install` does nothing when nothing changed.
# The virtual environment's Python: the distribution's own where it is 3.11 or newer and can make
# one (Debian's, with python3-venv), else `python3`. Debian builds its Python with profile-guided
# and link-time optimisation; pyenv, for one, builds without them by default, and there
# `make test-fast` took a fifth more CPU. `make install PYTHON=python3.12` chooses another; an
# existing .venv is kept (remove it to rebuild it on another Python).
DISTRIBUTION_PYTHON := /usr/bin/python3
PYTHON ?= $(shell $(DISTRIBUTION_PYTHON) -c 'import ensurepip, sys; sys.exit(sys.version_info < (3, 11))' \
  2>/dev/null && echo $(DISTRIBUTION_PYTHON) || echo python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.install-stamp
VENDOR := static/vendor
PYTEST_ARGS ?=
# Debian packages the commands need, installed when missing and running as root.
apt_install = { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1); \
  else echo "Missing: install Debian's $(1)" >&2; exit 1; fi; }
# The checkout page's languages: the .po files are the source, the .mo files are built here.
CATALOGS := $(wildcard portal/translations/*/LC_MESSAGES/messages.po)

.PHONY: install run test test-fast test-thorough lint chromium libreoffice messages npm

install: $(STAMP) $(VENDOR)/htmx.min.js $(CATALOGS:.po=.mo)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	  $(call apt_install,python3-venv) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

node_modules/.package-lock.json: package.json package-lock.json | npm
	npm ci --no-audit --no-fund
	touch $@

$(VENDOR)/htmx.min.js: node_modules/.package-lock.json
	mkdir -p $(VENDOR)
	cp node_modules/htmx.org/dist/htmx.min.js $@

%.mo: %.po | $(STAMP)
	$(BIN)/pybabel compile --statistics -i $< -o $@

# After changing the checkout page's text: extract it, merge it into every catalog, translate.
messages: $(STAMP)
	$(BIN)/pybabel extract -F babel.cfg -k _l --no-location --sort-output -o portal/translations/messages.pot .
	$(BIN)/pybabel update --ignore-obsolete -i portal/translations/messages.pot -d portal/translations

# Playwright cannot download its own browser here: the tests drive Debian's headless shell of
# Chromium, or the one PORTAL_TEST_CHROMIUM names (as tests/support/browser.py reads it).
chromium:
	@test -x "$${PORTAL_TEST_CHROMIUM:-/usr/bin/chromium-headless-shell}" || \
	  $(call apt_install,chromium-headless-shell)

# htmx and the accessibility checker come from the npm registry.
npm:
	@command -v npm >/dev/null || $(call apt_install,nodejs npm)

run: install
	$(BIN)/flask --app portal demo

# The spreadsheet tests of the CSV exports open files in LibreOffice (headless). Without it they
# are skipped, unless PORTAL_TEST_REQUIRE names soffice (CI, .ci/run): then this target fails.
libreoffice:
	@command -v soffice >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libreoffice-calc-nogui; fi; \
	  command -v soffice >/dev/null || \
	  if echo ",$$PORTAL_TEST_REQUIRE," | tr -d ' ' | grep -q ',soffice,'; then \
	    echo "LibreOffice is missing and PORTAL_TEST_REQUIRE requires it: install Debian's libreoffice-calc-nogui" >&2; exit 1; \
	  else echo "LibreOffice is missing: install Debian's libreoffice-calc-nogui (its tests are skipped)" >&2; fi; }

# The suite starts hundreds of Python processes (portals, sandboxes, workers, gunicorn): each
# reads the bytecode its predecessors wrote instead of compiling the portal and the tests
# again, also where the environment sets PYTHONDONTWRITEBYTECODE.
test: install chromium libreoffice
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n auto --dist worksteal $(PYTEST_ARGS)

# Everything but the tests that drive Chromium (marked `browser`) and those marked `slow`: the
# check to run while working (docs/testing.md). `make test` runs them all. Without a browser to
# wait for, one worker more than CPUs fills the waits: on 2 CPUs, run in turns, 3 workers took
# 61-70 s and 79-96 s of user CPU where 4 (`-n auto`) took 61-76 s and 87-110 s.
test-fast: install libreoffice
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n $$(( $$(nproc) + 1 )) --dist worksteal -m "not browser and not slow" $(PYTEST_ARGS)

# Every test, the generating ones (Schemathesis, Hypothesis) with more requests and inputs
# (PORTAL_TEST_THOROUGH, docs/testing.md): after changing the API document, the sandbox or a form.
test-thorough: install chromium libreoffice
	env -u PYTHONDONTWRITEBYTECODE PORTAL_TEST_THOROUGH=1 $(BIN)/pytest -n auto --dist worksteal $(PYTEST_ARGS)

# The same four commands run before each commit (.pre-commit-config.yaml) and in CI (.ci/run).
# lint-imports checks the layers of docs/architecture.md (its contracts are in pyproject.toml).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
