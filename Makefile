# kerneltracer: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KT := $(VENV)/bin/kerneltracer
# torch is pinned so pip takes the local CPU wheel instead of a CUDA build from PyPI.
PIP_INSTALL := $(PY) -m pip install --disable-pip-version-check -c constraints.txt
STAMP := $(VENV)/.installed
MODELS := models/tiny
PYTEST_ARGS ?=

.PHONY: help install demo test lint bench models clean

help:
	@echo "make demo    set up, build tiny models, trace them, print the run dir"
	@echo "make test    set up and run the whole test suite"
	@echo "make lint    ruff + mypy"
	@echo "make bench   benchmarks (ratios against peer tools)"

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip setuptools wheel
	$(PIP_INSTALL) -e '.[dev,peers]'
	touch $@

install: $(STAMP)

$(MODELS)/.built: $(STAMP) kerneltracer/tinymodels.py
	$(KT) models build-tiny $(MODELS)
	touch $@

models: $(MODELS)/.built

demo: models
	$(KT) run configs/demo.yaml --jobs 2
	$(KT) analyze runs/demo
	@echo "run dir: $(CURDIR)/runs/demo   (kerneltracer status runs/demo; per-job reports in jobs/*/*/analysis/)"

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check kerneltracer tests bench
	$(VENV)/bin/mypy

bench: models
	$(PY) bench/bench_spine.py

clean:
	rm -rf runs $(MODELS)
