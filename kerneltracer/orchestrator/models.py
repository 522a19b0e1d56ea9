"""Resolve each job's model to a local directory before any worker starts.

Local ``path:`` models are used in place. Hub ids are looked up in the local Hugging Face
cache (HF_HOME / HF_HUB_CACHE are honoured by huggingface_hub); the resolved commit is
recorded so a job traced at one commit is not mistaken for another. A model that cannot be
resolved fails all its jobs with the reason, and the other models go on.
"""

from __future__ import annotations

from pathlib import Path

from kerneltracer.jobs import JobSpec, ModelRef


def resolve_models(jobs: list[JobSpec]) -> tuple[list[JobSpec], dict[str, str]]:
    """Jobs with ``model.local_dir`` filled in, and failures by model slug."""
    resolved: dict[str, ModelRef] = {}
    failures: dict[str, str] = {}
    out = []
    for job in jobs:
        ref = job.model
        if ref.local_dir is not None:  # local `path:` models need no resolution
            out.append(job)
            continue
        if ref.slug not in resolved and ref.slug not in failures:
            try:
                resolved[ref.slug] = _resolve(ref)
            except LookupError as exc:
                failures[ref.slug] = str(exc)
        if ref.slug in resolved:
            job = job.model_copy(update={"model": resolved[ref.slug]})
        out.append(job)
    return out, failures


def _resolve(ref: ModelRef) -> ModelRef:
    if ref.path is not None:
        return ref.model_copy(update={"local_dir": ref.path})
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    assert ref.id is not None  # ModelEntry guarantees id or path
    try:
        local = snapshot_download(ref.id, revision=ref.revision, local_files_only=True)
    except LocalEntryNotFoundError:
        raise LookupError(
            f"model {ref.id}{'@' + ref.revision if ref.revision else ''} is not in the local "
            "Hugging Face cache; download it first (HF_HOME decides where the cache is)"
        ) from None
    except Exception as exc:
        raise LookupError(f"cannot resolve model {ref.id}: {type(exc).__name__}: {exc}") from None
    return ref.model_copy(update={"local_dir": local, "resolved_revision": Path(local).name})
