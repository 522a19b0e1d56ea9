"""Deterministic shards of a run: ``--shard i/N`` (1-based, ``1 <= i <= N``).

A shard is a set of *models*, not of jobs: all of a model's tracers (and modes) land in the
same shard, so they share one node's model cache and an exclusive group's alternatives
stay in one chain. Models are ordered by a hash of their slug and dealt round-robin, so
the assignment depends only on the set of models: rerunning, or reordering the config,
gives every model the same shard, and the shards are balanced to within one model.
Adding or removing models may move others between shards; that is harmless, since any
shard bypasses jobs that are already complete.

1-based because Slurm job arrays are submitted as ``--array=1-N`` and each task runs
``--shard $SLURM_ARRAY_TASK_ID/N``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kerneltracer.core import layout
from kerneltracer.core.jobspec import JobSpec
from kerneltracer.errors import UsageError

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 100_000
J = TypeVar("J", bound=JobSpec)


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def tag(self) -> str:
        """A file-name-safe label: ``shard-2-of-3``."""
        return layout.shard_tag(self.index, self.count)


def parse_shard(text: str) -> Shard:
    """``"2/3"`` → Shard(2, 3); anything else is a one-line usage error."""
    match = _SHARD.match(text)
    if match is None:
        raise UsageError(f"--shard {text!r}: expected I/N with 1 <= I <= N (1-based), e.g. 1/4")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shard {text!r}: N must be between 1 and {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text!r}: I must be between 1 and {count} (shards are 1-based)")
    return Shard(index, count)


def _slug_hash(slug: str) -> bytes:
    return hashlib.sha256(slug.encode()).digest()


def assign_models(slugs: Iterable[str], count: int) -> dict[str, int]:
    """Model slug → its 1-based shard, for ``count`` shards."""
    ordered = sorted(set(slugs), key=lambda s: (_slug_hash(s), s))
    return {slug: pos % count + 1 for pos, slug in enumerate(ordered)}


def select_shard(jobs: Sequence[J], shard: Shard | None) -> list[J]:
    """The jobs of one shard, in their original order; all of them without a shard."""
    if shard is None:
        return list(jobs)
    owner = assign_models((j.model.slug for j in jobs), shard.count)
    return [j for j in jobs if owner[j.model.slug] == shard.index]


def split_jobs(jobs: Sequence[J], count: int) -> dict[int, list[J]]:
    """Every shard's jobs (shard 1..count, empty ones included)."""
    owner = assign_models((j.model.slug for j in jobs), count)
    out: dict[int, list[J]] = {i: [] for i in range(1, count + 1)}
    for job in jobs:
        out[owner[job.model.slug]].append(job)
    return out
