"""Resolve each job's model to a local directory before any worker starts.

Every model is made whole on disk first (:func:`ensure_models_downloaded`: hub models are
downloaded into the Hugging Face cache that HF_HOME / HF_HUB_CACHE name, local ``path:``
models are checked in place). The resolved commit is recorded in the model, so it lands in
each job's request and status, and a job traced at one commit is not mistaken for another.
A model that is not ready fails all its jobs with the reason; the other models go on.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kerneltracer.config import DownloadSettings
from kerneltracer.core.jobspec import JobSpec, ModelRef
from kerneltracer.core.snapshot import cached_commit, hub_cache_dir
from kerneltracer.jsonio import atomic_write_json, read_json
from kerneltracer.orchestrator.download import (
    DownloadObserver,
    ModelDownload,
    ensure_models_downloaded,
)

_RESULTS_FILE = "results.json"
_RESULTS_LOCK = ".results.lock"


def resolve_models(
    jobs: list[JobSpec],
    settings: DownloadSettings | None = None,
    *,
    log_dir: Path | None = None,
    observer: DownloadObserver | None = None,
) -> tuple[list[JobSpec], dict[str, str]]:
    """Jobs with ``model.local_dir`` and ``resolved_revision`` filled in, and failures by slug.

    With ``log_dir``, each download's log and every model's result (``results.json``) are
    kept there.
    """
    refs: dict[str, ModelRef] = {}
    for job in jobs:
        refs.setdefault(job.model.slug, job.model)
    results = ensure_models_downloaded(
        list(refs.values()), settings, log_dir=log_dir, observer=observer
    )
    if log_dir is not None and results:
        _merge_results(log_dir, results.values())
    resolved: dict[str, ModelRef] = {}
    failures: dict[str, str] = {}
    for slug, result in results.items():
        if result.ok:
            resolved[slug] = _resolved(refs[slug], result)
        else:
            failures[slug] = f"model {result.outcome.value}: {result.reason}"
    out = [
        job.model_copy(update={"model": resolved[job.model.slug]})
        if job.model.slug in resolved
        else job
        for job in jobs
    ]
    return out, failures


def resolve_cached(jobs: list[JobSpec], cache_dir: Path | None = None) -> list[JobSpec]:
    """Jobs with hub revisions resolved from the local cache alone, as a rerun resolves a
    model whose snapshot is complete: no download, no network (status views use this)."""
    cache = cache_dir or hub_cache_dir()
    commits: dict[str, ModelRef] = {}
    out = []
    for job in jobs:
        ref = job.model
        if ref.id is None or ref.resolved_revision is not None:
            out.append(job)
            continue
        if ref.slug not in commits:
            commit = cached_commit(cache, ref.id, ref.revision)
            commits[ref.slug] = ref.model_copy(update={"resolved_revision": commit})
        out.append(job.model_copy(update={"model": commits[ref.slug]}))
    return out


def _resolved(ref: ModelRef, result: ModelDownload) -> ModelRef:
    if ref.path is not None:
        return ref.model_copy(update={"local_dir": ref.path})
    return ref.model_copy(
        update={"local_dir": result.local_dir, "resolved_revision": result.resolved_revision}
    )


def _merge_results(log_dir: Path, results: Iterable[ModelDownload]) -> None:
    """Fold ``results`` into ``results.json`` by model, each entry with the host it was
    resolved on: the download job and every shard (on any node) write the same file, and
    each knows only its own models, so a plain write would keep only the last shard's."""
    path = log_dir / _RESULTS_FILE
    log_dir.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    fd = os.open(log_dir / _RESULTS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for one read and one write: never long
        merged = {entry["slug"]: entry for entry in _entries(path)}
        for result in results:
            merged[result.slug] = {**result.model_dump(mode="json"), "host": host}
        atomic_write_json(path, list(merged.values()))
    finally:
        os.close(fd)


def _entries(path: Path) -> list[dict[str, Any]]:
    """The entries already there; none when the file is missing or unreadable (it is a log:
    the next write replaces what cannot be read)."""
    data: Any = None
    with contextlib.suppress(OSError, ValueError):
        data = read_json(path)
    if not isinstance(data, list):
        return []
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("slug"), str)]
