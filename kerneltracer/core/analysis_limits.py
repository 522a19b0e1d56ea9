"""The bounds an analysis runs under by default, shared by `kerneltracer analyze` and the
Python API's ``Run.analyze()``. In core, with nothing heavy: the CLI reads it at start-up,
help included."""

from __future__ import annotations

import os

DEFAULT_TIMEOUT_S = 600.0
# Parallel only for outputs that add up to this: each worker pays the analyses' imports again,
# which small inputs do not win back (bench/bench_report.py --analyze).
AUTO_PARALLEL_MIN_BYTES = 64 << 20
DEFAULT_MEMORY_FRACTION = 0.5


def default_max_memory() -> int:
    """Half the machine's RAM: room for a big trace, none for a runaway analysis."""
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * DEFAULT_MEMORY_FRACTION)
