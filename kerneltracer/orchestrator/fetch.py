"""One model's download, as run in the child process (see :mod:`.fetch_child`).

:func:`fetch` runs ``snapshot_download`` for one repo into the cache and turns every
failure into a :class:`FetchResult` with an outcome and a one-line reason.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from kerneltracer.core.rootcause import Chain, exception_line, root_cause
from kerneltracer.core.snapshot import (
    BIN_WEIGHT_PATTERNS,
    cached_commit,
    cached_tree,
    is_offline,
    needs_bin_weights,
)

REQUEST_SUFFIX = ".request.json"
_RESULT_SUFFIX = ".result.json"


class DownloadOutcome(StrEnum):
    OK = "ok"
    NOT_FOUND = "not_found"
    GATED = "gated"
    REVISION_NOT_FOUND = "revision_not_found"
    INCOMPLETE = "incomplete"
    TIMEOUT = "timeout"
    ERROR = "error"


class FetchRequest(BaseModel):
    repo_id: str
    revision: str | None
    cache_dir: str
    allow_patterns: list[str] | None
    ignore_patterns: list[str] | None
    file_workers: int = 8


class FetchResult(BaseModel):
    outcome: DownloadOutcome
    reason: str | None = None
    commit: str | None = None


def fetch(req: FetchRequest) -> FetchResult:
    """Download the repo's wanted files into the cache; errors become outcomes."""
    try:
        commit = _download(req)
    except Exception as exc:  # every failure is reported as a result, never a traceback
        return _classify_error(exc, req)
    return FetchResult(outcome=DownloadOutcome.OK, commit=commit)


def _download(req: FetchRequest) -> str:
    folder = _snapshot(req, req.revision, req.allow_patterns)
    commit = Path(folder).name
    tree = cached_tree(Path(req.cache_dir), req.repo_id, commit)
    if tree is not None and needs_bin_weights(list(tree), req.ignore_patterns):
        # The tree is cached now and the revision is a commit: this pass only fetches files.
        _snapshot(req, commit, list(BIN_WEIGHT_PATTERNS))
    return commit


def _snapshot(req: FetchRequest, revision: str | None, allow: list[str] | None) -> str:
    from huggingface_hub import snapshot_download

    return snapshot_download(
        req.repo_id,
        revision=revision,
        cache_dir=req.cache_dir,
        allow_patterns=allow,
        ignore_patterns=req.ignore_patterns,
        max_workers=req.file_workers,
        local_files_only=is_offline(),
    )


def _classify_error(exc: BaseException, req: FetchRequest) -> FetchResult:
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo, rev = req.repo_id, req.revision or "main"
    out = DownloadOutcome.ERROR
    why = f"download of {repo}@{rev} failed: {exception_line(exc, 300, lines=2)}"
    # GatedRepoError is a RepositoryNotFoundError: the order matters.
    if isinstance(exc, GatedRepoError):
        out, why = (
            DownloadOutcome.GATED,
            f"{repo} is gated: accept its terms on the hub, set HF_TOKEN",
        )
    elif isinstance(exc, RepositoryNotFoundError):
        out = DownloadOutcome.NOT_FOUND
        why = f"repository {repo} not found on the hub (check the id; private repos need HF_TOKEN)"
    elif isinstance(exc, RevisionNotFoundError):
        out, why = DownloadOutcome.REVISION_NOT_FOUND, f"revision {rev!r} not found in {repo}"
    elif isinstance(exc, IncompleteSnapshotError):
        out = DownloadOutcome.INCOMPLETE
        why = f"cached snapshot of {repo}@{rev} is incomplete and the hub cannot repair it"
        why += f" ({_hub_cause(exc)})"
    elif isinstance(exc, LocalEntryNotFoundError) and is_offline():
        out = DownloadOutcome.NOT_FOUND
        why = f"{repo}@{rev} is not in the local cache and HF_HUB_OFFLINE is set"
    elif isinstance(exc, LocalEntryNotFoundError | HfHubHTTPError):
        why = f"hub error for {repo}@{rev}: {_hub_cause(exc)}"
    commit = cached_commit(Path(req.cache_dir), repo, req.revision)
    return FetchResult(outcome=out, reason=why, commit=commit)


def _hub_cause(exc: BaseException) -> str:
    """The HTTP status or network failure the hub chained behind its own error."""
    return root_cause(exc, Chain.CAUSES, 300, lines=2)


def result_path(request: Path) -> Path:
    return request.with_name(request.name.removesuffix(REQUEST_SUFFIX) + _RESULT_SUFFIX)
