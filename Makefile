# Two entry points, each creating the environment it needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

.PHONY: install demo test bench
install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/semcat demo

test: $(STAMP)
	$(VENV)/bin/pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(VENV)/bin/python -m bench.bench_engine --quick
	$(VENV)/bin/python -m bench.bench_plan --quick
