"""Pre-download benchmark: N tiny repos from a local HTTP hub, concurrently vs one by one.

Each round downloads every repo into a fresh HF cache three ways, interleaved so machine
noise hits all alike:
  - ``concurrent``: ensure_models_downloaded with max_workers=N (one child process per model);
  - ``serial``: the same with max_workers=1;
  - ``bare``: the peer, huggingface_hub.snapshot_download called for each repo in turn in one
    plain process (same patterns, no isolation, no timeout, no completeness check).
The hub adds a fixed latency to every request to stand in for a real network round trip.

Usage: python bench/bench_download.py [--repos 8] [--repeat 5] [--latency-ms 0,50]
Results are printed and written to bench/out/download.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kerneltracer.config import DownloadSettings  # noqa: E402
from kerneltracer.core.jobspec import ModelRef, slugify  # noqa: E402
from kerneltracer.orchestrator.download import ensure_models_downloaded  # noqa: E402
from tests.hub.hubserver import Fault, LocalHub, make_repo, running_hub  # noqa: E402

_BARE = r"""
import json, sys
from huggingface_hub import snapshot_download
spec = json.loads(sys.argv[1])
for repo in spec["repos"]:
    snapshot_download(repo, cache_dir=spec["cache"], allow_patterns=spec["allow"],
                      ignore_patterns=spec["ignore"])
"""


def _env(hub: LocalHub, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        HF_HOME=str(home),
        HF_ENDPOINT=hub.endpoint,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_TELEMETRY="1",
    )
    return env


def _ours(hub: LocalHub, ids: list[str], home: Path, workers: int) -> float:
    refs = [ModelRef(display=i, slug=slugify(i), id=i) for i in ids]
    t0 = time.perf_counter()
    results = ensure_models_downloaded(refs, max_workers=workers, env=_env(hub, home))
    took = time.perf_counter() - t0
    bad = [r.reason for r in results.values() if not r.ok]
    if bad:
        raise SystemExit(f"download failed: {bad}")
    return took


def _bare(hub: LocalHub, ids: list[str], home: Path) -> float:
    s = DownloadSettings()
    spec = {"repos": ids, "cache": str(home / "hub"), "allow": s.allow_patterns}
    spec["ignore"] = s.ignore_patterns
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", _BARE, json.dumps(spec)], check=True, env=_env(hub, home))
    return time.perf_counter() - t0


def bench(n_repos: int, repeat: int, latency_s: float, models: dict[str, Path]) -> dict[str, float]:
    names = sorted(models)
    with running_hub() as hub:
        ids = []
        for i in range(n_repos):
            name = names[i % len(names)]
            repo = hub.add(make_repo(f"bench/{name}-{i}", models[name]))
            ids.append(repo.repo_id)
            if latency_s > 0:
                hub.fault(repo.repo_id, Fault("delay", seconds=latency_s))
        times: dict[str, list[float]] = {"concurrent": [], "serial": [], "bare": []}
        with tempfile.TemporaryDirectory(prefix="kt-bench-dl-") as tmp:
            for r in range(repeat):
                times["concurrent"].append(_ours(hub, ids, Path(tmp) / f"c{r}", n_repos))
                times["serial"].append(_ours(hub, ids, Path(tmp) / f"s{r}", 1))
                times["bare"].append(_bare(hub, ids, Path(tmp) / f"b{r}"))
                # A second, complete run: what every later `kerneltracer run` pays.
                times.setdefault("cached", []).append(_ours(hub, ids, Path(tmp) / f"c{r}", 1))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "repos": n_repos,
        "latency_ms": latency_s * 1000,
        **{f"{k}_s": round(v, 3) for k, v in med.items()},
        "speedup_concurrent_vs_serial": round(med["serial"] / med["concurrent"], 2),
        "ratio_concurrent_vs_bare": round(med["concurrent"] / med["bare"], 2),
        "ratio_serial_vs_bare": round(med["serial"] / med["bare"], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--latency-ms", default="0,50")
    args = ap.parse_args()
    from kerneltracer.worker.frameworks.huggingface.tiny import build_tiny_models

    with tempfile.TemporaryDirectory(prefix="kt-bench-models-") as tmp:
        models = {n: p for n, (p, _) in build_tiny_models(Path(tmp)).items()}
        rows = [
            bench(args.repos, args.repeat, float(ms) / 1000, models)
            for ms in args.latency_ms.split(",")
        ]
    for row in rows:
        print(json.dumps(row))
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "download.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
