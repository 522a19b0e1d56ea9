"""Against the real multi-node cluster (scripts/slurm-nodes-up.sh: three slurmds, each with its
own hostname, address and /tmp, sharing one storage dir): shards on several hosts write one
run dir, a node is lost mid-array, two hosts race on one run dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.runlock import lock_held
from kerneltracer.orchestrator.shard import assign_models
from tests.conftest import clean_env
from tests.helpers import kt, make_faulty_model, wait_until, write_config
from tests.slurm.nodes import NODES, NodeCluster

pytestmark = pytest.mark.timeout(300)
WAIT_S = 180


@pytest.fixture
def shared_dir(slurm_nodes: NodeCluster, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A fresh dir on the storage every node sees (pytest's tmp_path is under /tmp, which
    each node has its own of)."""
    path = slurm_nodes.shared / f"{request.node.name}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(slurm_nodes: NodeCluster, shared_dir: Path) -> dict[str, str]:
    return slurm_nodes.env(clean_env(shared_dir), shared_dir / "hf-home")


def _tiny_copies(tiny_models: dict[str, Path], root: Path, count: int) -> list[Path]:
    """``count`` distinct local models on the shared storage, copies of the tiny ones."""
    names = sorted(tiny_models)
    out = []
    for i in range(count):
        dest = root / f"{names[i % len(names)]}-{i}"
        shutil.copytree(tiny_models[names[i % len(names)]], dest)
        out.append(dest)
    return out


def _record(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "slurm" / "submission.json").read_text())


def _live(cluster: NodeCluster, run_dir: Path) -> bool:
    record = _record(run_dir)
    ids = [record["download_job"], *(a["job_id"] for a in record["arrays"])]
    out = cluster.run("squeue", "-h", "-j", ",".join(ids), "-o", "%i")
    return out.returncode == 0 and bool(out.stdout.strip())


def _wait_done(cluster: NodeCluster, run_dir: Path) -> None:
    assert wait_until(lambda: not _live(cluster, run_dir), WAIT_S, interval=1.0), (
        f"Slurm jobs of {run_dir} still queued after {WAIT_S}s"
    )


def _shards(run_dir: Path, env: dict[str, str]) -> tuple[int, dict[int, dict[str, Any]]]:
    proc = kt("slurm", "status", str(run_dir), "--json", env=env, timeout=60)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc.returncode, {r["shard"]: r for r in rows}


def _statuses(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every job's status file, parsed (a torn one fails the parse)."""
    return {
        str(p.parent.relative_to(run_dir / "jobs")): json.loads(p.read_text())
        for p in sorted(run_dir.glob("jobs/*/*/_TRACE_STATUS.json"))
    }


def test_array_over_three_hosts_shares_one_run_dir(
    slurm_nodes: NodeCluster,
    shared_dir: Path,
    env: dict[str, str],
    tiny_models: dict[str, Path],
) -> None:
    models = _tiny_copies(tiny_models, shared_dir / "models", 6)
    config = write_config(
        shared_dir / "c.yaml",
        [{"path": str(m)} for m in models],
        defaults={"tracers": ["torch_dispatch", "print_aten"], "device": "cpu"},
        slurm={"cpus_per_task": 1},
    )
    run_dir = shared_dir / "run"
    proc = kt("slurm", "submit", str(config), "--array-size", "6", env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    _wait_done(slurm_nodes, run_dir)

    statuses = _statuses(run_dir)
    assert len(statuses) == 12 and {s["status"] for s in statuses.values()} == {"ok"}, {
        k: (s["status"], s.get("reason")) for k, s in statuses.items()
    }
    # Each job records the host that ran it; the six shards spread over all three.
    assert {s["host"] for s in statuses.values()} == set(NODES)
    rc, shards = _shards(run_dir, env)
    assert rc == 0 and sorted(shards) == [1, 2, 3, 4, 5, 6]
    for row in shards.values():
        assert row["state"] == "COMPLETED" and row["incomplete"] == [] and row["lost"] == [], row
        hosts = {
            statuses[key]["host"]
            for key in statuses
            if key.split("/")[0] in _models_of(run_dir, row["shard"])
        }
        assert hosts == {row["node"]}, row  # slurm status names the node the jobs ran on
    # Shared files of the run dir hold every shard's part, not the last writer's.
    results = json.loads((run_dir / "downloads" / "results.json").read_text())
    assert sorted(r["slug"] for r in results) == sorted(m.name for m in models)
    assert {r["host"] for r in results} <= set(NODES)
    servers = sorted(p.name for p in (run_dir / "logs").glob("worker-server.*.log"))
    assert servers == [f"worker-server.huggingface.shard-{i}-of-6.log" for i in range(1, 7)]
    # One report of the whole run.
    report = kt("report", str(run_dir), env=env, timeout=120)
    assert report.returncode == 0, report.stderr
    rows = kt("status", str(run_dir), "--json", env=env, timeout=60).stdout.splitlines()
    assert sorted(json.loads(r)["status"] for r in rows) == ["ok"] * 12
    assert (run_dir / "report" / "index.html").is_file()


def _models_of(run_dir: Path, shard: int) -> set[str]:
    manifest = json.loads((run_dir / f"run.shard-{shard}-of-6.json").read_text())
    return {j["key"].split("/")[0] for j in manifest["jobs"]}


def test_lost_node_jobs_are_recorded_and_only_they_rerun(
    slurm_nodes: NodeCluster, shared_dir: Path, env: dict[str, str]
) -> None:
    models = [
        make_faulty_model(shared_dir / "models", "slow", seconds=25, name=f"slow{i}")
        for i in range(1, 7)
    ]
    config = write_config(
        shared_dir / "c.yaml",
        [{"path": str(m), "trust_remote_code": True} for m in models],
        defaults={"tracers": ["torch_dispatch"], "device": "cpu"},
        # Slurm would requeue the lost tasks by itself (after a delay); this run wants them
        # ended, so the documented rerun (slurm resubmit) is what redoes them.
        slurm={"cpus_per_task": 1, "extra_sbatch": ["--no-requeue"]},
    )
    run_dir = shared_dir / "run"
    proc = kt("slurm", "submit", str(config), "--array-size", "6", env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    started = [run_dir / "jobs" / m.name / "torch_dispatch" / "slow.started" for m in models]
    assert wait_until(lambda: all(p.exists() for p in started), WAIT_S, interval=0.5)
    running = {m: r["node"] for m, r in _shards(run_dir, env)[1].items()}
    victim = "kt-n2"
    lost_shards = sorted(s for s, node in running.items() if node == victim)
    assert lost_shards, running
    try:
        slurm_nodes.lose(victim)
        _wait_done(slurm_nodes, run_dir)
        rc, shards = _shards(run_dir, env)
        assert rc == 1
        for shard, row in shards.items():
            if shard in lost_shards:
                assert row["state"] == "NODE_FAIL" and row["node"] == victim, row
                assert row["lost"] == row["incomplete"] and len(row["lost"]) == 1, row
                assert f"NODE_FAIL on {victim}" in row["lost_reason"], row
                assert "lost" in row["problem"], row
            else:
                assert row["state"] == "COMPLETED" and not row["lost"], row
        plain = kt("slurm", "status", str(run_dir), env=env, timeout=60)
        assert f"lost (NODE_FAIL on {victim})" in plain.stderr, plain.stderr
    finally:
        restored = slurm_nodes.restore()
        assert restored.returncode == 0, restored.stderr
    done = _statuses(run_dir)
    before = {key: s["attempt"] for key, s in done.items()}
    assert len(before) == 6 - len(lost_shards)

    proc = kt("slurm", "resubmit", str(run_dir), env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"shard(s) {', '.join(map(str, lost_shards))}" in proc.stdout, proc.stdout
    _wait_done(slurm_nodes, run_dir)
    rc, shards = _shards(run_dir, env)
    assert rc == 0 and all(not r["incomplete"] and not r["lost"] for r in shards.values())
    after = _statuses(run_dir)
    assert {s["status"] for s in after.values()} == {"ok"} and len(after) == 6
    # Nothing that had finished ran again; exactly the lost jobs did.
    assert {k: after[k]["attempt"] for k in before} == before
    assert sorted(set(after) - set(before)) == sorted(
        key for s in lost_shards for key in _keys(run_dir, s)
    )


def _keys(run_dir: Path, shard: int) -> list[str]:
    manifest = json.loads((run_dir / f"run.shard-{shard}-of-6.json").read_text())
    return [j["key"] for j in manifest["jobs"]]


def _sbatch_on(cluster: NodeCluster, node: str, log: Path, argv: list[str]) -> str:
    proc = cluster.run(
        "sbatch", "--parsable", "-w", node, "-c", "1", "-o", str(log),
        "--wrap", subprocess.list2cmdline(argv),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def test_two_hosts_racing_on_one_run_dir(
    slurm_nodes: NodeCluster,
    shared_dir: Path,
    env: dict[str, str],
    tiny_models: dict[str, Path],
) -> None:
    """Shards 1/2 and 2/2 on two hosts at once, and shard 1/2 a second time from a third
    host while the first holds it: every status whole, the duplicate refused naming the
    holder's host, and no lock left held."""
    models = _tiny_copies(tiny_models, shared_dir / "models", 4)
    slow = make_faulty_model(shared_dir / "models", "slow", seconds=12, name="slow")
    entries: list[dict[str, Any]] = [{"path": str(m)} for m in models]
    entries.append({"path": str(slow), "trust_remote_code": True})
    config = write_config(
        shared_dir / "c.yaml", entries, defaults={"tracers": ["torch_dispatch"], "device": "cpu"}
    )
    run_dir = shared_dir / "run"
    slow_shard = assign_models([p.name for p in [*models, slow]], 2)["slow"]
    other = 3 - slow_shard
    kt_run = [*_kt_argv(), "run", str(config), "--output-dir", str(run_dir)]
    logs = shared_dir / "logs"
    logs.mkdir()
    cluster_env = {**env}
    jobs = [
        _sbatch_on(slurm_nodes, "kt-n1", logs / "a.out", [*kt_run, "--shard", f"{slow_shard}/2"]),
        _sbatch_on(slurm_nodes, "kt-n2", logs / "b.out", [*kt_run, "--shard", f"{other}/2"]),
    ]
    marker = run_dir / "jobs" / "slow" / "torch_dispatch" / "slow.started"
    assert wait_until(marker.exists, WAIT_S, interval=0.2), "the slow job never started"
    dup = _sbatch_on(
        slurm_nodes, "kt-n3", logs / "dup.out", [*kt_run, "--shard", f"{slow_shard}/2"]
    )
    ids = [*jobs, dup]
    assert wait_until(
        lambda: not slurm_nodes.run("squeue", "-h", "-j", ",".join(ids), "-o", "%i").stdout.strip(),
        WAIT_S,
        interval=1.0,
    )
    refused = (logs / "dup.out").read_text()
    assert "is in use by another kerneltracer" in refused and "on kt-n1" in refused, refused

    statuses = _statuses(run_dir)
    assert len(statuses) == 5 and {s["status"] for s in statuses.values()} == {"ok"}
    assert statuses["slow/torch_dispatch"]["host"] == "kt-n1"
    assert {statuses[f"{m.name}/torch_dispatch"]["host"] for m in models} <= {"kt-n1", "kt-n2"}
    manifests = [json.loads(p.read_text()) for p in sorted(run_dir.glob("run.shard-*.json"))]
    assert [m["shard"] for m in manifests] == ["1/2", "2/2"]
    assert all(m["finished_at"] for m in manifests)
    locks = sorted(run_dir.glob(".kerneltracer*.lock"))
    assert locks and [lock_held(p) for p in locks] == [False] * len(locks)
    summary = kt("status", str(run_dir), "--json", env=cluster_env, timeout=60)
    assert summary.returncode == 0, summary.stderr


def _kt_argv() -> list[str]:
    from kerneltracer.slurm.submit import kerneltracer_argv

    return list(kerneltracer_argv())


def test_cluster_script_starts_and_leaves_nothing_behind(slurm_nodes: NodeCluster) -> None:
    """A second cluster under other names: up, one job per node, down; then no namespace,
    daemon, mount or /etc/netns entry of it is left, and the session's cluster is untouched.
    A namespace of its names that it did not make stops it before it changes anything."""
    home = Path(f"/var/lib/kerneltracer/slurm-nodes-test-{uuid.uuid4().hex[:6]}")
    prefix = f"ktt{uuid.uuid4().hex[:4]}-"
    script_env = {**os.environ, "KT_SLURM_NODES_HOME": str(home), "KT_SLURM_NODES_PREFIX": prefix}
    try:
        up = subprocess.run(
            ["bash", str(REPO_SCRIPTS / "slurm-nodes-up.sh")],
            capture_output=True, text=True, timeout=120, env=script_env,
        )  # fmt: skip
        assert up.returncode == 0, up.stderr
        print(up.stdout.splitlines()[0])  # the start time, for the log
        other = NodeCluster(home)
        job = other.run("srun", "-N", "3", "hostname")
        assert sorted(job.stdout.split()) == list(NODES), job
    finally:
        down = subprocess.run(
            ["bash", str(REPO_SCRIPTS / "slurm-nodes-down.sh")],
            capture_output=True, text=True, timeout=120, env=script_env,
        )  # fmt: skip
    assert down.returncode == 0, down.stderr
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in netns
    assert not list(Path("/etc/netns").glob(f"{prefix}*"))
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc_dir / "cmdline").read_bytes().decode(errors="replace")
            mounts = (proc_dir / "mountinfo").read_text()
        except OSError:
            continue
        assert str(home) not in cmdline, (proc_dir.name, cmdline)
        assert str(home) not in mounts, proc_dir.name
    states = slurm_nodes.node_states()
    assert all(states.get(n) in ("idle", "mixed", "allocated") for n in NODES), states

    # A namespace of its names that it did not make: refused, and left alone.
    taken = f"ktr{uuid.uuid4().hex[:4]}-"
    subprocess.run(["ip", "netns", "add", f"{taken}ctl"], check=True)
    try:
        refused = subprocess.run(
            ["bash", str(REPO_SCRIPTS / "slurm-nodes-up.sh")],
            capture_output=True, text=True, timeout=120,
            env={**script_env, "KT_SLURM_NODES_PREFIX": taken},
        )  # fmt: skip
        assert refused.returncode == 1
        assert f"network namespace {taken}ctl exists and is not this script's" in refused.stderr
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert f"{taken}ctl" in listed and f"{taken}hub" not in listed
    finally:
        subprocess.run(["ip", "netns", "del", f"{taken}ctl"], check=False)
        shutil.rmtree(home, ignore_errors=True)


REPO_SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
