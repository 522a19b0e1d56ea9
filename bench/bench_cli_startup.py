"""What a command costs before it does any work: the CLI's start-up, and tiny inputs.

Each round runs, as fresh processes and interleaved so machine noise hits all alike:
``python -c pass`` (the floor), tlparse 0.4.3 on a small TORCH_TRACE log (the peer, a Rust
binary), ``kerneltracer --help``, ``kerneltracer COMMAND --help`` for every command, and four
commands on tiny inputs: ``logs`` and ``compile-health`` on the log tlparse reads,
``timeline`` on a 4 KB chrome trace, ``status`` on a three-job run dir. Reports per case
the median wall and CPU seconds (user + sys of the process and every child it reaped, from
getrusage: on a loaded machine the CPU figure is the one to trust), each as a ratio to
``python -c pass`` and to tlparse, with the machine's load before and after. The commands
run with their .pyc files written, as an installed package has them, whatever
PYTHONDONTWRITEBYTECODE says in the shell.
tests/spine/test_cli_startup.py checks which modules a help loads; this has the seconds
(never asserted in tests).

``--against OLD_CHECKOUT`` runs every kerneltracer case a second time from another
checkout's ``kerneltracer/`` (same interpreter and packages), interleaved: before / after.

Usage: python bench/bench_cli_startup.py [--repeat 5] [--log PATH] [--against DIR]
Results are printed and written to bench/out/cli_startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTDATA = Path(os.environ.get("KT_TESTDATA", REPO.parent / "shared" / "testdata"))
TRACE = TESTDATA / "hta" / "call_stack" / "backward_thread.json"

# The CLI from the checkout ROOT (argv[1]), whatever checkout the venv installed: the
# editable install's finder goes first, so it is dropped before the import.
_LAUNCH = (
    "import sys; root = sys.argv.pop(1); "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
    "sys.path.insert(0, root); from kerneltracer.cli.main import main; "
    "sys.argv[0] = 'kerneltracer'; main()"
)


def kt(root: Path) -> list[str]:
    return [sys.executable, "-c", _LAUNCH, str(root)]


# An installed package has its .pyc files; a shell with PYTHONDONTWRITEBYTECODE=1 (this
# machine's) would compile every module of ours from source on every run (~0.1 s).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process (its reaped children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, cwd=REPO, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def commands() -> list[str]:
    sys.path.insert(0, str(REPO))
    import click

    from kerneltracer.cli.main import root

    return root.list_commands(click.Context(root))


def status_run_dir(dest: Path) -> Path:
    sys.path.insert(0, str(REPO))
    from tests.report.runs import make_run, status

    return make_run(
        dest,
        {
            "gpt2/torch_dispatch": status("gpt2/torch_dispatch", "gpt2"),
            "bert/profiler": status("bert/profiler", "bert", status="failed"),
            "opt/torch_dispatch": None,
        },
    )


def kt_cases(root: Path, tag: str, log: Path, run_dir: Path, out: Path) -> dict[str, list[str]]:
    k = kt(root)
    o = out / tag
    return {
        f"{tag}--help": [*k, "--help"],
        **{f"{tag}{name} --help": [*k, name, "--help"] for name in commands()},
        f"{tag}logs LOG": [*k, "logs", str(log), "-o", str(o / "logs"), "--overwrite"],
        f"{tag}compile-health LOG": [*k, "compile-health", str(log), "-o", str(o / "ch")],
        f"{tag}timeline TRACE": [*k, "timeline", str(TRACE), "-o", str(o / "tl")],
        f"{tag}status RUN_DIR": [*k, "status", str(run_dir)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--log", type=Path, default=TESTDATA / "tlparse" / "simple.log")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="kt-bench-cli-"))
    run_dir = status_run_dir(out / "run")
    tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    cases: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "tlparse LOG": [
            tlparse,
            str(args.log),
            "-o",
            str(out / "tl"),
            "--overwrite",
            "--no-browser",
        ],
        **kt_cases(REPO, "", args.log, run_dir, out),
    }
    if args.against is not None:
        cases |= kt_cases(args.against.resolve(), "before: ", args.log, run_dir, out)
    load_before = os.getloadavg()
    for cmd in cases.values():
        run(cmd)  # warm the file cache, write the .pyc files, fill the template cache
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for i in range(args.repeat):
        for name in names[i % len(names) :] + names[: i % len(names)]:  # order rotated
            wall, cpu = run(cases[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
    load_after = os.getloadavg()
    wall = {k: statistics.median(v) for k, v in walls.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    floor, peer = "python -c pass", "tlparse LOG"
    result = {
        "pythondontwritebytecode_in_shell": "PYTHONDONTWRITEBYTECODE" in os.environ,
        "load_1min_before": round(load_before[0], 2),
        "load_1min_after": round(load_after[0], 2),
        "cores": os.cpu_count(),
        "repeat": args.repeat,
        "log": str(args.log),
        "trace": str(TRACE),
        "against": str(args.against) if args.against else None,
        "median_wall_s": {k: round(v, 4) for k, v in wall.items()},
        "median_cpu_s": {k: round(v, 4) for k, v in cpu.items()},
        "wall_vs_python": {k: round(v / wall[floor], 2) for k, v in wall.items()},
        "wall_vs_tlparse": {k: round(v / wall[peer], 2) for k, v in wall.items()},
        "cpu_vs_tlparse": {k: round(v / max(cpu[peer], 1e-3), 2) for k, v in cpu.items()},
    }
    print(
        f"load {load_before[0]:.1f} before, {load_after[0]:.1f} after, "
        f"{os.cpu_count()} cores; medians of {args.repeat}"
    )
    print(f"{'case':<34} {'wall':>8} {'cpu':>8}  {'/python':>7} {'/tlparse':>8}")
    for name in cases:
        print(
            f"{name:<34} {wall[name] * 1000:6.0f}ms {cpu[name] * 1000:6.0f}ms  "
            f"{wall[name] / wall[floor]:6.1f}x {wall[name] / wall[peer]:7.1f}x"
        )
    dest = REPO / "bench" / "out"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "cli_startup.json").write_text(json.dumps(result, indent=2))
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
