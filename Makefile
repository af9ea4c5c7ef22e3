# Entry points, each creating the environment it needs: `make demo`, `make test` (ruff, mypy, then the
# default test tier: minutes, no Spark-built lake) and `make test-all` (both tiers: what CI runs).
# The tiers and their times: docs/testing.md.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[dev,spark,eval]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# dbt lives in its own environment: it pins versions of shared packages that the project does not
# (tests/semantic/test_import_dbt.py runs its `dbt parse`; SEMCAT_DBT points elsewhere).
DBT_VENV ?= .venv-dbt
DBT_STAMP := $(DBT_VENV)/.installed-dbt-1.11

$(DBT_STAMP):
	$(PYTHON) -m venv $(DBT_VENV)
	$(DBT_VENV)/bin/pip install -q "dbt-core>=1.10,<1.12" "dbt-duckdb>=1.9,<1.12"
	touch $(DBT_STAMP)

.PHONY: install install-dbt demo lint test test-default test-slow test-all bench
# pytest runs on TEST_WORKERS pytest-xdist workers (CI's machine has 2 cores), one test file per worker at a
# time (--dist loadfile: a file's module fixtures are built once; the shared Acme lake is copied per worker,
# tests/conftest.py), and lists the 30 slowest tests in every log.
# `make test` = lint + the default tier (-m "not slow"; `make test-default` runs that tier alone);
# `make test-slow` = the slow tier (the Acme lake, Spark, npm/Chromium, the HTTP variants outside the
# contract suite, long property and crash tests); `make test-all` = lint + both tiers, each tier's wall time
# printed. CI (.ci/run) runs the same three parts, lint and the default tier while the Spark lakes build.
TEST_WORKERS ?= 2
PYTEST = $(VENV)/bin/pytest -q -p no:cacheprovider --durations=30 -n $(TEST_WORKERS) --dist loadfile
install: $(STAMP)

install-dbt: $(DBT_STAMP)

demo: $(STAMP)
	$(VENV)/bin/semcat demo

# mypy twice: the project's configuration (every package), then `--strict` over the two strict packages
# exactly as written (global --strict also checks e.g. redundant casts), in its own cache directory; modules they
# import from other packages (eval, lazily) are read for their types, their own errors not reported (silent).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict --follow-imports=silent --cache-dir .mypy_cache/strict catalog_core mcp_server

test: $(STAMP) $(DBT_STAMP) lint
	$(PYTEST) -m "not slow"

test-default: $(STAMP) $(DBT_STAMP)
	$(PYTEST) -m "not slow"

test-slow: $(STAMP) $(DBT_STAMP)
	$(PYTEST) -m slow

# both tiers run even when the first fails (one CI run shows every failure); the exit status is the worse
test-all: $(STAMP) $(DBT_STAMP) lint
	@rc=0; s=$$(date +%s); $(PYTEST) -m "not slow" || rc=1; \
	echo "== make test-all: the default tier took $$(( $$(date +%s) - s )) s" >&2; \
	s=$$(date +%s); $(PYTEST) -m slow || rc=1; \
	echo "== make test-all: the slow tier took $$(( $$(date +%s) - s )) s" >&2; exit $$rc

bench: $(STAMP)
	$(VENV)/bin/python -m bench.bench_engine --quick
	$(VENV)/bin/python -m bench.bench_plan --quick
