"""Jobs: one (model, tracer, mode) to run in one worker, and how a config expands into them.

A :class:`JobSpec` is written to ``JOB.json`` in the job dir and is all the worker knows.
Its :attr:`JobSpec.request` is what a finished job must match to be bypassed: the same
tracer and version, model and revision, framework, device, mode, dtype and options.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kerneltracer.config import RunConfig, planned_tracers, settings_for
from kerneltracer.errors import ConfigError
from kerneltracer.jsonio import stable_hash
from kerneltracer.tracers.registry import TRACERS, TracerRegistry

JOB_FILE = "JOB.json"
STATUS_FILE = "_TRACE_STATUS.json"
WORKER_LOG = "worker.log"
PHASE_LOG = "phases.log"
JOBS_DIR = "jobs"
# Environment the orchestrator sets for every worker (the rest of the contract is JOB.json).
ENV_ORCHESTRATOR_PID = "KT_ORCHESTRATOR_PID"
ENV_GPU_SLOT = "KT_GPU_SLOT"


class ModelRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    display: str
    slug: str
    id: str | None = None
    path: str | None = None  # absolute local directory, for `path:` models
    local_dir: str | None = None  # where the worker loads from, set before the run starts
    revision: str | None = None
    resolved_revision: str | None = None
    trust_remote_code: bool = False


class JobSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    # "<model slug>/<tracer>[.train][.decode|.generate]": unique in a run, the job dir too.
    key: str
    model: ModelRef
    tracer: str
    tracer_version: str
    exclusive_group: str | None
    framework: str
    mode: str
    device: str
    dtype: str
    batch_size: int
    seq_len: int
    options: dict[str, Any]
    timeout_s: float
    max_rss_gb: float | None
    phase: str = "prefill"
    new_tokens: int = 8

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> JobSpec:
        # A copy must not inherit hashes cached from the fields it changes.
        copy = super().model_copy(update=update, deep=deep)
        for name in _CACHED:
            copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def options_hash(self) -> str:
        return stable_hash(self.options)

    @cached_property
    def request(self) -> dict[str, Any]:
        """The fields a finished job must match to count as complete for this request."""
        return {
            "tracer": self.tracer,
            "tracer_version": self.tracer_version,
            "model_id": self.model.id,
            "model_path": self.model.path,
            "revision": self.model.resolved_revision or self.model.revision,
            "trust_remote_code": self.model.trust_remote_code,
            "framework": self.framework,
            "device": self.device,
            "mode": self.mode,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "seq_len": self.seq_len,
            "options_hash": self.options_hash,
            # Only when not the default, so runs from before phases existed stay complete.
            **({"phase": self.phase} if self.phase != "prefill" else {}),
            **({"new_tokens": self.new_tokens} if self.phase == "generate" else {}),
        }

    @cached_property
    def request_hash(self) -> str:
        return stable_hash(self.request)

    def job_dir(self, run_dir: Path) -> Path:
        return Path(f"{run_dir}/{JOBS_DIR}/{self.key}")


_CACHED = ("options_hash", "request", "request_hash")


def slugify(text: str) -> str:
    """A single safe path component: hub ``org/name`` becomes ``org--name``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("/", "--")).strip(".-")
    return slug or "model"


def plan_jobs(
    cfg: RunConfig, base_dir: Path, registry: TracerRegistry = TRACERS
) -> list[JobSpec]:
    """Expand a validated config into jobs, in config order (models, then their tracers).

    Imports the module of every planned tracer (its version and options schema are there).
    """
    skip = set(cfg.skip)
    jobs: list[JobSpec] = []
    validated: dict[tuple[str, str], dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for index, entry in enumerate(cfg.models):
        # abspath, not resolve(): no syscalls per model, and the user's symlinks are kept.
        path = (
            os.path.abspath(os.path.join(base_dir, entry.path)) if entry.path is not None else None
        )
        if skip & {entry.id, entry.path, entry.name, path} - {None}:
            continue
        settings = settings_for(cfg, entry)
        model = ModelRef(
            display=entry.display,
            slug=slugify(entry.name or entry.id or Path(path or "").name),
            id=entry.id,
            path=path,
            local_dir=path,
            revision=entry.revision,
            trust_remote_code=settings.trust_remote_code,
        )
        for tracer in planned_tracers(cfg, entry, registry):
            cls = registry[tracer]
            raw = settings.tracer_options.get(tracer, {})
            cache_key = (tracer, stable_hash(raw))
            if cache_key not in validated:
                validated[cache_key] = cls.Options.model_validate(raw).model_dump(mode="json")
            options = validated[cache_key]
            key = (
                f"{model.slug}/{tracer}"
                + ("" if settings.mode == "eval" else f".{settings.mode}")
                + ("" if settings.phase == "prefill" else f".{settings.phase}")
            )
            if key in seen:
                raise ConfigError(
                    f"models[{index}] and models[{seen[key]}] both plan job {key!r}; "
                    "give one of them a distinct `name:`"
                )
            seen[key] = index
            # Every value below comes from validated config models: skip re-validation, which
            # would dominate planning a run of thousands of jobs.
            jobs.append(
                JobSpec.model_construct(
                    key=key,
                    model=model,
                    tracer=tracer,
                    tracer_version=cls.version,
                    exclusive_group=cls.exclusive_group,
                    framework=settings.framework,
                    mode=settings.mode,
                    device=settings.device,
                    dtype=settings.dtype,
                    batch_size=settings.batch_size,
                    seq_len=settings.seq_len,
                    options=options,
                    timeout_s=settings.timeout_s,
                    max_rss_gb=settings.max_rss_gb,
                    phase=settings.phase,
                    new_tokens=settings.new_tokens,
                )
            )
    return jobs
