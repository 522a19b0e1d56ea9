"""The one reader of run dirs: :class:`RunDir` (manifests, job dirs) and :class:`JobRecord`.

Every command that looks at a finished or running run (status, analyze, report, coverage,
diff, slurm) reads jobs through here, so they agree on which job dirs exist and on what a
missing, truncated or foreign status file means. A record parses its status file once with
orjson (cheap: a run of thousands of jobs is read on every ``status``) and validates it
with pydantic only when a view asks for the typed :attr:`JobRecord.status`. A job's state
and the jobs the manifests plan need no pydantic for files written as we write them
(:mod:`kerneltracer.core.wellformed`): ``status`` then loads none (~0.1 s).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from kerneltracer.core import layout
from kerneltracer.core.wellformed import (
    SCHEMA_VERSION,
    manifest_data,
    manifest_paths,
    manifest_wellformed,
    status_wellformed,
)
from kerneltracer.errors import InputFileError, RunDirError
from kerneltracer.inputguard import SMALL_FILE, read_input

if TYPE_CHECKING:
    from kerneltracer.core.manifest import ManifestJob, RunManifest
    from kerneltracer.core.status import TraceStatus


class StatusProblem(StrEnum):
    """Why a job has no usable status."""

    MISSING = "missing"  # no status file: never ran, or still running
    UNREADABLE = "unreadable"  # the file exists but cannot be read (I/O, permissions)
    NOT_JSON = "not_json"  # truncated or corrupt
    OTHER_SCHEMA = "other_schema"  # not an object, or another schema_version
    INVALID = "invalid"  # this schema, but fields missing or of the wrong type

    @property
    def text(self) -> str:
        return _PROBLEM_TEXT[self]


# What a view shows for a job without a usable status: one word for every command.
PENDING = "pending"  # no status file: planned and not run yet, or still running
UNREADABLE: Final = "unreadable"  # a status file exists but cannot be used (problem_text: why)

_PROBLEM_TEXT = {
    StatusProblem.MISSING: "no status file",
    StatusProblem.UNREADABLE: "status file unreadable",
    StatusProblem.NOT_JSON: "status file is not valid JSON",
    StatusProblem.OTHER_SCHEMA: "status file is of another schema",
    StatusProblem.INVALID: "status file does not match the status schema",
}


@dataclass(frozen=True)
class PlannedJob:
    """A manifest's entry for one job (:class:`~kerneltracer.core.manifest.ManifestJob`'s
    fields): enough to show the job before it has a status file."""

    key: str
    model: str | None = None  # display id
    tracer: str | None = None
    mode: str | None = None
    phase: str | None = None

    @classmethod
    def of(cls, job: ManifestJob) -> PlannedJob:
        return cls(job.key, job.model, job.tracer, job.mode, job.phase)


@dataclass
class JobRecord:
    """One job dir as found on disk, with its status file parsed (or why it cannot be)."""

    key: str  # "<model slug>/<column>", the job dir under jobs/
    job_dir: Path
    raw: dict[str, Any] | None  # the status file's object, of this schema version
    read_problem: StatusProblem | None  # set exactly when raw is None
    detail: str = ""  # the OS error, for UNREADABLE
    planned: PlannedJob | None = None  # the manifest's entry, if a manifest planned it
    parts: layout.JobKey = field(init=False)

    def __post_init__(self) -> None:
        self.parts = layout.JobKey.parse(self.key)

    @classmethod
    def read(cls, job_dir: Path | str, key: str, planned: PlannedJob | None = None) -> JobRecord:
        path = layout.JobPaths(Path(job_dir)).status
        if not os.path.lexists(path):
            return cls(key, Path(job_dir), None, StatusProblem.MISSING, planned=planned)
        try:
            data = read_input(path, SMALL_FILE, what="status file", gzip=False)
        except InputFileError as exc:
            return cls(key, Path(job_dir), None, StatusProblem.UNREADABLE, str(exc), planned)
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError:
            return cls(key, Path(job_dir), None, StatusProblem.NOT_JSON, planned=planned)
        if not isinstance(raw, dict) or raw.get("schema_version") != SCHEMA_VERSION:
            return cls(key, Path(job_dir), None, StatusProblem.OTHER_SCHEMA, planned=planned)
        return cls(key, Path(job_dir), raw, None, planned=planned)

    @classmethod
    def known(
        cls, job_dir: Path, key: str, raw: dict[str, Any] | None, planned: PlannedJob | None
    ) -> JobRecord:
        """A record of a status already in memory (read by the planner, or just written)."""
        if raw is None:
            return cls(key, job_dir, None, StatusProblem.MISSING, planned=planned)
        return cls(key, job_dir, raw, None, planned=planned)

    @cached_property
    def status(self) -> TraceStatus | None:
        """The validated status; None when there is none or it does not validate."""
        if self.raw is None:
            return None
        # Here: pydantic (~0.1 s) only for a view that needs the model, or for a status
        # file not as we write it.
        from pydantic import ValidationError

        from kerneltracer.core.status import TraceStatus

        try:
            return TraceStatus.model_validate(self.raw)
        except ValidationError:
            return None

    @property
    def values(self) -> dict[str, Any] | None:
        """The status's fields as validated: the file's own object when it is as we write
        it, else the model's (a ``"3.5"`` duration read as 3.5); None when it does not
        validate."""
        if self._wellformed:
            return self.raw
        status = self.status
        return None if status is None else status.model_dump(mode="json")

    @cached_property
    def _wellformed(self) -> bool:
        """The status is as we write it: it validates, told without pydantic."""
        return self.raw is not None and status_wellformed(self.raw)

    @property
    def problem(self) -> StatusProblem | None:
        """Why :attr:`status` is None (validating it if that is not known yet)."""
        if self.read_problem is not None:
            return self.read_problem
        return None if self._wellformed or self.status is not None else StatusProblem.INVALID

    @property
    def state(self) -> str:
        """The job's state as every view shows it (status, report, run's summary): the
        status written, else :data:`PENDING` or :data:`UNREADABLE`."""
        problem = self.problem
        if problem is None and self._wellformed and self.raw is not None:
            return str(self.raw["status"])  # a JobStatus value: the check says so
        if problem is None and self.status is not None:
            return self.status.status.value
        return PENDING if problem is StatusProblem.MISSING else UNREADABLE

    @property
    def problem_text(self) -> str:
        problem = self.problem
        if problem is None:
            return ""
        return f"{problem.text}: {self.detail}" if self.detail else problem.text

    # What a view shows about the job, from the best source there is: the status file,
    # else the manifest's entry, else the key itself.
    @property
    def tracer(self) -> str:
        return _first_str(self._raw("tracer"), self.planned and self.planned.tracer) or (
            self.parts.tracer
        )

    @property
    def model(self) -> str:
        model = self._raw("model")
        display = model.get("display") if isinstance(model, dict) else None
        return _first_str(display, self.planned and self.planned.model) or self.parts.slug

    @property
    def mode(self) -> str:
        return _first_str(self._raw("mode"), self.planned and self.planned.mode) or self.parts.mode

    @property
    def phase(self) -> str:
        found = _first_str(self._raw("phase"), self.planned and self.planned.phase)
        return found or self.parts.phase

    @property
    def status_value(self) -> str | None:
        """The status string as written (not validated), or None without a status."""
        value = self._raw("status")
        return value if isinstance(value, str) else None

    @property
    def reason(self) -> str | None:
        """The one-line reason: the error's root cause for failures, else the status reason."""
        error = self._raw("error")
        cause = error.get("root_cause") if isinstance(error, dict) else None
        return _first_str(cause, self._raw("reason"))

    @property
    def outputs(self) -> tuple[str, ...]:
        """Output paths as listed (relative to the job dir; unchecked, may be unsafe)."""
        listed = self._raw("outputs")
        if not isinstance(listed, list):
            return ()
        return tuple(str(o["path"]) for o in listed if isinstance(o, dict) and "path" in o)

    @property
    def paths(self) -> layout.JobPaths:
        return layout.JobPaths(self.job_dir)

    @property
    def status_path(self) -> Path:
        return self.paths.status

    def _raw(self, name: str) -> Any:
        return None if self.raw is None else self.raw.get(name)


def _first_str(*values: Any) -> str | None:
    return next((v for v in values if isinstance(v, str) and v), None)


# Longest name of one path component on Linux filesystems (NAME_MAX); a run dir's own path
# must also leave room for jobs/<slug>/<column>/<outputs> below PATH_MAX (4096).
_NAME_MAX = 255
_RUN_DIR_PATH_MAX = 3072


def _is_run_dir_entry(name: str) -> bool:
    return (
        layout.is_manifest_name(name)
        or name in (str(layout.RUN.jobs), str(layout.RUN.downloads), str(layout.RUN.slurm))
        or layout.is_lock_name(name)
    )


def run_dir_problem(path: Path) -> str | None:
    """Why ``path`` cannot be (or become) a run dir; None when it can.

    A run writes ``jobs/``, ``downloads/`` and manifests into its dir, so the dir must be
    new, empty or already a run dir: never a file, a device, or a folder holding other
    things (``/``, a home dir, ``/proc/self``).
    """
    path = Path(os.path.abspath(path))
    too_long = next((p for p in path.parts if len(os.fsencode(p)) > _NAME_MAX), None)
    if too_long is not None:
        return f"a path component is {len(os.fsencode(too_long))} bytes long (at most {_NAME_MAX})"
    if len(os.fsencode(str(path))) > _RUN_DIR_PATH_MAX:
        return f"the path is {len(os.fsencode(str(path)))} bytes long (at most {_RUN_DIR_PATH_MAX})"
    if os.path.lexists(path):
        return _existing_dir_problem(path)
    parent = path.parent
    while not os.path.lexists(parent):
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create it: {parent} is not writable"
    return None


def _existing_dir_problem(path: Path) -> str | None:
    if not path.is_dir():
        return "it exists and is not a directory"
    try:
        names = os.listdir(path)
    except OSError as exc:
        return f"it cannot be listed ({exc.strerror or exc})"
    if names and not any(_is_run_dir_entry(n) for n in names):
        shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
        return (
            f"it is a non-empty directory that is not a kerneltracer run dir ({shown}); "
            "choose a new or empty directory"
        )
    if not os.access(path, os.W_OK | os.X_OK):
        return "it is not writable"
    return None


class RunDir:
    """A run dir: its manifests and its job dirs. Opening one checks that it is one."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.paths = layout.RunPaths(self.path)

    @classmethod
    def open(cls, path: Path) -> RunDir:
        if not Path(path).is_dir():
            raise RunDirError(f"run dir {path} does not exist")
        run = cls(path)
        if not run.manifest_paths() and not run.jobs_root.is_dir():
            raise RunDirError(
                f"{path} is not a kerneltracer run dir "
                f"(no {layout.RUN.manifest()}, no {layout.RUN.jobs}/)"
            )
        return run

    @property
    def jobs_root(self) -> Path:
        return self.paths.jobs

    def manifest_paths(self) -> list[Path]:
        return manifest_paths(self.path)

    def manifests(self) -> list[RunManifest]:
        """Every readable manifest (run.json, shards' run.<tag>.json), by file name."""
        from kerneltracer.core.manifest import read_manifest  # pydantic: only here

        found = (read_manifest(p) for p in self.manifest_paths())
        return [m for m in found if m is not None]

    def planned(self, manifests: Iterable[RunManifest] | None = None) -> dict[str, PlannedJob]:
        """Every job a manifest planned, by key, in plan order (the first entry wins)."""
        if manifests is None:
            lists = [_planned_in(p) for p in self.manifest_paths()]
        else:
            lists = [[PlannedJob.of(j) for j in m.jobs] for m in manifests]
        out: dict[str, PlannedJob] = {}
        for jobs in lists:
            for job in jobs:
                out.setdefault(job.key, job)
        return out

    def job_dirs(self) -> list[str]:
        """The key of every directory two levels under jobs/, sorted (model, then column)."""
        keys: list[str] = []
        for model in _subdirs(self.jobs_root):
            keys += [f"{model}/{job}" for job in _subdirs(self.jobs_root / model)]
        return keys

    def started_job_keys(self) -> list[str]:
        """Job dirs a worker or the orchestrator wrote into (a JOB.json or a status file)."""
        return [
            key
            for key in self.job_dirs()
            if any(
                os.path.isfile(path)
                for path in (self.paths.job(key).status, self.paths.job(key).job_file)
            )
        ]

    def record(self, key: str, planned: PlannedJob | None = None) -> JobRecord:
        return JobRecord.read(self.paths.job(key).dir, key, planned)

    def records(
        self, keys: Iterable[str] | None = None, manifests: Iterable[RunManifest] | None = None
    ) -> list[JobRecord]:
        """Planned jobs in plan order, then started ones no manifest lists; unsafe keys
        (from a tampered manifest) are dropped. Only ``keys`` when given."""
        planned = self.planned(manifests)
        started = self.started_job_keys()
        ordered = list(planned) + sorted(set(started) - set(planned))
        wanted = None if keys is None else set(keys)
        return [
            self.record(key, planned.get(key))
            for key in ordered
            if layout.is_safe_key(key) and (wanted is None or key in wanted)
        ]


def _planned_in(path: Path) -> list[PlannedJob]:
    """The jobs the manifest at ``path`` plans; none when it is unreadable, or when
    :func:`~kerneltracer.core.manifest.read_manifest` would refuse it."""
    data = manifest_data(path)
    if data is None:
        return []
    if manifest_wellformed(data):
        return [PlannedJob(**{k: j.get(k) for k in _PLANNED_FIELDS}) for j in data.get("jobs", ())]
    from kerneltracer.core.manifest import manifest_of  # pydantic: a manifest not as written

    manifest = manifest_of(data)
    return [] if manifest is None else [PlannedJob.of(j) for j in manifest.jobs]


_PLANNED_FIELDS = ("key", "model", "tracer", "mode", "phase")


def _subdirs(path: Path) -> list[str]:
    try:
        with os.scandir(path) as entries:
            return sorted(e.name for e in entries if e.is_dir())
    except OSError:
        return []
