"""``run.json`` (and a shard's ``run.<tag>.json``): what a run planned, who runs it, and when.

The orchestrator writes it when a run starts and again when it ends; status, report and
Slurm read it. Readers are lenient: a manifest from an older or newer kerneltracer keeps
its unknown fields, and a field of the wrong type reads as absent rather than making the
whole file unusable (a run dir copied between versions must still report).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kerneltracer.core import layout
from kerneltracer.core.wellformed import manifest_data
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


def read_manifest(path: Path) -> RunManifest | None:
    """The manifest at ``path``, or None if it is missing, not JSON or not an object."""
    data = manifest_data(path)
    return None if data is None else manifest_of(data)


def manifest_of(data: dict[str, Any]) -> RunManifest | None:
    """A manifest's object (from :func:`~kerneltracer.core.wellformed.manifest_data`), or
    None when its fields do not validate."""
    try:
        return RunManifest.model_validate(data)
    except ValidationError:
        return None


def write_manifest(run_dir: Path, manifest: RunManifest, shard_tag: str | None = None) -> Path:
    path = layout.RunPaths(run_dir).manifest(shard_tag)
    atomic_write_json(path, manifest.model_dump(mode="json"))
    return path
