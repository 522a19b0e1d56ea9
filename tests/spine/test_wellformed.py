"""The pydantic-free checks of kerneltracer.core.wellformed agree with the models they stand
in for: each names exactly its model's fields, and what a check accepts the model accepts
unchanged (a file the check refuses is left to the model, so only this direction matters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from kerneltracer.core import wellformed as wf
from kerneltracer.core.manifest import ManifestJob, OrchestratorInfo, RunManifest
from kerneltracer.core.status import ErrorInfo, JobStatus, OutputFile, TraceStatus
from tests.report.runs import status


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (TraceStatus, wf.STATUS_FIELDS),
        (ErrorInfo, wf.ERROR_FIELDS),
        (OutputFile, wf.OUTPUT_FIELDS),
        (ManifestJob, wf.MANIFEST_JOB_FIELDS),
        (OrchestratorInfo, wf.ORCHESTRATOR_FIELDS),
    ],
)
def test_a_check_names_its_models_fields(
    model: type[BaseModel], fields: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    required, optional = fields
    info = model.model_fields
    assert set(required) == {n for n, f in info.items() if f.is_required()}
    assert set(optional) == {n for n, f in info.items() if not f.is_required()}
    assert model.model_config.get("extra") == "allow"  # the checks let extras through


def test_the_constants_are_the_status_modules() -> None:
    assert {s.value for s in JobStatus} == wf.STATUS_VALUES
    assert TraceStatus.model_fields["schema_version"].default == wf.SCHEMA_VERSION


K = "m/t"
ERROR = {"type": "E", "message": "m", "root_cause": "boom", "location": "f.py:1", "phase": None}
OUTPUT = {"path": "a.txt", "size": 1, "sha256": "0" * 64, "mtime_ns": 5, "kind": "trace"}

# (status, whether the check takes it as written)
STATUSES: list[tuple[dict[str, Any], bool]] = [
    (status(K, "m"), True),
    (status(K, "m", status="failed", error=ERROR, reason="r", exit_code=1), True),
    (status(K, "m", outputs=[OUTPUT], duration_s=3, versions={"t": None}, extra={"a": 1}), True),
    (status(K, "m", inputs=[{"name": "x"}], summary={"a": [1]}, pid=3, host="h"), True),
    # pydantic coerces these; the check leaves them to it
    (status(K, "m", duration_s="3.5"), False),
    (status(K, "m", peak_rss_bytes=3.0), False),
    (status(K, "m", pid="7"), False),
    (status(K, "m", schema_version=True), False),
    (status(K, "m", duration_s=2**60), False),
    # pydantic refuses these
    (status(K, "m", status="weird"), False),
    (status(K, "m", tracer=5), False),
    (status(K, "m", phase=None), False),
    (status(K, "m", error={"type": "E"}), False),
    (status(K, "m", outputs=[{"path": "a"}]), False),
    (status(K, "m", phases={"load": "x"}), False),
    (status(K, "m", request=[]), False),
    (status(K, "m", exit_code=1.5), False),
    ({k: v for k, v in status(K, "m").items() if k != "job_key"}, False),
]


@pytest.mark.parametrize(("raw", "taken"), STATUSES)
def test_a_status_the_check_takes_validates_unchanged(raw: dict[str, Any], taken: bool) -> None:
    assert wf.status_wellformed(raw) is taken
    if taken:
        model = TraceStatus.model_validate(raw)
        dumped = model.model_dump(mode="json")
        assert {k: dumped[k] for k in raw} == raw


def _validates(data: dict[str, Any]) -> bool:
    try:
        RunManifest.model_validate(data)
    except ValidationError:
        return False
    return True


JOB = {"key": "a/t", "model": "A", "tracer": "t", "mode": "eval", "phase": None}
MANIFESTS: list[tuple[dict[str, Any], bool]] = [
    ({"jobs": [JOB, {"key": "b/t", "x": [1]}], "orchestrator": {"pid": 1, "host": "h"}}, True),
    ({}, True),
    ({"jobs": [{**JOB, "model": 5}]}, False),
    ({"jobs": [{**JOB, "phase": 1}]}, False),
    ({"orchestrator": {"pid": "5"}}, False),
    ({"orchestrator": {"pid": True}}, False),
    ({"orchestrator": {"host": 3}}, False),
]


@pytest.mark.parametrize(("data", "taken"), MANIFESTS)
def test_a_manifest_the_check_takes_validates(data: dict[str, Any], taken: bool) -> None:
    assert wf.manifest_wellformed(data) is taken
    if taken:
        assert _validates(data)


def test_status_shows_a_status_pydantic_converts_as_converted(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kerneltracer.cli.status_cmd import collect
    from kerneltracer.cli.status_cmd import status as status_command
    from tests.report.runs import make_run

    key = "gpt2/torch_dispatch"
    run = make_run(
        tmp_path / "run", {key: status(key, "gpt2", duration_s="3.5", peak_rss_bytes=3.0)}
    )
    [row] = collect(run)
    assert (row.duration_s, row.peak_rss_bytes) == (3.5, 3)
    result = CliRunner().invoke(status_command, [str(run)])
    assert result.exit_code == 0, result.output
    assert "3.5s" in result.output
    import kerneltracer as kt

    assert kt.Run(run).jobs["duration_s"].tolist() == [3.5]
