"""Preloaded workers (issue 30): light jobs are forked from a server that imported the
framework once, with the isolation of a spawned worker. The fault tests in this package run
with preloading on (the default); these tests check what is particular to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import job_spec, kt, make_faulty_model, status_of, write_config

pytestmark = pytest.mark.e2e

TRACERS = ["torch_dispatch", "torch_profiler"]


@pytest.mark.parametrize(
    ("flag", "main"),
    [
        ("--preload", "kerneltracer.worker.forkserver"),
        ("--no-preload", "kerneltracer.worker.__main__"),
    ],
)
def test_forked_jobs_share_no_python_state(
    tmp_path: Path, kt_env: dict[str, str], flag: str, main: str
) -> None:
    model = make_faulty_model(tmp_path / "models", "state")
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True}],
        defaults={"tracers": TRACERS},
    )
    proc = kt("run", str(cfg), flag, env=kt_env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "run"
    for tracer in TRACERS:
        job_dir = run_dir / "jobs" / "faulty-state" / tracer
        assert status_of(run_dir, f"faulty-state/{tracer}")["status"] == "ok"
        seen, started_by = (job_dir / "state.txt").read_text().split()
        # The first job marked transformers in its process; the second must not see it.
        assert seen == "None"
        assert started_by == main
    preloaded = "huggingface workers start preloaded" in proc.stderr
    assert preloaded == (flag == "--preload"), proc.stderr


def test_config_turns_preloading_off(tmp_path: Path, kt_env: dict[str, str]) -> None:
    """``frameworks: {huggingface: {preload: false}}`` spawns every worker of it."""
    model = make_faulty_model(tmp_path / "models", "state")
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True}],
        defaults={"tracers": ["torch_dispatch"]},
        frameworks={"huggingface": {"preload": False}},
    )
    proc = kt("run", str(cfg), env=kt_env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    job_dir = tmp_path / "run" / "jobs" / "faulty-state" / "torch_dispatch"
    assert (job_dir / "state.txt").read_text().split()[1] == "kerneltracer.worker.__main__"
    assert "preloaded" not in proc.stderr


@pytest.mark.parametrize(
    ("tracer", "forked"),
    [
        ("torch_dispatch", True),
        ("print_fx", True),
        ("torch_compile", False),
        ("vllm_profiler", False),
    ],
)
def test_tracers_that_need_a_fresh_interpreter_are_never_forked(tracer: str, forked: bool) -> None:
    from kerneltracer.orchestrator.preload import preloadable

    job = job_spec(tracer)
    assert preloadable(job) == forked


def test_a_dead_server_falls_back_to_spawning(tmp_path: Path, kt_env: dict[str, str]) -> None:
    """The first job kills its worker server: it ends interrupted saying so, the run says
    its later jobs start fresh interpreters, and they do (and finish ok)."""
    model = make_faulty_model(tmp_path / "models", "kill_server")
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True}],
        defaults={"tracers": TRACERS},
    )
    proc = kt("run", str(cfg), "--kill-grace", "2", env=kt_env, timeout=300)
    run_dir = tmp_path / "run"
    first = status_of(run_dir, "faulty-kill_server/torch_dispatch")
    assert first["status"] == "interrupted", first
    assert "huggingface worker server stopped" in first["reason"]
    assert status_of(run_dir, "faulty-kill_server/torch_profiler")["status"] == "ok"
    assert "its jobs start fresh interpreters from now on" in proc.stderr


def test_sigkill_of_the_run_leaves_no_server_and_no_worker(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    """The server carries the run dir on its command line, so this sees it too: after the
    orchestrator's SIGKILL, the server (parent-death signal) and its forked worker go."""
    import signal

    from tests.helpers import kt_popen, processes_under, wait_until

    model = make_faulty_model(tmp_path / "models", "slow", seconds=600, name="slow")
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(model), "trust_remote_code": True}],
        defaults={"tracers": ["torch_dispatch"]},
    )
    run_dir = tmp_path / "run"
    orchestrator = kt_popen("run", str(cfg), "--kill-grace", "2", env=kt_env)
    started = run_dir / "jobs/slow/torch_dispatch/slow.started"
    try:
        assert wait_until(started.exists, timeout=120), "the slow job never started"
        # A forked worker keeps its server's command line; the server is the run's child.
        forked = [p for p in processes_under(run_dir) if "forkserver" in " ".join(p.cmdline())]
        servers = [p for p in forked if p.ppid() == orchestrator.pid]
        assert len(servers) == 1, "the job did not start from a preloaded server"
        assert [p.ppid() for p in forked if p not in servers] == [servers[0].pid]
        orchestrator.send_signal(signal.SIGKILL)
        orchestrator.wait(timeout=60)
    finally:
        if orchestrator.poll() is None:
            orchestrator.kill()
    assert wait_until(lambda: processes_under(run_dir) == [], timeout=30), processes_under(run_dir)
    st = status_of(run_dir, "slow/torch_dispatch")
    assert st["status"] == "interrupted", st


def test_the_server_preloads_each_model_type_once(tmp_path: Path) -> None:
    """Hints come from each model's config.json; compile jobs (spawned) add none."""
    from kerneltracer.core.jobspec import ModelRef
    from kerneltracer.orchestrator.preload import Preloader

    models = {}
    for name, model_type in (("a", "llama"), ("b", "gpt2"), ("c", "llama")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(f'{{"model_type": "{model_type}"}}')
        models[name] = ModelRef(display=name, slug=name, local_dir=str(tmp_path / name))
    jobs = [
        job_spec(t, model=models[m], key=f"{m}/{t}")
        for m in ("a", "b", "c")
        for t in ("torch_dispatch", "print_fx")
    ]
    jobs.append(job_spec("torch_compile", model=models["b"], key="b/torch_compile"))
    preloader = Preloader(tmp_path, {}, {})
    preloader.plan(jobs)
    assert preloader.hints == {"huggingface": ["llama", "gpt2"]}
    # What the server imports besides: the forked tracers' own machinery.
    assert preloader.tracers == {"huggingface": ["torch_dispatch", "print_fx"]}


_PRELOAD_PROBE = """
import sys
from kerneltracer.worker.forkserver import _preload
reply = _preload("huggingface", ["llama"], ["torch_dispatch", "print_aten"])
import transformers.conversion_mapping as conversions
from kerneltracer.tracers.registry import TRACERS
print(reply["op"], reply["failed"])
print("kerneltracer.worker.tracers._dispatch_recorder" in sys.modules)
print("torch._functorch.aot_autograd" in sys.modules)
print("torch_dispatch" in TRACERS._objects, "entries" in vars(TRACERS))
print(conversions._checkpoint_conversion_mapping_cache is not None)
"""


def test_the_server_preloads_what_its_tracers_and_from_pretrained_build_on_first_use() -> None:
    """What each forked job would otherwise pay again (0.1-0.3 s a job): the tracer table
    with its plug-in scan, the run's tracers and their run-time imports, and transformers'
    table of checkpoint conversions."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _PRELOAD_PROBE], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:5] == ["ready []", "True", "True", "True True", "True"]
