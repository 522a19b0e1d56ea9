"""Benchmark `kerneltracer compile-health` on a run of 200 synthetic compile logs.

The run dir holds N jobs, each with one TORCH_TRACE log of a model's compile (1-6 frames,
0-2 recompiles each, graph breaks, output code of 4-64 KiB per graph; see
tests/support/compile_logs.py). Each measurement is a fresh CLI process
(start-up included), with its peak RSS from /usr/bin/time -v when available. The reference
is tlparse 0.4.3 over the same logs, one process per log (it reads one log at a time),
interleaved with ours run by run; medians are printed.

    .venv/bin/python bench/bench_compile_health.py                # 200 logs, 3 runs each
    .venv/bin/python bench/bench_compile_health.py --logs 50 --repeats 1 --no-tlparse
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


def timed(args: list[str]) -> tuple[float, float | None]:
    """(wall seconds, peak RSS MiB or None) of one process."""
    use_time = shutil.which("time") is not None and Path("/usr/bin/time").is_file()
    cmd = ["/usr/bin/time", "-v", *args] if use_time else args
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-tlparse", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-compile-health-") as tmp:
        run = Path(tmp) / "run"
        size = make_run(run, args.logs)
        logs = sorted(run.glob("jobs/*/compile/torch_trace/*.log"))
        print(f"{args.logs} logs, {size / 2**20:.1f} MiB")
        ours, rss, theirs = [], [], []
        for _ in range(args.repeats):
            wall, peak = timed([*KT, "compile-health", str(run)])
            ours.append(wall)
            if peak is not None:
                rss.append(peak)
            if not args.no_tlparse:
                theirs.append(tlparse_all(logs, Path(tmp) / "tl"))
        med = statistics.median(ours)
        print(
            f"kerneltracer compile-health: {med:.2f} s median of {len(ours)} "
            f"({1000 * med / args.logs:.1f} ms per log, CLI start-up included)"
        )
        if rss:
            print(f"  peak RSS {statistics.median(rss):.0f} MiB")
        if theirs:
            t = statistics.median(theirs)
            print(
                f"tlparse 0.4.3, one process per log: {t:.2f} s median "
                f"(compile-health / tlparse = {med / t:.2f})"
            )


if __name__ == "__main__":
    main()
