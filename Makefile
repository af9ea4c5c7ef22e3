# Two entry points, each creating the environment it needs: `make demo` and `make test`
# (`make test` = ruff, mypy, then the whole pytest suite; what CI runs).
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

.PHONY: install demo test bench
# `make test` runs pytest on TEST_WORKERS pytest-xdist workers (CI's machine has 2 cores), one test file per
# worker at a time (--dist loadfile: a file's module fixtures are built once; the shared Acme lake is copied per
# worker, tests/conftest.py), and lists the 30 slowest tests in every log.
TEST_WORKERS ?= 2
install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/semcat demo

test: $(STAMP) $(DBT_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -p no:cacheprovider --durations=30 -n $(TEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(VENV)/bin/python -m bench.bench_engine --quick
	$(VENV)/bin/python -m bench.bench_plan --quick
