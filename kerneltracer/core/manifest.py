"""``run.json`` (and a shard's ``run.<tag>.json``): what a run planned, who runs it, and when.

The orchestrator writes it when a run starts and again when it ends; status, report and
Slurm read it. Readers are lenient: a manifest from an older or newer kerneltracer keeps
its unknown fields, and a field of the wrong type reads as absent rather than making the
whole file unusable (a run dir copied between versions must still report).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from kerneltracer.core import layout
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.jsonio import atomic_write_json


class ManifestJob(BaseModel):
    """One planned job, enough to show it before it has a status file."""

    model_config = ConfigDict(extra="allow")

    key: str
    model: str | None = None  # display id
    tracer: str | None = None
    mode: str | None = None
    phase: str | None = None


class OrchestratorInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    pid: int | None = None
    host: str | None = None


class RunManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    kerneltracer_version: str | None = None
    shard: str | None = None  # "i/N" for a shard's manifest
    config: str | None = None  # the config's absolute path
    argv: list[str] = []
    # Lets a reader tell a run in progress from one whose orchestrator was killed.
    orchestrator: OrchestratorInfo | None = None
    started_at: str | None = None
    finished_at: str | None = None  # None while the run is open
    interrupted: bool | None = None
    wall_s: float | None = None
    jobs: list[ManifestJob] = []

    @property
    def open(self) -> bool:
        """Not finished: in progress, or its orchestrator died before writing the end."""
        return self.finished_at is None


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_FIELD_CHECKS = {
    "kerneltracer_version": _is_str,
    "shard": _is_str,
    "config": _is_str,
    "argv": lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
    "orchestrator": lambda v: isinstance(v, dict),
    "started_at": _is_str,
    "finished_at": _is_str,
    "interrupted": lambda v: isinstance(v, bool),
    "wall_s": _is_number,
}


def _lenient(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the fields a reader cannot use (so the rest of the file still counts)."""
    out = dict(data)
    for name, check in _FIELD_CHECKS.items():
        if name in out and out[name] is not None and not check(out[name]):
            del out[name]
    if "jobs" in out:
        jobs = out["jobs"] if isinstance(out["jobs"], list) else []
        out["jobs"] = [j for j in jobs if isinstance(j, dict) and isinstance(j.get("key"), str)]
    return out


def read_manifest(path: Path) -> RunManifest | None:
    """The manifest at ``path``, or None if it is missing, not JSON or not an object."""
    try:
        data = orjson.loads(read_input(path, SMALL_FILE, what="run manifest", gzip=False))
    except (InputFileError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return RunManifest.model_validate(_lenient(data))
    except ValidationError:
        return None


def manifest_paths(run_dir: Path) -> list[Path]:
    """``run.json`` and every shard's manifest in ``run_dir``, sorted by name."""
    try:
        names = [p.name for p in run_dir.iterdir()]
    except OSError:
        return []
    return [run_dir / n for n in sorted(names) if layout.is_manifest_name(n)]


def write_manifest(run_dir: Path, manifest: RunManifest, shard_tag: str | None = None) -> Path:
    path = layout.RunPaths(run_dir).manifest(shard_tag)
    atomic_write_json(path, manifest.model_dump(mode="json"))
    return path
