"""A job's spec: one (model, tracer, mode, phase) to run in one worker.

A :class:`JobSpec` is written to ``JOB.json`` in the job dir, in a :class:`JobFile` envelope
with the attempt's id, and is all the worker knows: the orchestrator writes the envelope
and the worker reads it, both through :class:`JobFile`.
Its :attr:`JobSpec.request` is what a finished job must match to be bypassed: the same
tracer and version, model and revision, framework, device, mode, dtype and options.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from kerneltracer.core.parallelspec import ParallelSpec
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.jsonio import atomic_write_json, stable_hash


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
    # "fake": only config/tokenizer files are fetched and the worker builds the model on
    # fake tensors; every job of the model shares it, so downloads know what to fetch.
    weights: str = "real"

    @property
    def fake_weights(self) -> bool:
        return self.weights == "fake"


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
    # A parallel layout to simulate (core.parallelspec.ParallelSpec as JSON); None: one device.
    parallel: dict[str, Any] | None = None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> JobSpec:
        # A copy must not inherit hashes cached from the fields it changes.
        copy = super().model_copy(update=update, deep=deep)
        for name in _CACHED:
            copy.__dict__.pop(name, None)
        return copy

    @property
    def rank_processes(self) -> int:
        """How many processes the job runs as, each wanting a core or a GPU of its own: its
        world size for ``parallel`` with real weights (one process per rank), else 1 (the
        fake simulation is one process)."""
        if self.parallel is None or self.model.fake_weights:
            return 1
        return ParallelSpec.from_json(self.parallel).layout.world_size

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
            **({"weights": self.model.weights} if self.model.fake_weights else {}),
            **({"parallel": self.parallel} if self.parallel else {}),
        }

    @cached_property
    def request_hash(self) -> str:
        return stable_hash(self.request)


_CACHED = ("options_hash", "request", "request_hash")


class JobFile(BaseModel):
    """``JOB.json``: one attempt at one job, as the orchestrator hands it to a worker."""

    model_config = ConfigDict(frozen=True)

    attempt: str  # this start's id; the status the worker writes carries it back
    job: JobSpec

    def write(self, path: Path) -> None:
        # Not fsynced (two fsyncs per job): after a crash of the machine the job has no
        # status and runs again, with a new JOB.json.
        atomic_write_json(path, self.model_dump(mode="json"), durable=False)

    @classmethod
    def read(cls, path: Path) -> JobFile:
        """The envelope at ``path``; InputFileError (one line, naming the file and the
        first problem) when it is unreadable, not JSON or not a job file."""
        data = read_input(path, SMALL_FILE, what="job file", gzip=False)
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise InputFileError(f"job file {path}: not valid JSON ({exc})") from None
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"]) or "the file"
            more = len(exc.errors()) - 1
            also = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            raise InputFileError(
                f"job file {path}: not a job file: {where}: {err['msg']}{also}"
            ) from None


def slugify(text: str) -> str:
    """A single safe path component: hub ``org/name`` becomes ``org--name``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("/", "--")).strip(".-")
    return slug or "model"
