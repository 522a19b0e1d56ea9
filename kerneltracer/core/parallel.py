"""A parallel layout and the collectives one rank issues: the records that cross processes.

The worker writes them (a fake-process-group simulation of every rank role, or real ranks);
coverage, the cost model, the corpus, the Chakra export and the report read them back. A rank's
outputs live in ``rank_<r>/`` of its job dir (:meth:`kerneltracer.core.layout.JobPaths.rank`),
its collectives in ``collectives.jsonl`` there, one :class:`CollectiveRecord` a line in
program order.

Where a simulation cannot know a value (the tokens routed to each expert under expert
parallelism), the record says so: ``known`` is false, or ``assumption`` names what was assumed
(``"balanced routing"``). Nothing is invented silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

# The axes a layout may shard along, in the order ranks are numbered (pp outermost, then dp,
# ep, tp innermost: tensor-parallel peers are neighbours, as on a real node).
AXES = ("pp", "dp", "ep", "tp")

# Collective kinds, named as torch.distributed names them (c10d / _c10d_functional ops map onto
# these). Chakra's collective types map one to one (see the Chakra export).
COLLECTIVE_KINDS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "send",
    "recv",
    "barrier",
)


class BadParallelRecord(ValueError):
    """A line or a layout that cannot be used; ``kind`` is what it is counted under."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Layout:
    """Degrees per axis; 1 means not sharded along it. ``world_size`` is their product."""

    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1

    def __post_init__(self) -> None:
        for axis in AXES:
            value = getattr(self, axis)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise BadParallelRecord(
                    "bad_degree", f"parallel.{axis} must be a whole number >= 1, got {value!r}"
                )

    @property
    def world_size(self) -> int:
        return self.tp * self.ep * self.pp * self.dp

    @property
    def is_parallel(self) -> bool:
        return self.world_size > 1

    def coords(self, rank: int) -> dict[str, int]:
        """The rank's index along each axis (tp varies fastest)."""
        if not 0 <= rank < self.world_size:
            raise BadParallelRecord("bad_rank", f"rank {rank} is outside 0..{self.world_size - 1}")
        out: dict[str, int] = {}
        rest = rank
        for axis in reversed(AXES):
            degree = getattr(self, axis)
            out[axis] = rest % degree
            rest //= degree
        return {axis: out[axis] for axis in AXES}

    def rank_of(self, coords: dict[str, int]) -> int:
        rank = 0
        for axis in AXES:
            rank = rank * getattr(self, axis) + coords.get(axis, 0)
        return rank

    def label(self) -> str:
        """``tp8.pp2``: the non-trivial degrees, or ``single`` for one rank."""
        parts = [f"{axis}{getattr(self, axis)}" for axis in ("tp", "ep", "pp", "dp")]
        kept = [
            p
            for p, axis in zip(parts, ("tp", "ep", "pp", "dp"), strict=True)
            if getattr(self, axis) > 1
        ]
        return ".".join(kept) or "single"

    def to_json(self) -> dict[str, int]:
        return {axis: getattr(self, axis) for axis in ("tp", "ep", "pp", "dp")}


@dataclass(frozen=True, slots=True)
class CollectiveRecord:
    """One collective a rank issued, in the rank's program order (``seq``)."""

    seq: int
    kind: str  # one of COLLECTIVE_KINDS
    group: str  # the axis it runs over ("tp", "ep", "pp", "dp") or a group name
    group_size: int
    dtype: str  # torch dtype name without "torch.", e.g. "bfloat16"
    shape: tuple[int, ...]  # this rank's input buffer
    bytes_per_rank: int | None  # this rank's input buffer in bytes; None when not known
    op: str  # the op that issued it, e.g. "_c10d_functional.all_reduce.default"
    module: str | None = None  # module path that issued it
    phase: str = "forward"  # "forward" | "backward" | "optimizer"
    peer: int | None = None  # send / recv: the other rank
    assumption: str | None = None  # what a simulation assumed to get bytes_per_rank
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return self.bytes_per_rank is not None

    def to_json_line(self) -> bytes:
        row = asdict(self)
        row["shape"] = list(self.shape)
        if not self.extra:
            row.pop("extra")
        return orjson.dumps(row)

    @classmethod
    def from_json(cls, row: object) -> CollectiveRecord:
        if not isinstance(row, dict):
            raise BadParallelRecord("not_an_object", "a collectives line is not a JSON object")
        try:
            kind = row["kind"]
            shape = row["shape"]
            record = cls(
                seq=_int(row["seq"], "seq"),
                kind=kind,
                group=str(row["group"]),
                group_size=_int(row["group_size"], "group_size"),
                dtype=str(row["dtype"]),
                shape=tuple(_int(d, "shape") for d in shape),
                bytes_per_rank=(
                    None
                    if row.get("bytes_per_rank") is None
                    else _int(row["bytes_per_rank"], "bytes_per_rank")
                ),
                op=str(row["op"]),
                module=row.get("module"),
                phase=str(row.get("phase", "forward")),
                peer=row.get("peer"),
                assumption=row.get("assumption"),
                extra=dict(row.get("extra") or {}),
            )
        except KeyError as exc:
            raise BadParallelRecord("missing_field", f"missing field {exc.args[0]!r}") from None
        except TypeError as exc:
            raise BadParallelRecord("malformed", str(exc)) from None
        if kind not in COLLECTIVE_KINDS:
            raise BadParallelRecord(
                "unknown_kind",
                f"collective kind {kind!r} is not one of {', '.join(COLLECTIVE_KINDS)}",
            )
        return record


def _int(value: object, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadParallelRecord("malformed", f"{name} must be a non-negative int, got {value!r}")
    return value


@dataclass(slots=True)
class CollectivesRead:
    """What a ``collectives.jsonl`` held: the good records and bad lines counted by kind."""

    records: list[CollectiveRecord]
    bad: dict[str, int]


def parse_collectives(text: bytes | str) -> CollectivesRead:
    records: list[CollectiveRecord] = []
    bad: dict[str, int] = {}
    raw = text.encode() if isinstance(text, str) else text
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            records.append(CollectiveRecord.from_json(orjson.loads(line)))
        except orjson.JSONDecodeError:
            bad["not_json"] = bad.get("not_json", 0) + 1
        except BadParallelRecord as exc:
            bad[exc.kind] = bad.get(exc.kind, 0) + 1
    return CollectivesRead(records, bad)
