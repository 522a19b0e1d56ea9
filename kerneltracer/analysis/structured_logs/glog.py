"""The glog prefix of a TORCH_TRACE line: ``V1206 15:18:15.925000 1500233 path.py:1288] {json}``.

The common case is decoded with slices; only lines that do not fit the exact layout (a
``[rank0]:`` prefix, odd spacing) go through the regex, which accepts what tlparse accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEVELS = frozenset(b"VIWEC")
_FALLBACK = re.compile(
    rb"([VIWEC])(\d{2})(\d{2}) (\d{2}:\d{2}:\d{2}\.\d{6}) (\d+) ?([^:]+):(\d+)\] (?=.)"
)


@dataclass(frozen=True, slots=True)
class Prefix:
    timestamp: str  # ISO-8601; glog has no year, so the parser supplies one
    thread: int
    pathname: str
    lineno: int
    body_start: int  # offset of the JSON envelope in the line


def parse_prefix(line: bytes, year: int) -> Prefix | None:
    """Decode the prefix, or ``None`` if the line is not a glog line."""
    end = line.find(b"] ")
    if end > 0 and line[0] in _LEVELS and end + 2 < len(line):
        parts = line[:end].split(b" ", 3)
        if len(parts) == 4:
            lvl, tm, thread, loc = parts
            path, _, lno = loc.rpartition(b":")
            if (
                len(lvl) == 5
                and lvl[1:].isdigit()
                and len(tm) == 15
                and tm[2] == 58
                and tm[5] == 58
                and tm[8] == 46
                and thread.isdigit()
                and lno.isdigit()
                and path
            ):
                return Prefix(
                    f"{year:04d}-{lvl[1:3].decode()}-{lvl[3:5].decode()}T{tm.decode()}Z",
                    int(thread),
                    path.decode("utf-8", "replace").strip(),
                    int(lno),
                    end + 2,
                )
    return _parse_slow(line, year)


def _parse_slow(line: bytes, year: int) -> Prefix | None:
    m = _FALLBACK.search(line)
    if m is None:
        return None
    _, month, day, tm, thread, path, lno = m.groups()
    return Prefix(
        f"{year:04d}-{month.decode()}-{day.decode()}T{tm.decode()}Z",
        int(thread),
        path.decode("utf-8", "replace").strip(),
        int(lno),
        m.end(),
    )
