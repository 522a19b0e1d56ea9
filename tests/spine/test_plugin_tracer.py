"""A tracer defined only in the tests (tests/fixtures/tracer_plugin, registered by its entry
point) runs in a real worker, and what it writes gets the timeline analysis and coverage by
its artefact kind: nothing after the run names it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, kt, status_of, write_config

pytestmark = pytest.mark.e2e

PLUGIN = FIXTURES / "tracer_plugin"
KEY = "tiny-llama/op_timings"


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_"))}
    env["HF_HOME"] = str(root / "hf-home")
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN), env.get("PYTHONPATH", "")])
    cfg = write_config(
        root / "config.yaml",
        [{"path": str(tiny_models["tiny-llama"])}],
        defaults={"tracers": ["op_timings"], "seq_len": 8},
    )
    run_dir = root / "run"
    listed = kt("tracers", env={**env, "COLUMNS": "400"})
    assert listed.returncode == 0 and "op_timings" in listed.stdout, listed.stderr
    assert "chrome_trace" in listed.stdout.split("op_timings", 1)[1].splitlines()[0]
    proc = kt("run", str(cfg), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Analysis and coverage run without the plugin: they know the artefacts, not the tracer.
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    proc = kt("analyze", str(run_dir), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = kt("coverage", str(run_dir), "-o", str(root / "coverage"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


def test_worker_records_the_kind_the_plugin_declares(plugin_run: Path) -> None:
    st = status_of(plugin_run / "run", KEY)
    assert st["status"] == "ok", st.get("reason")
    assert [(o["path"], o["kind"]) for o in st["outputs"]] == [
        ("timings/ops.trace.json.gz", "chrome_trace")
    ]


def test_the_plugin_trace_gets_the_timeline_analysis(plugin_run: Path) -> None:
    out = plugin_run / "run" / "jobs" / KEY / "analysis" / "timeline"
    assert json.loads((out / "_ANALYSIS.json").read_text())["state"] == "done"
    (rank,) = json.loads((out / "summary.json").read_text())["ranks"]
    assert rank["source_file"] == "ops.trace.json.gz" and rank["end_to_end_latency_us"] > 0
    assert (out / "ops.trace" / "report.html").is_file()


def test_the_plugin_trace_feeds_the_coverage(plugin_run: Path) -> None:
    summary = json.loads((plugin_run / "coverage" / "coverage_summary.json").read_text())
    assert summary["sources"] == ["op_timings"]
    assert summary["jobs_read"] == [{"model": "tiny-llama", "source": "op_timings"}]
    assert summary["ops_per_source"]["op_timings"] > 5
    assert summary["problems"] == [] and summary["top_ops_by_time"]
