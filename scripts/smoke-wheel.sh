#!/usr/bin/env bash
# The wheel as a user gets it: built (scripts/build-dist.sh), installed — not editable — into
# a fresh venv whose other packages come from the runtime lock, then run from outside the
# source tree: `kerneltracer --version`, the demo's first steps on one tiny model, and the
# Python API on the run they wrote.   scripts/smoke-wheel.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PYTHON=${PYTHON:-python3}  # makes the clean venv
# Builds the wheel: the checkout's venv, whose setuptools is the locked one (the machine's may
# be too old for pyproject's SPDX license string).
BUILD_PYTHON=${BUILD_PYTHON:-$repo/.venv/bin/python}
if [ $# -ge 1 ]; then
  work=$1  # the caller's: kept, to look into afterwards
else
  # Our own: a venv with torch is ~1.6 GB, and every CI run makes one; kept, they filled the disk.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
PYTHON=$BUILD_PYTHON bash scripts/build-dist.sh "$work/dist" >/dev/null
"$PYTHON" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" --require-hashes --no-deps -r requirements/run.txt
"${pip[@]}" --no-deps "$work"/dist/kerneltracer-*.whl
"$work/venv/bin/python" -m pip check
cd "$work"  # nothing of the checkout on sys.path from here on
export PATH="$work/venv/bin:$PATH"
kerneltracer --version
kerneltracer models build-tiny models >/dev/null
cat > smoke.yaml <<'YAML'
output_dir: runs/smoke
models:
  - path: models/tiny-gpt2
    tracers: [torch_dispatch, torch_profiler]
YAML
kerneltracer run smoke.yaml
kerneltracer analyze runs/smoke
kerneltracer report runs/smoke
python - <<'PY'
import kerneltracer as kt
from kerneltracer.errors import RunDirError

assert kt.__file__.startswith(__import__("sys").prefix), kt.__file__  # the installed wheel
run = kt.open_run("runs/smoke")
print(run.jobs[["model", "tracer", "status"]].to_string(index=False))
assert set(run.jobs["status"]) == {"ok"}
cov = run.coverage()
print(f"coverage: {cov['op'].nunique()} ops")
trace = run.outputs("chrome_trace")["path"].iloc[0]
print(kt.timeline(trace).summary[["end_to_end_latency_us", "bottleneck"]].to_string(index=False))
try:
    kt.open_run("not-a-run")
except RunDirError as exc:
    print(f"one-line error: {exc}")
PY
echo "wheel smoke test passed ($repo)"
