"""A parallel job's rank dirs read back: each rank's dispatch signatures and collectives, and
the job's layout.

A job that simulated (or ran) a parallel layout has ``rank_<r>/`` dirs
(:meth:`kerneltracer.core.layout.JobPaths.rank`), each with torch_dispatch's
``dispatch_ops.jsonl`` and ``collectives.jsonl`` (:mod:`kerneltracer.core.parallel`). A
simulation writes one dir per rank *role*: ``roles.json`` says which ranks each one stands
for (tp and dp peers run the same shapes). The layout comes from the job's spec (its
``parallel`` mapping in ``JOB.json``), else ``roles.json``; a job with neither gets the
degrees its collectives' groups show, and says it inferred them. Bad lines are counted by
kind, never dropped silently.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.core.artefacts import DISPATCH_OPS_FILE
from kerneltracer.core.dispatch_row import BadDispatchRow, DispatchRow, parse_dispatch_line
from kerneltracer.core.layout import JobPaths
from kerneltracer.core.parallel import (
    AXES,
    BadParallelRecord,
    CollectiveRecord,
    Layout,
    parse_collectives,
)
from kerneltracer.core.rundir import RunDir
from kerneltracer.core.status import JobStatus
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input

FROM_SPEC = "from the job spec"
FROM_ROLES = "from the rank roles"
INFERRED = "inferred from the collectives' groups"
# The rank simulation's list of roles (kerneltracer.worker.parallel.simulate writes it).
ROLES_FILE = "roles.json"


@dataclass
class RankData:
    rank: int
    dir: Path
    rows: list[DispatchRow] = field(default_factory=list)  # first-call order
    collectives: list[CollectiveRecord] = field(default_factory=list)  # program order
    bad: Counter[str] = field(default_factory=Counter)  # "<file>: <kind>" -> lines
    missing: list[str] = field(default_factory=list)  # expected files that are not there


@dataclass
class RankJob:
    job_dir: Path
    layout: Layout
    layout_source: str  # FROM_SPEC, FROM_ROLES or INFERRED
    ranks: dict[int, RankData]
    # rank dir -> the ranks it stands for (its own at least), from roles.json
    stands_for: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def peers(self, rank: int) -> tuple[int, ...]:
        """The ranks ``rank``'s dir stands for."""
        return self.stands_for.get(rank, (rank,))

    def source_of(self, rank: int) -> int | None:
        """The rank dir whose program ``rank`` runs; None when no dir stands for it."""
        if rank in self.ranks:
            return rank
        return next((r for r in self.ranks if rank in self.peers(r)), None)

    @property
    def missing_ranks(self) -> list[int]:
        """Ranks of the layout that no rank dir stands for."""
        covered = {p for r in self.ranks for p in self.peers(r)}
        return [r for r in range(self.layout.world_size) if r not in covered]


def rank_dirs(job_dir: Path) -> dict[int, Path]:
    """``rank -> its dir`` for every rank dir of ``job_dir``, by rank."""
    paths = JobPaths(job_dir)
    found: dict[int, Path] = {}
    try:
        children = sorted(p for p in job_dir.iterdir() if p.is_dir())
    except OSError:
        return found
    for child in children:
        _, _, number = child.name.rpartition("_")
        if number.isdigit() and paths.rank(int(number)) == child:
            found[int(number)] = child
    return dict(sorted(found.items()))


def read_rank(rank: int, rank_dir: Path) -> RankData:
    out = RankData(rank, rank_dir)
    dispatch = rank_dir / DISPATCH_OPS_FILE
    collectives = JobPaths(rank_dir.parent).collectives(rank)
    data = _read(dispatch, out)
    for line in data.splitlines() if data is not None else ():
        if not line.strip():
            continue
        try:
            out.rows.append(parse_dispatch_line(line))
        except BadDispatchRow as exc:
            out.bad[f"{DISPATCH_OPS_FILE}: {exc.kind}"] += 1
    data = _read(collectives, out)
    if data is not None:
        read = parse_collectives(data)
        out.collectives = sorted(read.records, key=lambda r: r.seq)
        for kind, n in read.bad.items():
            out.bad[f"{collectives.name}: {kind}"] += n
    return out


def _read(path: Path, out: RankData) -> bytes | None:
    if not path.is_file():
        out.missing.append(path.name)
        return None
    try:
        return read_input(path, what="rank output", gzip=False)
    except InputFileError:
        out.bad[f"{path.name}: unreadable"] += 1
        return None


def read_rank_job(job_dir: Path) -> RankJob | None:
    """The job's ranks and layout; None when ``job_dir`` has no rank dirs."""
    dirs = rank_dirs(job_dir)
    if not dirs:
        return None
    ranks = {r: read_rank(r, d) for r, d in dirs.items()}
    roles = _read_json(job_dir / ROLES_FILE, "rank roles")
    layout, source = _layout(job_dir, roles, ranks)
    return RankJob(job_dir, layout, source, ranks, _stands_for(roles, ranks))


def job_layout(job_dir: Path) -> tuple[Layout, str]:
    """The layout of a job with rank dirs and where it comes from, reading no dispatch rows
    (only the collectives, when neither the spec nor ``roles.json`` names it)."""
    roles = _read_json(job_dir / ROLES_FILE, "rank roles")
    found = _declared(job_dir, roles)
    if found is not None:
        return found
    ranks = {r: RankData(r, d) for r, d in rank_dirs(job_dir).items()}
    for r, data in ranks.items():
        text = _read(JobPaths(job_dir).collectives(r), data)
        data.collectives = parse_collectives(text).records if text is not None else []
    return infer_layout(ranks), INFERRED


def rank_label(model: str, layout: str, rank: int) -> str:
    """A parallel job's rank as a model label of its own: ``Llama [tp8.pp2 rank 8]``."""
    return f"{model} [{layout} rank {rank}]"


def _declared(job_dir: Path, roles: Any) -> tuple[Layout, str] | None:
    layout = _spec_layout(job_dir)
    if layout is not None:
        return layout, FROM_SPEC
    raw = roles.get("layout") if isinstance(roles, dict) else None
    layout = layout_of(raw) if isinstance(raw, dict) else None
    return (layout, FROM_ROLES) if layout is not None else None


def _layout(job_dir: Path, roles: Any, ranks: dict[int, RankData]) -> tuple[Layout, str]:
    return _declared(job_dir, roles) or (infer_layout(ranks), INFERRED)


def _read_json(path: Path, what: str) -> Any:
    try:
        return orjson.loads(read_input(path, SMALL_FILE, what=what, gzip=False))
    except (InputFileError, orjson.JSONDecodeError, OSError):
        return None


def _stands_for(roles: Any, ranks: dict[int, RankData]) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    entries = roles.get("roles") if isinstance(roles, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        rank, peers = entry.get("rank"), entry.get("ranks")
        if isinstance(rank, int) and rank in ranks and isinstance(peers, list):
            out[rank] = tuple(sorted({rank, *(p for p in peers if isinstance(p, int))}))
    return out


def _spec_layout(job_dir: Path) -> Layout | None:
    spec = _read_json(JobPaths(job_dir).job_file, "job spec")
    if not isinstance(spec, dict):
        return None
    # JOB.json as the orchestrator writes it holds the spec under "job" (JobFile).
    inner = spec.get("job")
    spec = inner if isinstance(inner, dict) else spec
    options = spec.get("options")
    for where in (spec, options if isinstance(options, dict) else {}):
        found = where.get("parallel")
        if isinstance(found, dict):
            return layout_of(found)
    return None


def layout_of(raw: dict[str, Any]) -> Layout | None:
    try:
        return Layout(**{axis: raw[axis] for axis in AXES if axis in raw})
    except BadParallelRecord:
        return None


def infer_layout(ranks: dict[int, RankData]) -> Layout:
    """The degrees the collectives' axis groups show; the rest of the world (by the highest
    rank dir) along dp, when that makes the product whole."""
    degrees: dict[str, int] = {}
    for data in ranks.values():
        for record in data.collectives:
            if record.group in AXES and record.group_size > 1:
                degrees[record.group] = max(degrees.get(record.group, 1), record.group_size)
    layout = Layout(**degrees)
    world = max(ranks) + 1
    if "dp" not in degrees and world > layout.world_size and world % layout.world_size == 0:
        layout = Layout(**degrees, dp=world // layout.world_size)
    return layout


def rank_jobs(run_dir: Path) -> dict[str, Path]:
    """``key -> job dir`` of every ok job of ``run_dir`` that has rank dirs, in plan order."""
    found: dict[str, Path] = {}
    for record in RunDir.open(run_dir).records():
        if record.state == JobStatus.OK and rank_dirs(record.job_dir):
            found[record.key] = record.job_dir
    return found


def as_rank(data: RankData, rank: int, layout: Layout) -> RankData:
    """``data`` (a role's dir) as the peer ``rank`` it stands for runs it: the same program,
    send / recv peers moved along their axis to ``rank``'s own coordinates."""
    if rank == data.rank:
        return data
    mine = layout.coords(rank)
    moved = []
    for record in data.collectives:
        if record.peer is not None and record.group in AXES and record.peer < layout.world_size:
            axis = record.group
            peer = layout.rank_of({**mine, axis: layout.coords(record.peer)[axis]})
            record = replace(record, peer=peer)
        moved.append(record)
    return RankData(rank, data.dir, data.rows, moved, data.bad, data.missing)
