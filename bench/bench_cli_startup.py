"""What a command costs before it does any work: the CLI's start-up, and one small input.

Each round runs, as fresh processes and interleaved so machine noise hits all alike:
``python -c pass`` (the floor), ``kerneltracer --help``, ``kerneltracer COMMAND --help`` for
every command, and ``compile-health`` on one small tlparse test log beside tlparse 0.4.3 on
the same log (the peer). Reports the median wall time of each and its ratio to the floor /
to tlparse. tests/spine/test_cli_startup.py checks which modules help loads; this has the
seconds (never asserted in tests).

Usage: python bench/bench_cli_startup.py [--repeat 5] [--log PATH]
Results are printed and written to bench/out/cli_startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTDATA = Path(os.environ.get("KT_TESTDATA", REPO.parent / "shared" / "testdata"))
KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, cwd=REPO)
    return time.perf_counter() - start


def commands() -> list[str]:
    sys.path.insert(0, str(REPO))
    import click

    from kerneltracer.cli.main import root

    return root.list_commands(click.Context(root))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--log", type=Path, default=TESTDATA / "tlparse" / "comp_failure.log")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="kt-bench-cli-"))
    tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    cases: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--help": [*KT, "--help"],
        **{f"{name} --help": [*KT, name, "--help"] for name in commands()},
        "compile-health LOG": [*KT, "compile-health", str(args.log), "-o", str(out / "ch")],
        "tlparse LOG": [tlparse, str(args.log), "-o", str(out / "tl"), "--overwrite",
                        "--no-browser"],
    }
    for cmd in cases.values():
        wall(cmd)  # warm the file cache and the .pyc files
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, cmd in cases.items():
            runs[name].append(wall(cmd))
    medians = {name: statistics.median(v) for name, v in runs.items()}
    floor = medians["python -c pass"]
    result = {
        "load_1min": os.getloadavg()[0],
        "repeat": args.repeat,
        "log": str(args.log),
        "median_s": {k: round(v, 4) for k, v in medians.items()},
        "vs_python": {k: round(v / floor, 2) for k, v in medians.items()},
        "compile_health_vs_tlparse": round(
            medians["compile-health LOG"] / medians["tlparse LOG"], 2
        ),
    }
    for name, value in medians.items():
        print(f"{name:<28} {value * 1000:8.0f} ms  {value / floor:5.1f}x python -c pass")
    print(f"compile-health / tlparse on {args.log.name}: {result['compile_health_vs_tlparse']}x"
          f"  (load {result['load_1min']:.1f})")
    dest = REPO / "bench" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "cli_startup.json").write_text(json.dumps(result, indent=2))
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
