"""A worker killed (job timeout) while inductor compiles leaves no compiler process behind."""

from __future__ import annotations

import threading
from pathlib import Path

import psutil
import pytest

from tests.conftest import clean_env
from tests.helpers import kt, processes_under, status_of, wait_until, write_config

pytestmark = pytest.mark.e2e


def test_timeout_during_inductor_compile_leaves_no_compiler_process(
    tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(tiny_models["tiny-llama"]), "mode": "train"}],
        # Loading, warm-up and Dynamo take ~10 s; the cold fw+bw inductor compile ~40 s more.
        defaults={"tracers": ["torch_compile"], "seq_len": 16, "timeout_s": 22},
    )
    run_dir = tmp_path / "run"
    env = clean_env(tmp_path)
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "2"  # inductor starts a pool of compile workers
    seen: set[str] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for proc in processes_under(run_dir):
                try:
                    seen.add(" ".join(proc.cmdline()))
                except psutil.Error:
                    continue
            stop.wait(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        proc = kt("run", str(cfg), env=env, timeout=300)
    finally:
        stop.set()
        watcher.join()
    st = status_of(run_dir, "tiny-llama/torch_compile.train")
    assert st["status"] == "timeout", (st, proc.stdout, proc.stderr)
    # The kill came while inductor was compiling: compiler processes (inductor's compile
    # workers, g++/cc1plus) were running beside the worker.
    compilers = {cmd for cmd in seen if "kerneltracer.worker" not in cmd}
    assert compilers, seen
    assert wait_until(lambda: processes_under(run_dir) == [], timeout=30), processes_under(run_dir)
