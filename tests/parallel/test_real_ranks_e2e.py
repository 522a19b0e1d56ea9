"""Multi-rank jobs: `parallel` with real weights runs one process per rank (gloo on this CPU).

The tiny Llama at TP 2: torch_dispatch and torch_profiler per rank, each rank's outputs in
`rank_<r>/`; the real ranks' dispatch signatures and collectives against the fake TP 2
simulation's (issue 34's fidelity check), for the tiny Llama and a tiny MoE at TP 2, and the
MoE at EP 2, where the simulation's balanced routing is what differs. Faults, each ending in
the right state naming the rank, within the timeout plus a few seconds, with no process of
the run left: a rank that raises at load, a rank SIGKILLed mid-forward while its peer waits
in all_reduce, a rank that hangs past the job's timeout, and the orchestrator SIGKILLed.
"""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kt, kt_popen, processes_under, status_of, wait_until, write_config

pytestmark = [pytest.mark.e2e]

TIMEOUT_S = 60
DEFAULTS = {"seq_len": 16, "dtype": "float32", "timeout_s": TIMEOUT_S}
# What only a real run dispatches: value reads of the attention mask (a fake run cannot read
# values and skips them) and the autograd wrapper of a functional collective's output, which
# the fake process group's collectives do not go through.
# What only the EP simulation dispatches: the all-to-all split sizes read back through a fake
# tensor's tolist (unbind, then the scalars the simulation answers); a real tensor's tolist
# dispatches nothing.
FAKE_ONLY_OPS = {"aten.unbind.int"}
GEMMS = ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten._grouped_mm.default")
REAL_ONLY_OPS = {
    "_c10d_functional._wrap_tensor_autograd.default",
    "aten._local_scalar_dense.default",
    "aten._to_copy.default",
    "aten.eq.Scalar",
    "aten.sum.default",
}


def _run(tmp: Path, models: list[dict[str, Any]], env: dict[str, str], **defaults: Any) -> Path:
    cfg = write_config(tmp / "config.yaml", models, defaults={**DEFAULTS, **defaults})
    proc = kt("run", str(cfg), "-j", "2", env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / "run"


@pytest.fixture(scope="module")
def ranks_run(
    tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path], tiny_moe: Path
) -> Path:
    from tests.conftest import clean_env

    tmp = tmp_path_factory.mktemp("ranks")
    llama = str(tiny_models["tiny-llama"])
    moe = str(tiny_moe)
    dispatch = {"tracers": ["torch_dispatch"]}
    moes = [
        {"path": moe, "name": f"moe-{w}", "weights": w, **dispatch, "parallel": {axis: 2}}
        for w in ("real", "fake")
        for axis in ("tp", "ep")
    ]
    models = [
        *moes,
        {"path": llama, "name": "real", "parallel": {"tp": 2}},
        {
            "path": llama,
            "name": "fake",
            "weights": "fake",
            "tracers": ["torch_dispatch"],
            "parallel": {"tp": 2},
        },
    ]
    return _run(tmp, models, clean_env(tmp), tracers=["torch_dispatch", "torch_profiler"])


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _strip(value: Any) -> Any:
    """A dispatch input as its signature: shapes and dtypes, not the values seen."""
    if isinstance(value, dict):
        return tuple(sorted((k, _strip(v)) for k, v in value.items() if k in ("shape", "dtype")))
    if isinstance(value, list):
        return tuple(_strip(v) for v in value)
    return value


def _signatures(rank_dir: Path) -> set[tuple[str, Any]]:
    return {(r["op"], _strip(r["inputs"])) for r in _rows(rank_dir / "dispatch_ops.jsonl")}


def test_every_rank_traced_and_one_status(ranks_run: Path) -> None:
    for tracer in ("torch_dispatch", "torch_profiler"):
        st = status_of(ranks_run, f"real/{tracer}.tp2")
        assert st["status"] == "ok", st.get("reason")
        paths = {o["path"] for o in st["outputs"]}
        for rank in (0, 1):
            assert f"rank_{rank}/collectives.jsonl" in paths
            assert any(p.startswith(f"rank_{rank}/") and "collectives" not in p for p in paths)
        assert st["summary"]["world_size"] == 2 and set(st["summary"]["ranks"]) == {"0", "1"}
        assert st["summary"]["rank_start"] == "fork"  # from the preloaded launcher
        roles = json.loads((ranks_run / f"jobs/real/{tracer}.tp2/roles.json").read_text())
        assert [r["ranks"] for r in roles["roles"]] == [[0], [1]]


def test_each_rank_has_its_own_profiler_trace(ranks_run: Path) -> None:
    job = ranks_run / "jobs/real/torch_profiler.tp2"
    for rank in (0, 1):
        with gzip.open(job / f"rank_{rank}/trace.json.gz") as fh:
            trace = json.load(fh)
        names = {e.get("name", "") for e in trace["traceEvents"]}
        assert any("allreduce" in n or "all_reduce" in n for n in names), sorted(names)[:20]


def test_the_ranks_profiler_traces_go_through_the_multi_rank_timeline(
    ranks_run: Path, tmp_path: Path
) -> None:
    """The job dir as one argument: both ranks' traces, in rank order, and the cross-rank
    figures (their all-reduces matched across the two ranks)."""
    job = ranks_run / "jobs/real/torch_profiler.tp2"
    out = tmp_path / "timeline"
    done = kt("timeline", str(job), "-o", str(out), "--no-inferscope", "--no-ops", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["traces"]) == 2
    multi = summary["multi_rank"]
    assert [r["rank"] for r in multi["ranks"]] == [0, 1]
    assert multi["matched_collectives"] > 0 and multi["unmatched_calls"] == 0


def _collectives(rank_dir: Path) -> list[tuple[Any, ...]]:
    rows = _rows(rank_dir / "collectives.jsonl")
    return [(r["kind"], r["group"], r["group_size"], r["shape"], r["bytes_per_rank"]) for r in rows]


@pytest.mark.parametrize("model", ["real", "moe"])
def test_real_tp_ranks_match_the_fake_simulation(ranks_run: Path, model: str) -> None:
    """Every signature the TP 2 simulation shows, each real rank runs; the real ranks add
    only value reads and the collectives' autograd wrapper; GEMMs and collectives equal."""
    from kerneltracer.core.ranks import read_rank_job

    real_name, fake_name = ("real", "fake") if model == "real" else ("moe-real", "moe-fake")
    fake_dir = ranks_run / f"jobs/{fake_name}/torch_dispatch.tp2"
    real_dir = ranks_run / f"jobs/{real_name}/torch_dispatch.tp2"
    fake = _signatures(fake_dir / "rank_0")
    gemms = {s for s in fake if s[0] in GEMMS}
    assert gemms, "the simulation shows no GEMM"
    fake_job = read_rank_job(fake_dir)
    assert fake_job is not None
    for rank in (0, 1):
        real = _signatures(real_dir / f"rank_{rank}")
        assert fake <= real, sorted(map(str, fake - real))[:10]
        assert {op for op, _ in real - fake} <= REAL_ONLY_OPS, sorted(map(str, real - fake))
        assert {s for s in real if s[0] in GEMMS} == gemms
        assert fake_job.source_of(rank) == 0, fake_job.stands_for  # rank 0 stands for both
        real_coll = _collectives(real_dir / f"rank_{rank}")
        assert real_coll == _collectives(fake_dir / "rank_0") and real_coll


def test_real_ep_ranks_differ_from_the_simulation_only_by_routing(ranks_run: Path) -> None:
    """At EP 2 each simulated rank is its own role. Real routing is not balanced: the token
    counts (the GEMMs' and all-to-alls' first dimension) differ, what runs does not, and the
    bytes all ranks exchange add up to the balanced assumption's."""
    fake_dir = ranks_run / "jobs/moe-fake/torch_dispatch.ep2"
    real_dir = ranks_run / "jobs/moe-real/torch_dispatch.ep2"
    totals: dict[str, list[int]] = {"real": [], "fake": []}
    for rank in (0, 1):
        real, fake = _signatures(real_dir / f"rank_{rank}"), _signatures(fake_dir / f"rank_{rank}")
        assert {op for op, _ in fake} - {op for op, _ in real} == FAKE_ONLY_OPS
        assert {op for op, _ in real} - {op for op, _ in fake} <= REAL_ONLY_OPS
        real_coll, fake_coll = (
            _collectives(real_dir / f"rank_{rank}"),
            _collectives(fake_dir / f"rank_{rank}"),
        )
        assert [c[:3] for c in real_coll] == [c[:3] for c in fake_coll] and real_coll
        totals["real"] += [c[4] for c in real_coll]
        totals["fake"] += [c[4] for c in fake_coll]
        assumed = [r for r in _rows(fake_dir / f"rank_{rank}/collectives.jsonl") if r["assumption"]]
        assert assumed and not any(
            r["assumption"] for r in _rows(real_dir / f"rank_{rank}/collectives.jsonl")
        )
    assert sum(totals["real"]) == sum(totals["fake"])


def test_the_rank_reader_treats_real_ranks_as_simulated_ones(ranks_run: Path) -> None:
    from kerneltracer.core.ranks import FROM_SPEC, read_rank_job

    job = read_rank_job(ranks_run / "jobs/real/torch_dispatch.tp2")
    assert job is not None
    assert job.layout.tp == 2 and job.layout_source == FROM_SPEC
    assert sorted(job.ranks) == [0, 1] and job.missing_ranks == []
    assert all(not data.bad and not data.missing for data in job.ranks.values())


def test_the_ranks_page_shows_real_tp_peers_as_the_simulations_one_role(ranks_run: Path) -> None:
    """The simulation's rank 0 stands for both TP peers; the real peers run that program (the
    values they read differ): one role each, layouts from the job spec, nothing said missing
    for the profiler's ranks (they write collectives, no dispatch signatures)."""
    from kerneltracer.core.ranks import FROM_SPEC
    from kerneltracer.report.ranks_view import build_ranks_view

    view = build_ranks_view(ranks_run)
    jobs = {j.key: j for j in view.jobs}
    for key in ("real/torch_dispatch.tp2", "fake/torch_dispatch.tp2", "real/torch_profiler.tp2"):
        job = jobs[key]
        assert [r.role.ranks for r in job.roles] == [(0, 1)], (key, job.roles)
        assert job.layout_source == FROM_SPEC and job.missing_files == [], key


def test_a_rerun_bypasses_ok_rank_jobs_and_reruns_a_damaged_one(ranks_run: Path) -> None:
    """The status lists every rank's outputs: all there, the job is bypassed; one rank's file
    gone, that job alone runs again (and writes it back)."""
    from tests.conftest import clean_env

    damaged = ranks_run / "jobs/real/torch_dispatch.tp2/rank_1/dispatch_ops.jsonl"
    damaged.unlink()
    tmp = ranks_run.parent
    proc = kt("run", str(tmp / "config.yaml"), "-j", "2", env=clean_env(tmp), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "1 to run" in out and "start  real/torch_dispatch.tp2" in out, out
    assert sum(line.startswith("start ") for line in out.splitlines()) == 1, out
    assert damaged.is_file()
    assert status_of(ranks_run, "real/torch_dispatch.tp2")["status"] == "ok"


def test_ranks_started_as_fresh_interpreters_trace_what_forked_ones_do(
    ranks_run: Path, tmp_path: Path, tiny_moe: Path
) -> None:
    """KT_RANK_START=spawn: the same job, each rank a new interpreter, the same signatures."""
    from tests.conftest import clean_env

    env = clean_env(tmp_path)
    env["KT_RANK_START"] = "spawn"
    models = [{"path": str(tiny_moe), "name": "m", "parallel": {"tp": 2}}]
    run_dir = _run(tmp_path, models, env, tracers=["torch_dispatch"])
    st = status_of(run_dir, "m/torch_dispatch.tp2")
    assert st["status"] == "ok" and st["summary"]["rank_start"] == "spawn", st
    forked = ranks_run / "jobs/moe-real/torch_dispatch.tp2"
    for rank in (0, 1):
        spawned = run_dir / f"jobs/m/torch_dispatch.tp2/rank_{rank}"
        assert _signatures(spawned) == _signatures(forked / f"rank_{rank}")


# --- faults ---------------------------------------------------------------------------------


def _fault_run(
    tmp: Path, tiny_models: dict[str, Path], fault: str, **defaults: Any
) -> tuple[Path, dict[str, Any], float]:
    from tests.conftest import clean_env

    env = clean_env(tmp)
    env["KT_RANK_FAULT"] = fault
    models = [{"path": str(tiny_models["tiny-llama"]), "name": "m", "parallel": {"tp": 2}}]
    t0 = time.monotonic()
    run_dir = _run(tmp, models, env, tracers=["torch_dispatch"], **defaults)
    took = time.monotonic() - t0
    # Nothing of the job is left: launcher, ranks, servers (counted by the run dir).
    assert processes_under(run_dir) == [], processes_under(run_dir)
    return run_dir, status_of(run_dir, "m/torch_dispatch.tp2"), took


def test_a_rank_that_raises_at_load_fails_the_job_naming_it(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    _, st, took = _fault_run(tmp_path, tiny_models, "1:load")
    assert st["status"] == "failed", st
    assert st["reason"].startswith("rank 1 failed first: failed: RuntimeError: rank 1: fault"), st
    assert st["error"]["rank"] == 1
    assert "rank 0:" in st["reason"]
    assert took < TIMEOUT_S + 30


def test_a_rank_killed_mid_forward_while_its_peer_waits_in_all_reduce(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    run_dir, st, took = _fault_run(tmp_path, tiny_models, "1:forward")
    assert st["status"] == "failed", st
    # The ranks were forked from the launcher (torch imported before the rank's environment
    # armed the recorder): the recorder still records, read when the process group is made.
    worker_log = (run_dir / "jobs/m/torch_dispatch.tp2/worker.log").read_text()
    assert "ranks start by fork" in worker_log, worker_log[-2000:]
    assert st["error"]["rank"] == 1
    assert "rank 1 failed first: killed by SIGKILL" in st["reason"], st["reason"]
    assert "during trace" in st["reason"], st["reason"]
    # Rank 0 was in the collective its dead peer never joined: its stack says so when the
    # launcher asked first, else its own error (gloo's, the peer's connection closed) does.
    assert "all_reduce" in st["error"]["ranks"]["0"], st["error"]
    assert "rank 0:" in st["reason"] and "all_reduce" in st["reason"], st["reason"]
    # Its flight recorder (torch 2.13 records gloo's collectives) names the collective: the
    # tp group's all-reduce of the dead rank's layer, its sequence id and sizes.
    recorded = st["error"]["flight_recorder"]
    assert set(recorded) == {"0"}, recorded  # rank 1 was SIGKILLed: no dump of its own
    fr = recorded["0"]
    assert fr["name"] == "gloo:all_reduce" and fr["axis"] == "tp", fr
    assert fr["group_ranks"] == [0, 1] and fr["seq"] > 1 and fr["input_sizes"], fr
    assert f"gloo:all_reduce #{fr['seq']} on tp" in st["reason"], st["reason"]
    rank_0 = run_dir / "jobs/m/torch_dispatch.tp2/rank_0"
    assert (rank_0 / "flight_recorder.json").is_file() and (rank_0 / "fr_trace_0").is_file()
    # torch's own analyser reads the rank dirs' dumps (the job dir as its trace dir) and
    # blames the rank with no dump: rank 1.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.flight_recorder.fr_trace",
            str(rank_0.parent),
            "-p",
            "fr_trace_",
            "--allow-incomplete-ranks",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "missed FR dumps from ranks ({1})" in done.stdout + done.stderr, done.stderr[-2000:]
    assert took < TIMEOUT_S + 30


def test_a_hung_rank_ends_at_the_jobs_timeout(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    """Rank 1 never ends its load; rank 0 waits for it in the first collective of its
    warmup: the launcher's deadline says so before the supervisor's would."""
    _, st, took = _fault_run(tmp_path, tiny_models, "1:hang", timeout_s=20)
    assert st["status"] == "timeout", st
    assert st["reason"].startswith("no result after 20 s: rank 0: in phase warmup, waiting in")
    assert "rank 1: in phase load" in st["reason"], st["reason"]
    # Rank 0's flight recorder, dumped when the launcher asked: blocked in its warmup's first
    # all-reduce on the tp group; rank 1 never issued one.
    fr = st["error"]["flight_recorder"]["0"]
    assert fr["state"] == "waiting in" and fr["name"] == "gloo:all_reduce", fr
    assert "rank 0: in phase warmup, waiting in" in st["reason"]
    assert "waiting in gloo:all_reduce #" in st["reason"], st["reason"]
    assert took < 20 + 40  # the timeout, the run's start and a kill grace


def test_a_rank_over_the_memory_ceiling_is_named(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """The ceiling holds for the whole tree (launcher and ranks, ~1.1 GB here); rank 1 takes
    1 GiB more: the job ends oom, the reason naming rank 1 as the process with the most."""
    _, st, took = _fault_run(tmp_path, tiny_models, "1:memory", max_rss_gb=1.6)
    assert st["status"] == "oom", st
    assert "exceeded max_rss_gb 1.6" in st["reason"] and "the most: rank 1 (pid" in st["reason"]
    assert took < TIMEOUT_S + 30


def test_sigkill_of_the_orchestrator_leaves_no_rank(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    from tests.conftest import clean_env

    env = clean_env(tmp_path)
    env["KT_RANK_FAULT"] = "1:hang"
    models = [{"path": str(tiny_models["tiny-llama"]), "name": "m", "parallel": {"tp": 2}}]
    cfg = write_config(
        tmp_path / "config.yaml", models, defaults={**DEFAULTS, "tracers": ["torch_dispatch"]}
    )
    run_dir = tmp_path / "run"
    orchestrator = kt_popen("run", str(cfg), "--kill-grace", "2", env=env)
    phases = run_dir / "jobs/m/torch_dispatch.tp2/rank_1/phases.log"
    try:
        assert wait_until(lambda: "[load] Start" in _text(phases), timeout=120), "no rank loads"
        ranks = [p for p in processes_under(run_dir) if p.name().startswith("kt-rank-")]
        assert len(ranks) == 2, ranks
        orchestrator.send_signal(signal.SIGKILL)
        orchestrator.wait(timeout=60)
    finally:
        if orchestrator.poll() is None:
            orchestrator.kill()
    assert wait_until(lambda: processes_under(run_dir) == [], timeout=30), processes_under(run_dir)
    # The worker saw its orchestrator die (parent-death signal) and said so before it went.
    st = status_of(run_dir, "m/torch_dispatch.tp2")
    assert st["status"] == "interrupted" and "during ranks" in st["reason"], st


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@pytest.mark.slow
def test_torch_compile_per_rank_writes_its_own_torch_trace(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    """Each rank compiles its own shard: one graph, the all-reduces lowered into its code, and
    its own TORCH_TRACE log (named for its rank, as tlparse's multi-rank mode reads them)."""
    from tests.conftest import clean_env

    models = [{"path": str(tiny_models["tiny-llama"]), "name": "m", "parallel": {"tp": 2}}]
    run_dir = _run(tmp_path, models, clean_env(tmp_path), tracers=["torch_compile"], timeout_s=400)
    st = status_of(run_dir, "m/torch_compile.tp2")
    assert st["status"] == "ok", st.get("reason")
    assert st["summary"]["rank_start"] == "spawn"  # TORCH_TRACE is read at torch's import
    job = run_dir / "jobs/m/torch_compile.tp2"
    for rank in (0, 1):
        logs = list((job / f"rank_{rank}/torch_trace").glob("*.log"))
        assert [p.name.startswith(f"dedicated_log_torch_trace_rank_{rank}_") for p in logs] == [
            True
        ], logs
        summary = json.loads((job / f"rank_{rank}/compile_summary.json").read_text())
        assert summary["graphs"] >= 1 and summary["graph_break_count"] == 0, summary
        code = "".join(p.read_text() for p in (job / f"rank_{rank}/inductor_code").glob("*.py"))
        assert "all_reduce" in code
    assert not (job / "torch_trace").exists() or not any((job / "torch_trace").iterdir())
