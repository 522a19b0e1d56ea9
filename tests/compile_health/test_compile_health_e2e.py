"""Compile health through the real CLI: a model written to break the graph three ways,
traced by the torch_compile tracer with the recompile probe; the fleet table, the page,
and the compile level of `diff` between runs that differ in one option (dynamic).

Cold inductor compiles cost 20-90 s on a shared CPU: one run, one rerun of one job."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.compile.conftest import make_compile_model
from tests.conftest import clean_env
from tests.helpers import kt, status_of

# The shared run holds three cold compiles and one rerun: minutes on a busy 2-core CPU.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1200)]

PROBE = {"recompile_probe": True, "steps": 0}
BREAKS = "breaks/torch_compile"


def _config(path: Path, models: Path, out: Path, dynamic: bool | None) -> Path:
    breaks = str(make_compile_model(models, "break_all"))
    entries: list[dict[str, Any]] = [
        {
            "path": breaks,
            "name": "breaks",
            "trust_remote_code": True,
            "tracer_options": {"torch_compile": {**PROBE, "dynamic": dynamic}},
        },
        {
            "path": breaks,
            "name": "breaks-eager",
            "trust_remote_code": True,
            "tracer_options": {"torch_compile": {**PROBE, "backend": "eager"}},
        },
        {"path": str(make_compile_model(models, "opaque_op")), "trust_remote_code": True},
    ]
    cfg = {
        "output_dir": str(out),
        # Batch 2, probe 3: a dimension of size 1 is always specialised, even under
        # dynamic=True, so batch 1 -> 2 would recompile either way.
        "defaults": {"tracers": ["torch_compile"], "seq_len": 8, "batch_size": 2},
        "models": entries,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compile-health")
    env = clean_env(root)
    models = root / "models"
    a = root / "run-a"
    proc = kt("run", str(_config(root / "a.yaml", models, a, None)), "-j", "2", env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # the opaque model fails
    # B: a copy of A with one option changed for one model, and only that model run again
    # (a failed job would always run again, and its times with it).
    same, b = root / "run-a-copy", root / "run-b"
    shutil.copytree(a, same)
    shutil.copytree(a, b)
    cfg_b = _config(root / "b.yaml", models, b, True)
    proc = kt("run", str(cfg_b), "--models", "breaks", env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "1 jobs in" in proc.stdout, proc.stdout  # only the changed job ran again
    return {"a": a, "same": same, "b": b, "root": root}


def _table(run_dir: Path) -> dict[str, dict[str, str]]:
    with open(run_dir / "report/compile_health/compile_health.csv") as fh:
        return {row["job"]: row for row in csv.DictReader(fh)}


def test_fleet_shows_breaks_with_registry_id_and_user_frame(runs: dict[str, Path]) -> None:
    a = runs["a"]
    assert status_of(a, BREAKS)["status"] == "ok"
    proc = kt("compile-health", str(a), env=clean_env(runs["root"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = _table(a)
    assert set(table) == {BREAKS, "breaks-eager/torch_compile", "compile-opaque_op/torch_compile"}
    row = table[BREAKS]
    assert row["compile_status"] == "ok"
    assert row["break_keys"] == "GB0059;GB0124;GB0170"
    assert int(row["distinct_breaks"]) == 3 and int(row["graphs"]) >= 4
    assert int(row["kernels_cpp"]) > 0 and float(row["codegen_s"]) > 0
    with open(a / "report/compile_health/compile_breaks.csv") as fh:
        breaks = {(r["model"], r["gb_id"]): r for r in csv.DictReader(fh)}
    source = "modeling_compile_fixture.py"
    expect = {
        "GB0170": "if hidden.sum() > 0:",
        "GB0059": 'print("compile fixture: break_all")',
        "GB0124": "scale = hidden.abs().mean().item()",
    }
    for gb_id, code in expect.items():
        b = breaks[("breaks", gb_id)]
        assert source in b["frame"] and b["code"] == code, b
    # The eager backend breaks at the same places: the break is Dynamo's, not inductor's.
    assert table["breaks-eager/torch_compile"]["break_keys"] == row["break_keys"]
    assert int(table["breaks-eager/torch_compile"]["kernels_cpp"]) == 0
    failed = table["compile-opaque_op/torch_compile"]
    assert failed["compile_status"] == "failed" and failed["fail_type"]
    assert "3 compile job(s)" in proc.stdout and "GB0170" in proc.stdout


def test_probe_recompiles_with_its_reason(runs: dict[str, Path]) -> None:
    a = runs["a"]
    kt("compile-health", str(a), env=clean_env(runs["root"]))
    with open(a / "report/compile_health/compile_recompiles.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["model"] == "breaks"]
    assert rows, "the probe step did not recompile"
    first = next(r for r in rows if r["compile_id"] == "[0/1]")
    assert "input_ids" in first["reason"] and "size mismatch at index 0" in first["reason"]
    assert first["reason"].endswith("expected 2, actual 3")  # batch 2 -> probe batch 3
    summary = json.loads((a / "jobs" / BREAKS / "compile_summary.json").read_text())
    assert summary["probe"]["batch_size"] == 3 and summary["backend"] == "inductor"


def test_report_has_the_compile_health_page(runs: dict[str, Path]) -> None:
    a = runs["a"]
    proc = kt("report", str(a), env=clean_env(runs["root"]))
    assert proc.returncode == 0, proc.stderr
    page = (a / "report/compile_health.html").read_text()
    assert "GB0170" in page and "Data-dependent branching" in page
    assert "compile_health/compile_health.parquet" in page
    assert (a / "report/compile_health/compile_health.parquet").is_file()


def test_diff_of_identical_runs_is_empty(runs: dict[str, Path]) -> None:
    out = runs["root"] / "diff-same"
    proc = kt("diff", str(runs["a"]), str(runs["same"]), "-o", str(out), "--fail-on-change")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "compile_diff.json").read_text())
    assert doc["jobs_compared"] == 3 and doc["jobs"] == []


def test_diff_names_the_changed_model_and_fields(runs: dict[str, Path]) -> None:
    out = runs["root"] / "diff-ab"
    proc = kt("diff", str(runs["a"]), str(runs["b"]), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "compile_diff.json").read_text())
    assert [j["job"] for j in doc["jobs"]] == [BREAKS]
    job = doc["jobs"][0]
    changed = set(job["changed_fields"])
    # dynamic=True: shapes symbolic from the start, so the probe's batch size no longer
    # recompiles, and dynamic symbols appear in the first compile.
    assert {"recompiles", "recompile_reasons", "dynamic_symbols"} <= changed
    counts = {c["field"]: (c["before"], c["after"]) for c in job["counts"]}
    assert counts["recompiles"][0] > 0 and counts["recompiles"][1] == 0
    assert job["recompile_reasons_removed"] and not job["recompile_reasons_added"]
    assert not job["breaks_added"] and not job["breaks_removed"]  # same code, same breaks
    assert [o["field"] for o in job["options"]] == ["dynamic"]
    assert "compile breaks:" in proc.stdout and "recompiles" in proc.stdout
    assert "− recompile" in (out / "compile_diff.html").read_text()
