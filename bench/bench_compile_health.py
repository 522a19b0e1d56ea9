"""Benchmark `kerneltracer compile-health` on a run of 200 synthetic compile logs.

The run dir holds N jobs, each with one TORCH_TRACE log of a model's compile (1-6 frames,
0-2 recompiles each, graph breaks, output code of 4-64 KiB per graph; see
tests/support/compile_logs.py). Each measurement is a fresh CLI process
(start-up included), with its peak RSS from /usr/bin/time -v when available. The reference
is tlparse 0.4.3 over the same logs, one process per log (it reads one log at a time),
interleaved with ours run by run; medians are printed.

``--base DIR`` also times another checkout's ``kerneltracer`` (``git archive REV
kerneltracer | tar -x -C DIR``) in the same runs, for before/after figures. ``--big``
instead reads two big inputs, one process each, with peak RSS: a ≥ 60 MB concatenation
of the tlparse test logs (against tlparse on it) and a 200 MB log whose one record
carries a 200 MB payload (bounded memory: ≤ 300 MiB is the goal). The load average is
printed with the figures: on a shared machine only ratios of one run mean anything.

    .venv/bin/python bench/bench_compile_health.py                # 200 logs, 5 runs each
    .venv/bin/python bench/bench_compile_health.py --logs 50 --repeats 1 --no-tlparse
    .venv/bin/python bench/bench_compile_health.py --base /tmp/base --no-tlparse
    .venv/bin/python bench/bench_compile_health.py --big --repeats 3
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench_structured_logs import huge_record, inputs  # noqa: E402

from tests.support.compile_logs import SynthModel, write_log  # noqa: E402

KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def make_run(run_dir: Path, n: int, seed: int = 0) -> int:
    """N compile jobs with one log each; returns the bytes of logs written."""
    rng = random.Random(seed)
    total = 0
    for i in range(n):
        job = run_dir / "jobs" / f"model-{i:04d}" / "compile"
        (job / "torch_trace").mkdir(parents=True)
        model = SynthModel(
            f"model_{i}",
            frames=rng.randint(1, 6),
            recompiles=rng.randint(0, 2),
            kernels=rng.randint(2, 12),
            failed=i % 17 == 0,
            code_kb=rng.choice((4, 8, 16, 64)),
        )
        log = write_log(job / "torch_trace" / "rank_0.log", model, seed=i)
        total += log.stat().st_size
        status = {
            "schema_version": 1,
            "status": "ok",
            "tracer": "compile",
            "model": {"display": f"org/model-{i}"},
            "mode": "eval",
            "outputs": [{"path": "torch_trace/rank_0.log", "kind": "torch_trace_log"}],
        }
        (job / "_TRACE_STATUS.json").write_bytes(orjson.dumps(status))
    return total


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(args: list[str], check: bool = True) -> tuple[float, float | None]:
    """(wall seconds, peak RSS MiB or None) of one process."""
    use_time = shutil.which("time") is not None and Path("/usr/bin/time").is_file()
    cmd = ["/usr/bin/time", "-v", *args] if use_time else args
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    rss = None
    for line in proc.stderr.splitlines():
        if "Maximum resident set size" in line:
            rss = int(line.split(":")[1]) / 1024
    return wall, rss


def tlparse_all(logs: list[Path], out: Path) -> float:
    tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    t0 = time.perf_counter()
    for i, log in enumerate(logs):
        subprocess.run(
            [tlparse, str(log), "-o", str(out / str(i)), "--overwrite", "--no-browser"],
            check=True,
            capture_output=True,
        )
    return time.perf_counter() - t0


def _sides(base: Path | None) -> dict[str, list[str]]:
    sides = {"ours": KT}
    if base is not None:
        sides["base"] = ["env", f"PYTHONPATH={base}", *KT]
    return sides


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def bench_big(tmp: Path, repeats: int, base: Path | None, no_tlparse: bool) -> None:
    """Peak RSS and wall on the big inputs, one process each."""
    big = inputs(tmp)["big"]
    cases = {"big": big, "huge_record": huge_record(tmp / "huge_record.log")}
    tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    for name, log in cases.items():
        got: dict[str, list[tuple[float, float | None]]] = {}
        before = load()
        for _ in range(repeats):
            for side, cmd in _sides(base).items():
                # A skipped record makes the log untrusted: exit 1 is the expected answer.
                out = str(tmp / f"out-{side}")
                got.setdefault(side, []).append(
                    timed([*cmd, "compile-health", str(log), "-o", out], check=False)
                )
            if name == "big" and not no_tlparse:
                out = str(tmp / "tl")
                got.setdefault("tlparse", []).append(
                    timed([tlparse, str(log), "-o", out, "--overwrite", "--no-browser"])
                )
        size = log.stat().st_size / 1e6
        print(f"{name} ({size:.0f} MB), load {before} -> {load()}:")
        for side, runs in got.items():
            wall = _median([w for w, _ in runs])
            rss = _median([r for _, r in runs if r is not None])
            ratio = ""
            if "tlparse" in got and side != "tlparse":
                ratio = f" ({wall / _median([w for w, _ in got['tlparse']]):.2f}x tlparse)"
            print(f"  {side:8s} wall {wall:6.2f} s{ratio}  peak RSS {rss:6.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-tlparse", action="store_true")
    ap.add_argument("--base", type=Path, help="a folder holding another checkout's kerneltracer")
    ap.add_argument("--big", action="store_true", help="the big inputs, with peak RSS")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-compile-health-") as tmp:
        if args.big:
            bench_big(Path(tmp), args.repeats, args.base, args.no_tlparse)
            return
        run = Path(tmp) / "run"
        size = make_run(run, args.logs)
        logs = sorted(run.glob("jobs/*/compile/torch_trace/*.log"))
        print(f"{args.logs} logs, {size / 2**20:.1f} MiB, load {load()}")
        walls: dict[str, list[float]] = {}
        rss: dict[str, list[float]] = {}
        theirs = []
        for _ in range(args.repeats):
            for side, cmd in _sides(args.base).items():
                wall, peak = timed([*cmd, "compile-health", str(run)])
                walls.setdefault(side, []).append(wall)
                if peak is not None:
                    rss.setdefault(side, []).append(peak)
            if not args.no_tlparse:
                theirs.append(tlparse_all(logs, Path(tmp) / "tl"))
        t = _median(theirs)
        for side, ws in walls.items():
            med = _median(ws)
            ratio = f", {med / t:.2f}x tlparse" if theirs else ""
            print(
                f"{side} compile-health: {med:.2f} s median of {len(ws)} "
                f"({1000 * med / args.logs:.1f} ms per log, CLI start-up included{ratio}), "
                f"peak RSS {_median(rss.get(side, [])):.0f} MiB"
            )
        if theirs:
            print(f"tlparse 0.4.3, one process per log: {t:.2f} s median")
        print(f"load after: {load()}")


if __name__ == "__main__":
    main()
