# Every target runs set-up first; it is quick when nothing changed.
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: setup demo test test-long test-fast lint typecheck format bench suite real-suite

setup:
	@bash scripts/setup.sh

demo: setup
	$(BIN)/iwr demo

lint: setup
	$(BIN)/ruff check iwr_bench tests benchmarks scripts
	$(BIN)/ruff format --check iwr_bench tests benchmarks scripts
	@# the page scripts parse (needs Node.js; tests/tools/test_page_scripts.py compiles them in Chromium)
	@if command -v node >/dev/null 2>&1; then \
		for f in iwr_bench/tools/js/*.js; do node --check "$$f" || exit 1; done; \
	fi

typecheck: setup
	$(BIN)/pyright

format: setup
	$(BIN)/ruff format iwr_bench tests benchmarks scripts
	$(BIN)/ruff check --fix iwr_bench tests benchmarks scripts

# Set-up, lint, type-check, tests; prints each phase's time and the 15 slowest tests.
test:
	@PYTEST_ARGS="$(PYTEST_ARGS)" bash scripts/test.sh

# The long real-backend runs `make test` leaves out (Ray workers killed, every suite task and real
# app proved, memory hogs in a shared browser); about 15 minutes on 2 cores (README: Tests).
test-long:
	@IWR_TEST_MARKS=long PYTEST_ARGS="$(PYTEST_ARGS)" bash scripts/test.sh

# The inner loop: no browser, nothing slow (about 3 minutes on 2 cores; README: Tests).
test-fast: setup
	$(BIN)/python -m pytest -m "not browser and not slow" $(PYTEST_ARGS)

bench: setup
	@set -e; for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b; done

suite: setup
	$(BIN)/python iwr_bench/suites/sources/draw_images.py
	$(BIN)/python -m iwr_bench.suites.build

# Real open-source apps from pinned npm packages, recorded into ~/.cache/iwr-bench/real-apps (README).
real-suite: setup
	$(BIN)/python -m iwr_bench.suites.real_apps
