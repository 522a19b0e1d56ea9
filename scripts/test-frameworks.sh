#!/usr/bin/env bash
# The framework-sensitive tests (pytest marker `frameworks`, tests/conftest.py) on another
# transformers than the lock's, in a venv of their own (.venv-<which>):
#   scripts/test-frameworks.sh latest [pytest args]   the newest transformers, tokenizers,
#                                                     huggingface_hub and safetensors on PyPI
#   scripts/test-frameworks.sh oldest [pytest args]   pyproject.toml's lower bound for transformers
# Everything else comes from requirements/dev.txt. Torch stays the locked CPU wheel: a newer
# torch on PyPI is a CUDA build, so a torch upgrade is tested on a machine that has its wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: scripts/test-frameworks.sh latest|oldest [pytest args]}
shift
PYTHON=${PYTHON:-python3}
venv=.venv-$which
py=$venv/bin/python
pip=("$py" -m pip install --disable-pip-version-check)

case "$which" in
  latest|oldest) ;;
  *) echo "test-frameworks.sh: unknown release '$which' (choose latest or oldest)" >&2; exit 2 ;;
esac
[ -x "$py" ] || "$PYTHON" -m venv "$venv"
"${pip[@]}" --require-hashes --no-deps -r requirements/dev.txt
"${pip[@]}" --no-deps --no-build-isolation -e .
if [ "$which" = latest ]; then
  # pip warns that this leaves pyproject's upper bound: that is what is being tried.
  "${pip[@]}" -c constraints.txt --upgrade transformers tokenizers huggingface_hub safetensors
else
  lower=$("$py" - <<'PY'
import tomllib
from packaging.requirements import Requirement
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
(req,) = [Requirement(d) for d in deps if Requirement(d).name == "transformers"]
(low,) = [s.version for s in req.specifier if s.operator == ">="]
print(low)
PY
)
  "${pip[@]}" -c constraints.txt "transformers==$lower.*"
fi
"$py" -m pip list 2>/dev/null | grep -E -i '^(torch|transformers|tokenizers|huggingface.hub|safetensors) '
exec "$py" -m pytest -m frameworks "$@"
