"""What starting a worker costs before it reads JOB.json: importing its entry point.

Each round runs a fresh ``python -X importtime -c "import kerneltracer.worker.main"`` for
this checkout and, with ``--against DIR``, for another checkout (e.g. one from before a
change), interleaved so machine noise hits both alike. Reports the median over rounds of
the entry point's cumulative import time (as ``-X importtime`` measures it), the wall time
of the whole interpreter, and whether ``kerneltracer.config`` / ``yaml`` were loaded.

Usage: python bench/bench_worker_import.py [--repeat 5] [--against /path/to/old/checkout]
Results are printed and written to bench/out/worker_import.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULE = "kerneltracer.worker.main"
_PROBE = (
    f"import sys, {MODULE}\n"
    "print(int('kerneltracer.config' in sys.modules), int('yaml' in sys.modules),"
    " sum(m.split('.')[0] == 'kerneltracer' for m in sys.modules))"
)


def one_run(checkout: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _PROBE],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=checkout,
    )
    wall = time.perf_counter() - start
    cumulative = next(
        int(line.split("|")[1])
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and line.split("|")[2].strip() == MODULE
    )
    config, yaml, ours = (int(v) for v in proc.stdout.split())
    return {
        "import_ms": cumulative / 1000,
        "wall_ms": wall * 1000,
        "config": config,
        "yaml": yaml,
        "our_modules": ours,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    checkouts = {"this": REPO} | ({"against": args.against.resolve()} if args.against else {})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for path in checkouts.values():
        one_run(path)  # warm the file cache and the .pyc files
    for _ in range(args.repeat):
        for name, path in checkouts.items():
            runs[name].append(one_run(path))
    result = {}
    for name, rows in runs.items():
        result[name] = {
            "checkout": str(checkouts[name]),
            "import_ms_median": statistics.median(r["import_ms"] for r in rows),
            "wall_ms_median": statistics.median(r["wall_ms"] for r in rows),
            "import_ms_runs": [round(r["import_ms"], 1) for r in rows],
            "loads_config": bool(rows[0]["config"]),
            "loads_yaml": bool(rows[0]["yaml"]),
            "our_modules": rows[0]["our_modules"],
        }
        r = result[name]
        print(
            f"{name:8s} import {r['import_ms_median']:7.1f} ms  wall {r['wall_ms_median']:7.1f} ms"
            f"  config={r['loads_config']} yaml={r['loads_yaml']}"
            f"  kerneltracer modules={r['our_modules']}  runs={r['import_ms_runs']}"
        )
    if "against" in result:
        ratio = result["against"]["import_ms_median"] / result["this"]["import_ms_median"]
        print(f"the other checkout takes {ratio:.2f}x as long to import {MODULE}")
    out = REPO / "bench" / "out" / "worker_import.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
