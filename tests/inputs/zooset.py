"""The zoo entries the test suite runs: every entry that is not a sibling of another (a
sibling shares a tested entry's input path; bench/bench_zoo.py runs them all)."""

from __future__ import annotations

from kerneltracer.worker.frameworks.huggingface.zoo import ZOO

TESTED = tuple(e for e in ZOO if e.sibling is None)
