#!/usr/bin/env bash
# Builds the sdist from a clean copy of the tracked files, then the wheel from that sdist (as
# pip does), into DIST_DIR: a file the sdist forgets is missing from the wheel too.
#   scripts/build-dist.sh DIST_DIR     (PYTHON: an interpreter with the locked setuptools+wheel)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "$1" && cd "$1" && pwd)
PYTHON=${PYTHON:-.venv/bin/python}
case $PYTHON in /*) ;; */*) PYTHON=$PWD/$PYTHON ;; *) PYTHON=$(command -v "$PYTHON") ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard | xargs -0 tar cf - | tar xf - -C "$work/src"
build() {  # build <sdist|wheel> <source dir>: no build isolation, the locked backend
  (cd "$2" && "$PYTHON" -c "import sys; from setuptools import build_meta as b; \
print(getattr(b, 'build_' + sys.argv[1])(sys.argv[2]))" "$1" "$out" >/dev/null 2>"$work/$1.log") \
    || { cat "$work/$1.log" >&2; exit 1; }
}
build sdist "$work/src"
tar xzf "$out"/kerneltracer-*.tar.gz -C "$work"
build wheel "$(ls -d "$work"/kerneltracer-*/)"
ls "$out"
