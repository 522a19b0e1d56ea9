"""A real run over the three tiny models: every job ok, outputs meaningful, reruns bypass,
and a damaged status or output makes exactly that job run again."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import kt, status_of, write_config

pytestmark = pytest.mark.e2e

TRACERS = ["torch_dispatch", "torch_profiler"]


@pytest.fixture(scope="module")
def demo_run(
    tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]
) -> tuple[Path, Path]:
    import os

    root = tmp_path_factory.mktemp("demo")
    cfg = write_config(
        root / "config.yaml",
        [{"path": str(p)} for p in tiny_models.values()]
        + [{"path": str(tiny_models["tiny-llama"]), "name": "tiny-llama-train", "mode": "train"}],
        defaults={"tracers": TRACERS, "seq_len": 16},
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_"))}
    env["HF_HOME"] = str(root / "hf-home")
    proc = kt("run", str(cfg), "--jobs", "2", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cfg, root / "run"


def _keys() -> list[str]:
    models = ["tiny-llama", "tiny-gpt2", "tiny-bert"]
    return [f"{m}/{t}" for m in models for t in TRACERS] + [
        f"tiny-llama-train/{t}.train" for t in TRACERS
    ]


def test_every_job_ok_with_complete_status(demo_run: tuple[Path, Path]) -> None:
    _, run_dir = demo_run
    for key in _keys():
        st = status_of(run_dir, key)
        assert st["status"] == "ok", (key, st.get("reason"))
        assert st["schema_version"] == 1
        assert st["versions"]["torch"] and st["versions"]["transformers"]
        assert st["resolved_device"] == "cpu" and st["dtype"] == "auto"
        assert set(st["phases"]) == {"load", "warmup", "trace", "write"}
        assert st["peak_rss_bytes"] > 0 and st["exit_code"] == 0
        for out in st["outputs"]:
            assert (run_dir / "jobs" / key / out["path"]).stat().st_size == out["size"]
        log = (run_dir / "jobs" / key / "phases.log").read_text().splitlines()
        assert [line.split()[3:] for line in log] == [
            [f"[{p}]", e] for p in ("load", "warmup", "trace", "write") for e in ("Start", "End")
        ]


def test_dispatch_records_real_aten_ops(demo_run: tuple[Path, Path]) -> None:
    _, run_dir = demo_run
    rows = [
        json.loads(line)
        for line in (run_dir / "jobs/tiny-llama/torch_dispatch/dispatch_ops.jsonl").open()
    ]
    ops = {r["op"] for r in rows}
    assert {"aten.mm.default", "aten.embedding.default"} <= ops or "aten.addmm.default" in ops
    emb = next(r for r in rows if r["op"] == "aten.embedding.default")
    assert emb["inputs"][0]["shape"] == [512, 128]  # vocab × hidden of the tiny Llama
    assert emb["inputs"][1]["shape"] == [1, 16] and emb["inputs"][1]["dtype"] == "int64"
    assert emb["outputs"][0]["shape"] == [1, 16, 128]
    assert all(r["phase"] == "forward" for r in rows)
    train = [
        json.loads(line)
        for line in (
            run_dir / "jobs/tiny-llama-train/torch_dispatch.train/dispatch_ops.jsonl"
        ).open()
    ]
    assert {r["phase"] for r in train} == {"forward", "backward"}
    assert any(r["op"] == "aten.embedding_dense_backward.default" for r in train)
    summary = json.loads(
        (run_dir / "jobs/tiny-llama/torch_dispatch/dispatch_summary.json").read_text()
    )
    assert summary["total_calls"] == sum(r["count"] for r in rows)


def test_profiler_trace_and_table(demo_run: tuple[Path, Path]) -> None:
    _, run_dir = demo_run
    job = run_dir / "jobs/tiny-bert/torch_profiler"
    trace = json.loads(gzip.decompress((job / "trace.json.gz").read_bytes()))
    names = {e.get("name", "") for e in trace["traceEvents"]}
    assert any(n.startswith("ProfilerStep#") for n in names)
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"]
    assert any("Input Dims" in e.get("args", {}) for e in ops)  # record_shapes
    rows = list(csv.DictReader((job / "key_averages.csv").open()))
    assert any(r["name"] == "aten::linear" and int(r["calls"]) > 0 for r in rows)


def test_rerun_bypasses_everything(demo_run: tuple[Path, Path], kt_env: dict[str, str]) -> None:
    cfg, run_dir = demo_run
    before = {k: status_of(run_dir, k)["attempt"] for k in _keys()}
    proc = kt("run", str(cfg), env=kt_env)
    assert proc.returncode == 0
    assert "0 to run, 8 already complete" in proc.stderr
    assert {k: status_of(run_dir, k)["attempt"] for k in _keys()} == before


def test_damaged_jobs_rerun_and_only_them(
    demo_run: tuple[Path, Path], kt_env: dict[str, str]
) -> None:
    cfg, run_dir = demo_run
    jobs = run_dir / "jobs"
    truncated = jobs / "tiny-gpt2/torch_dispatch/_TRACE_STATUS.json"
    truncated.write_bytes(truncated.read_bytes()[:100])
    (jobs / "tiny-bert/torch_dispatch/_TRACE_STATUS.json").write_text("{not json")
    (jobs / "tiny-llama/torch_profiler/trace.json.gz").unlink()
    changed = jobs / "tiny-bert/torch_profiler/key_averages.csv"
    changed.write_text(changed.read_text().replace("aten::", "aten;;"))  # same size, new content
    shutil.rmtree(jobs / "tiny-gpt2/torch_profiler")
    damaged = {
        "tiny-gpt2/torch_dispatch",
        "tiny-bert/torch_dispatch",
        "tiny-llama/torch_profiler",
        "tiny-bert/torch_profiler",
        "tiny-gpt2/torch_profiler",
    }
    before = {k: status_of(run_dir, k)["attempt"] for k in _keys() if k not in damaged}
    proc = kt("run", str(cfg), env=kt_env)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(damaged)} to run, {8 - len(damaged)} already complete" in proc.stderr
    for key in damaged:
        assert status_of(run_dir, key)["status"] == "ok"
    assert {k: status_of(run_dir, k)["attempt"] for k in before} == before


def test_status_command_shows_grid(demo_run: tuple[Path, Path], kt_env: dict[str, str]) -> None:
    _, run_dir = demo_run
    proc = kt("status", str(run_dir), env=kt_env)
    assert proc.returncode == 0
    # the train variant is its own row, labelled, under the tracer's own column
    assert "tiny-llama-train" in proc.stdout and "train · prefill" in proc.stdout
    assert "8 jobs: 8 ok" in proc.stdout
    rows = [
        json.loads(line)
        for line in kt("status", str(run_dir), "--json", env=kt_env).stdout.splitlines()
    ]
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}


def test_only_and_models_filters(
    tmp_path: Path, kt_env: dict[str, str], tiny_models: dict[str, Path]
) -> None:
    cfg = write_config(tmp_path / "config.yaml", [{"path": str(p)} for p in tiny_models.values()])
    proc = kt("run", str(cfg), "--only", "torch_dispatch", "--models", "tiny-b*", env=kt_env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.parent.name + "/" + p.name for p in (tmp_path / "run/jobs").glob("*/*")) == [
        "tiny-bert/torch_dispatch"
    ]


def test_analyze_runs_every_applicable_analysis(
    demo_run: tuple[Path, Path], kt_env: dict[str, str]
) -> None:
    _, run_dir = demo_run
    proc = kt("analyze", str(run_dir), env=kt_env)
    assert proc.returncode == 0, proc.stderr
    for key in _keys():
        marker = json.loads(
            (run_dir / "jobs" / key / "analysis/records/_ANALYSIS.json").read_text()
        )
        assert marker["state"] == "done"
        summary = (run_dir / "jobs" / key / "analysis/records/phases_summary_0.csv").read_text()
        assert {line.split(",")[0] for line in summary.splitlines()[1:]} == {
            "load",
            "warmup",
            "trace",
            "write",
        }
        if "torch_profiler" in key:
            report = run_dir / "jobs" / key / "analysis/timeline/trace/report.json"
            assert report.stat().st_size > 0
    again = kt("analyze", str(run_dir), env=kt_env)
    assert again.returncode == 0
    assert "done " not in again.stderr and again.stderr.count("unchanged") == 12
