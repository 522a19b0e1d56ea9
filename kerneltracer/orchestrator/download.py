"""Make every model of a run whole on disk before any worker starts.

``ensure_models_downloaded`` first checks each model without the network (a complete cached
snapshot needs no request, so a second run and an offline run cost nothing), then downloads
the rest concurrently, each in a child process (:mod:`kerneltracer.orchestrator.fetch`) that
is killed when the model's timeout is reached, and checks the result again on disk. Every
model gets one :class:`ModelDownload`: ok / not_found / gated / revision_not_found /
incomplete / timeout / error with a one-line reason. Local ``path:`` models never touch
the hub but get the same on-disk check.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from kerneltracer.config import DownloadSettings
from kerneltracer.core.jobspec import ModelRef
from kerneltracer.core.snapshot import (
    FilePatterns,
    SnapshotCheck,
    SnapshotState,
    cached_commit,
    cached_tree,
    check_hub_snapshot,
    check_local_dir,
    hub_cache_dir,
    is_offline,
    model_files_problems,
    repo_storage,
    wanted_files,
)
from kerneltracer.environ import ENV_ORCHESTRATOR_PID
from kerneltracer.jsonio import atomic_write_bytes, read_json
from kerneltracer.orchestrator.fetch import (
    REQUEST_SUFFIX,
    DownloadOutcome,
    FetchRequest,
    FetchResult,
    result_path,
)
from kerneltracer.process.supervisor import WorkerProcess, describe_exit

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class ModelDownload(BaseModel):
    """How one model was made ready: the outcome, why, and where it now lives."""

    slug: str
    model: str  # hub id or local path
    revision: str | None = None
    outcome: DownloadOutcome
    reason: str | None = None
    resolved_revision: str | None = None
    local_dir: str | None = None
    fetched: bool = False  # the hub was asked; False when the cache was already complete
    duration_s: float = 0.0
    weights: str = "real"  # "fake": config and tokenizer files only, never a weight file

    @property
    def ok(self) -> bool:
        return self.outcome == DownloadOutcome.OK


@dataclass(frozen=True)
class DownloadProgress:
    done_bytes: int
    total_bytes: int
    done_files: int
    total_files: int


class DownloadObserver(Protocol):
    def download_started(self, model: ModelRef) -> None: ...

    def download_progress(self, model: ModelRef, progress: DownloadProgress) -> None: ...

    def download_finished(self, model: ModelRef, result: ModelDownload) -> None: ...


class NullDownloadObserver:
    def download_started(self, model: ModelRef) -> None:
        pass

    def download_progress(self, model: ModelRef, progress: DownloadProgress) -> None:
        pass

    def download_finished(self, model: ModelRef, result: ModelDownload) -> None:
        pass


@dataclass(frozen=True)
class _Limits:
    settings: DownloadSettings
    cache: Path
    env: dict[str, str]
    kill_grace_s: float
    poll_s: float
    progress_s: float


@dataclass
class _Fetch:
    ref: ModelRef
    proc: WorkerProcess
    request: Path
    log: Path
    next_progress: float = 0.0


def ensure_models_downloaded(
    models: Sequence[ModelRef],
    settings: DownloadSettings | None = None,
    *,
    max_workers: int | None = None,
    log_dir: Path | None = None,
    observer: DownloadObserver | None = None,
    env: Mapping[str, str] | None = None,
    refresh: bool = False,
    kill_grace_s: float = 2.0,
    poll_s: float = 0.05,
    progress_s: float = 0.5,
) -> dict[str, ModelDownload]:
    """One result per model (by slug). ``refresh`` asks the hub where branches point now."""
    settings = settings or DownloadSettings()
    observer = observer or NullDownloadObserver()
    env = dict(os.environ if env is None else env)
    limits = _Limits(settings, hub_cache_dir(env), env, kill_grace_s, poll_s, progress_s)
    results: dict[str, ModelDownload] = {}
    queue: list[ModelRef] = []
    for ref in _unique(models):
        early = _without_network(ref, limits, refresh)
        if early is None:
            queue.append(ref)
            continue
        results[ref.slug] = early
        observer.download_finished(ref, early)
    if queue:
        with _directory(log_dir) as logs:
            workers = max(1, max_workers or settings.max_workers)
            results.update(_fetch_all(queue, workers, logs, limits, observer))
    return results


def _unique(models: Sequence[ModelRef]) -> list[ModelRef]:
    seen: dict[str, ModelRef] = {}
    for ref in models:
        seen.setdefault(ref.slug, ref)
    return list(seen.values())


@contextlib.contextmanager
def _directory(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="kt-download-") as tmp:
        yield Path(tmp)


def _result(ref: ModelRef, outcome: DownloadOutcome, **fields: object) -> ModelDownload:
    return ModelDownload.model_validate(
        {
            "slug": ref.slug,
            "model": ref.id or ref.path or ref.display,
            "revision": ref.revision,
            "outcome": outcome,
            "weights": ref.weights,
            **fields,
        }
    )


def _patterns_for(ref: ModelRef, settings: DownloadSettings) -> FilePatterns:
    """What the model needs on disk: the configured patterns, less every weight file when
    the model is traced with fake weights."""
    return FilePatterns.of(
        settings.allow_patterns, settings.ignore_patterns, weights=not ref.fake_weights
    )


def _without_network(ref: ModelRef, limits: _Limits, refresh: bool) -> ModelDownload | None:
    """The result when the disk alone decides it; None when the hub must be asked."""
    t0 = time.monotonic()
    if ref.id is None:
        check = check_local_dir(Path(ref.path or ""), weights=not ref.fake_weights)
        return _from_check(ref, check, time.monotonic() - t0, fetched=False)
    patterns = _patterns_for(ref, limits.settings)
    check = check_hub_snapshot(limits.cache, ref.id, ref.revision, patterns)
    offline = is_offline(limits.env)
    if check.state == SnapshotState.UNVERIFIED and offline:
        # No tree listing to compare with and no hub to ask: the files must speak for themselves.
        problems = model_files_problems(Path(check.folder or ""), weights=patterns.weights)
        check = SnapshotCheck(
            SnapshotState.INCOMPLETE if problems else SnapshotState.COMPLETE,
            check.commit,
            check.folder,
            problems,
        )
    pinned = ref.revision is not None and _COMMIT.match(ref.revision) is not None
    if check.state == SnapshotState.COMPLETE and (offline or pinned or not refresh):
        return _from_check(ref, check, time.monotonic() - t0, fetched=False)
    if not offline:
        return None
    if check.state == SnapshotState.ABSENT:
        rev = ref.revision or "main"
        why = f"{ref.id}@{rev} is not in the local cache and HF_HUB_OFFLINE is set"
        return _result(ref, DownloadOutcome.NOT_FOUND, reason=why)
    return _from_check(ref, check, time.monotonic() - t0, fetched=False)


def _from_check(ref: ModelRef, check: SnapshotCheck, took: float, fetched: bool) -> ModelDownload:
    if check.state == SnapshotState.COMPLETE:
        return _result(
            ref,
            DownloadOutcome.OK,
            resolved_revision=check.commit,
            local_dir=check.folder,
            fetched=fetched,
            duration_s=round(took, 3),
        )
    if ref.id is None and check.state == SnapshotState.ABSENT:
        why = f"local model dir {ref.path} does not exist"
        return _result(ref, DownloadOutcome.NOT_FOUND, reason=why, duration_s=round(took, 3))
    if ref.id is None:
        what = f"local model {ref.path}"
    else:
        what = f"snapshot of {ref.id}@{(check.commit or ref.revision or 'main')[:12]}"
    return _result(
        ref,
        DownloadOutcome.INCOMPLETE,
        reason=f"{what} is incomplete: {check.reason}",
        resolved_revision=check.commit,
        fetched=fetched,
        duration_s=round(took, 3),
    )


def _fetch_all(
    queue: list[ModelRef],
    workers: int,
    logs: Path,
    limits: _Limits,
    observer: DownloadObserver,
) -> dict[str, ModelDownload]:
    results: dict[str, ModelDownload] = {}
    pending = deque(queue)
    active: list[_Fetch] = []
    timeout = limits.settings.timeout_s
    try:
        while pending or active:
            while pending and len(active) < workers:
                ref = pending.popleft()
                observer.download_started(ref)
                active.append(_start(ref, logs, limits))
            time.sleep(limits.poll_s)
            for fetch in list(active):
                now = time.monotonic()
                took = now - fetch.proc.started
                if fetch.proc.poll() is None and took <= timeout:
                    if now >= fetch.next_progress:
                        fetch.next_progress = now + limits.progress_s
                        progress = download_progress(fetch.ref, limits.cache, limits.settings)
                        if progress is not None:
                            observer.download_progress(fetch.ref, progress)
                    continue
                active.remove(fetch)
                result = _finish(fetch, took > timeout, limits)
                results[fetch.ref.slug] = result
                observer.download_finished(fetch.ref, result)
    finally:
        for fetch in active:  # interrupted: no download outlives the orchestrator's call
            fetch.proc.terminate(limits.kill_grace_s)
    return results


def _start(ref: ModelRef, logs: Path, limits: _Limits) -> _Fetch:
    assert ref.id is not None  # only hub models are queued
    patterns = _patterns_for(ref, limits.settings)
    request = logs / f"{ref.slug}{REQUEST_SUFFIX}"
    result_path(request).unlink(missing_ok=True)
    req = FetchRequest(
        repo_id=ref.id,
        revision=ref.revision,
        cache_dir=str(limits.cache),
        allow_patterns=list(patterns.allow) if patterns.allow else None,
        ignore_patterns=list(patterns.ignore) if patterns.ignore else None,
    )
    atomic_write_bytes(request, req.model_dump_json().encode())
    env = {
        **limits.env,
        "HF_HUB_CACHE": str(limits.cache),
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "PYTHONUNBUFFERED": "1",
        ENV_ORCHESTRATOR_PID: str(os.getpid()),
    }
    argv = [sys.executable, "-m", "kerneltracer.orchestrator.fetch_child", str(request)]
    log = logs / f"{ref.slug}.log"
    return _Fetch(ref, WorkerProcess.spawn(argv, env, logs, log), request, log)


def _finish(fetch: _Fetch, timed_out: bool, limits: _Limits) -> ModelDownload:
    ref, s = fetch.ref, limits.settings
    assert ref.id is not None
    took = round(time.monotonic() - fetch.proc.started, 3)
    if timed_out:
        fetch.proc.terminate(limits.kill_grace_s)
        why = (
            f"download of {ref.id} gave no result within {s.timeout_s:g} s and was stopped "
            "(download.timeout_s)"
        )
        return _result(ref, DownloadOutcome.TIMEOUT, reason=why, fetched=True, duration_s=took)
    fetch.proc.kill_leftovers()
    try:
        answer = FetchResult.model_validate(read_json(result_path(fetch.request)))
    except (OSError, ValueError):
        rc = fetch.proc.returncode
        why = f"download of {ref.id} {describe_exit(rc)} without a result: {_last_line(fetch.log)}"
        return _result(ref, DownloadOutcome.ERROR, reason=why, fetched=True, duration_s=took)
    if answer.outcome != DownloadOutcome.OK:
        return _result(
            ref,
            answer.outcome,
            reason=answer.reason,
            resolved_revision=answer.commit,
            fetched=True,
            duration_s=took,
        )
    # The child's word is not the verdict: the files on disk are.
    check = check_hub_snapshot(limits.cache, ref.id, answer.commit, _patterns_for(ref, s))
    return _from_check(ref, check, took, fetched=True)


def _last_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "empty log"


def download_progress(
    ref: ModelRef, cache: Path, settings: DownloadSettings
) -> DownloadProgress | None:
    """Bytes and files on disk so far, once the client has listed the repo; else None."""
    if ref.id is None:
        return None
    commit = cached_commit(cache, ref.id, ref.revision)
    tree = cached_tree(cache, ref.id, commit) if commit is not None else None
    if commit is None or tree is None:
        return None
    storage = repo_storage(cache, ref.id)
    patterns = _patterns_for(ref, settings)
    wanted = wanted_files(list(tree), patterns.allow, patterns.ignore)
    done = [p for p in wanted if (storage / "snapshots" / commit / p).exists()]
    partial = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(storage / "blobs"):
            if entry.name.endswith(".incomplete"):
                partial += entry.stat().st_size
    return DownloadProgress(
        done_bytes=sum(tree[p] for p in done) + partial,
        total_bytes=sum(tree[p] for p in wanted),
        done_files=len(done),
        total_files=len(wanted),
    )
