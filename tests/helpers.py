"""Helpers for end-to-end tests: tiny/faulty model dirs, configs, CLI runs, process checks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import yaml

FIXTURES = Path(__file__).parent / "fixtures"
KT = [sys.executable, "-m", "kerneltracer.cli.main"]


def make_remote_code_model(out: Path, fixture: str, config: dict[str, Any]) -> Path:
    """A local model dir running the code of ``tests/fixtures/<fixture>`` (trust_remote_code).

    The fixture models share one layout: an 8-wide embedding (vocab 64) and a projection.
    """
    import numpy as np
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    for src in (FIXTURES / fixture).glob("*.py"):
        shutil.copy(src, out / src.name)
    (out / "config.json").write_text(json.dumps({**config, "vocab_size": 64, "hidden_size": 8}))
    rng = np.random.default_rng(0)
    save_file(
        {
            "embed.weight": rng.standard_normal((64, 8)).astype(np.float32),
            "proj.weight": rng.standard_normal((8, 8)).astype(np.float32),
            "proj.bias": np.zeros(8, dtype=np.float32),
        },
        str(out / "model.safetensors"),
    )
    return out


def make_faulty_model(
    root: Path, fault: str, seconds: float = 600.0, name: str | None = None
) -> Path:
    """A local model dir whose forward misbehaves (remote code, needs trust_remote_code)."""
    config = {
        "model_type": "kt_faulty",
        "architectures": ["FaultyModel"],
        "auto_map": {
            "AutoConfig": "configuration_faulty.FaultyConfig",
            "AutoModel": "modeling_faulty.FaultyModel",
        },
        "fault": fault,
        "fault_seconds": seconds,
    }
    return make_remote_code_model(root / (name or f"faulty-{fault}"), "faulty_model", config)


def write_config(path: Path, models: list[dict[str, Any]], **top: Any) -> Path:
    data: dict[str, Any] = {"output_dir": str(path.parent / "run"), "models": models}
    data.update(top)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def kt(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KT, *args], capture_output=True, text=True, timeout=timeout, env=env, **kw
    )


def kt_popen(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*KT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def status_of(run_dir: Path, key: str) -> dict[str, Any]:
    return json.loads((run_dir / "jobs" / key / "_TRACE_STATUS.json").read_text())


def processes_under(run_dir: Path) -> list[psutil.Process]:
    """Live processes started for this run: by command line or inherited TMPDIR, plus every
    process in the session of one of those (vLLM's engine renames itself with setproctitle,
    which also hides its environment)."""
    marker = str(run_dir)
    found = {}
    me = os.getpid()
    procs = [p for p in psutil.process_iter(["pid", "cmdline", "status"]) if p.pid != me]
    for proc in procs:
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
            if marker in cmd or marker in proc.environ().get("TMPDIR", ""):
                found[proc.pid] = proc
        except psutil.Error:
            continue
    sessions = sessions_of(list(found.values())) - {os.getsid(0)}
    for proc in processes_in_sessions(sessions):
        found.setdefault(proc.pid, proc)
    return list(found.values())


def sessions_of(procs: list[psutil.Process]) -> set[int]:
    sids = set()
    for proc in procs:
        with contextlib.suppress(OSError):
            sids.add(os.getsid(proc.pid))
    return sids


def processes_in_sessions(sids: set[int]) -> list[psutil.Process]:
    """Live (non-zombie) processes of these sessions: the orchestrator starts each worker
    as a session leader, so its whole tree shares the worker's pid as session id."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(OSError):
            if os.getsid(proc.pid) in sids:
                found.append(proc)
    return found


def wait_until(predicate: Any, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def pid_alive(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def job_spec(tracer: str, **fields: Any) -> Any:
    """A JobSpec of model ``m`` on the CPU for unit tests; ``fields`` override any field."""
    from kerneltracer.core.jobspec import JobSpec, ModelRef

    base: dict[str, Any] = {
        "key": f"m/{tracer}",
        "model": ModelRef(display="m", slug="m"),
        "tracer": tracer,
        "tracer_version": "1",
        "exclusive_group": None,
        "framework": "huggingface",
        "mode": "eval",
        "device": "cpu",
        "dtype": "auto",
        "batch_size": 1,
        "seq_len": 8,
        "options": {},
        "timeout_s": 60.0,
        "max_rss_gb": None,
    }
    return JobSpec(**{**base, **fields})
