"""Per-line failure counters of a parse, by kind (the same kinds tlparse counts)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import ClassVar


@dataclass
class ParseStats:
    lines: int = 0  # lines read (not a failure kind)
    ok: int = 0
    fail_glog: int = 0  # line without a glog prefix (or orphan payload lines)
    fail_json: int = 0  # envelope is not a JSON object / malformed compile id
    fail_payload_md5: int = 0  # payload missing, truncated or altered
    fail_key_conflict: int = 0  # envelope already has a key we add for raw.jsonl
    fail_str: int = 0  # malformed string-table entry
    fail_too_large: int = 0  # record over records.MAX_RECORD_BYTES, read through unkept
    unknown: int = 0  # envelope type outside the known inventory
    other_rank: int = 0  # envelope of another rank than the log's first
    unknown_types: dict[str, int] = field(default_factory=dict)

    FAILURE_KINDS: ClassVar[tuple[str, ...]] = (
        "fail_glog",
        "fail_json",
        "fail_payload_md5",
        "fail_key_conflict",
        "fail_str",
        "fail_too_large",
        "unknown",
        "other_rank",
    )

    @property
    def failures(self) -> int:
        return sum(getattr(self, k) for k in self.FAILURE_KINDS)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def merge(self, other: ParseStats) -> None:
        for k in ("lines", "ok", *self.FAILURE_KINDS):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for name, n in other.unknown_types.items():
            self.unknown_types[name] = self.unknown_types.get(name, 0) + n

    def summary(self) -> str:
        parts = [f"lines: {self.lines}", f"ok: {self.ok}"] + [
            f"{k}: {getattr(self, k)}" for k in self.FAILURE_KINDS if getattr(self, k)
        ]
        return ", ".join(parts)
