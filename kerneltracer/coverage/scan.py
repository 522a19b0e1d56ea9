"""The jobs of a run dir, read cheaply from their status files (orjson, no pydantic).

Coverage and diff only need a handful of fields per job, and a run of 500 models x 6 tracers
has 3000 status files: full validation would dominate the scan. A status file that cannot be
read is not skipped silently: it comes back as an :class:`InputProblem`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltracer.core.artefacts import ArtefactKind, output_kinds, select
from kerneltracer.core.identity import DEFAULT_MODE, DEFAULT_PHASE, variant_of
from kerneltracer.core.identity import model_label as variant_label
from kerneltracer.core.layout import RUN
from kerneltracer.core.rundir import JobRecord, RunDir, StatusProblem
from kerneltracer.errors import RunDirError


@dataclass(frozen=True)
class InputProblem:
    """An input file that exists in principle but could not be used (missing, corrupt, ...)."""

    job_key: str  # "<model slug>/<tracer>[.mode]", the job dir under jobs/
    path: str  # relative to the run dir
    reason: str


@dataclass(frozen=True)
class JobRef:
    key: str
    model: str  # the label coverage and diff use for the model (see model_label)
    tracer: str
    status: str
    reason: str | None  # the status file's one-line reason (root cause for failures)
    job_dir: Path
    outputs: tuple[str, ...]
    # The kind each output's status entry records, parallel to outputs (None: not recorded).
    recorded_kinds: tuple[str | None, ...] = ()
    # "fake": traced from the config on fake tensors (shapes and ops; no measured time).
    weights: str = "real"
    display: str = ""  # the model's display id, the same for every variant
    mode: str = DEFAULT_MODE
    phase: str = DEFAULT_PHASE

    def output_kinds(self) -> tuple[ArtefactKind | None, ...]:
        """The kind of every output: recorded, else derived from its name."""
        return output_kinds(self.outputs, self.recorded_kinds)

    def artefact_names(self, kind: ArtefactKind) -> list[str]:
        """The outputs of ``kind``, in listed order."""
        return select(self.outputs, self.output_kinds(), (kind,))


def _model_display(raw: dict[str, Any]) -> str:
    model = raw.get("model")
    return str(model.get("display", "")) if isinstance(model, dict) else ""


def model_label(raw: dict[str, Any]) -> str:
    """The label of the model variant: the display id, plus a mode or phase that is not the
    default (``tiny-llama [train, decode]``), so every variant stays apart."""
    return variant_label(_model_display(raw), raw.get("mode"), raw.get("phase"))


def iter_job_refs(run_dir: Path) -> Iterator[JobRef | InputProblem]:
    """Every job dir under RUN_DIR/jobs, in a stable order: a JobRef, or why it is unusable."""
    run = RunDir(Path(run_dir))
    if not run.jobs_root.is_dir():
        raise RunDirError(f"{run_dir} is not a run dir (no {RUN.jobs}/ directory)")
    for key in run.job_dirs():
        yield _job_ref(run.record(key))


def _job_ref(record: JobRecord) -> JobRef | InputProblem:
    key, raw = record.key, record.raw
    rel = str(RUN.job(key).status)
    if record.read_problem == StatusProblem.MISSING:
        return InputProblem(key, rel, "no status file (job never finished)")
    if raw is None:
        return InputProblem(key, rel, "status file is corrupt or of another schema")
    try:
        listed = raw.get("outputs") or []
        outputs = tuple(str(o["path"]) for o in listed)
        kinds = tuple(None if o.get("kind") is None else str(o["kind"]) for o in listed)
        reason = raw.get("reason")
        if reason is None and isinstance(raw.get("error"), dict):
            reason = raw["error"].get("root_cause")
        return JobRef(
            key=key,
            model=model_label(raw),
            tracer=str(raw["tracer"]),
            status=str(raw["status"]),
            reason=None if reason is None else str(reason),
            job_dir=record.job_dir,
            outputs=outputs,
            recorded_kinds=kinds,
            weights="fake" if raw.get("weights") == "fake" else "real",
            display=_model_display(raw),
            mode=variant_of(raw.get("mode"), raw.get("phase")).mode,
            phase=variant_of(raw.get("mode"), raw.get("phase")).phase,
        )
    except (KeyError, TypeError, AttributeError):
        return InputProblem(key, rel, "status file lacks tracer/status/outputs fields")
