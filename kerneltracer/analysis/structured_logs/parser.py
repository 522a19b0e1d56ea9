"""Stage 1: stream one TORCH_TRACE log into an intermediate directory.

One pass over the file, record by record (see ``records.py``). Each envelope is decoded
once with orjson, serialised once, and that line is appended to both its
``by_type/<type>.jsonl`` and its ``by_compile_id/<id>/events.jsonl``. ``raw.jsonl`` lines
are spliced from the original envelope text instead of being re-serialised.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.analysis.structured_logs.compile_id import CompileId
from kerneltracer.analysis.structured_logs.envelopes import (
    CHROMIUM_KEY,
    COMMON_KEYS,
    KNOWN_TYPES,
    STACK_KEY,
    STR_KEY,
    safe_name,
)
from kerneltracer.analysis.structured_logs.glog import Prefix, parse_prefix
from kerneltracer.analysis.structured_logs.records import Record, iter_records
from kerneltracer.analysis.structured_logs.stats import ParseStats
from kerneltracer.analysis.structured_logs.summary import CompileSummary
from kerneltracer.analysis.structured_logs.writer import BufferedFiles
from kerneltracer.inputguard import InputLimits, note_read

FORMAT_VERSION = "2.0"
_RAW_KEYS = ("timestamp", "thread", "pathname", "lineno")
# raw.jsonl starts with the string table, known only at the end: its other lines are kept
# in memory up to this size (then spilled to a side file and copied once at the end).
_RAW_BODY = "raw.body"
_RAW_IN_MEMORY = 64 << 20
_UNSET = object()


@dataclass
class Tail:
    """How the log ends, for readers that must tell a whole log from one cut short (a
    writer killed mid-line, a copy that stopped): whether the last record's payload failed
    its md5 (cut short), and whether its last line, without a newline, does not parse (a
    whole last line without its newline is common and harmless)."""

    lines: int = 0
    line_ended: bool = True
    last_record_line: int | None = None
    last_payload_cut: bool = False
    last_line_cut: bool = False


class LogParser:
    """Feeds records of one log (one rank) into the files of one intermediate directory."""

    def __init__(
        self,
        out: Path,
        *,
        rank: int | None = None,
        year: int | None = None,
        write_events: bool = True,
    ) -> None:
        self.out = out
        self.write_events = write_events
        self.files = BufferedFiles(out, keep_in_memory={_RAW_BODY: _RAW_IN_MEMORY})
        self.default_rank = rank
        self.year = year or dt.datetime.now(dt.UTC).year
        self.stats = ParseStats()
        self.strings: dict[int, str] = {}
        self.counts: dict[str, int] = {}
        self.artifact_counts: dict[str, int] = {}
        self.types_with_stack: dict[str, None] = {}
        self.summaries: dict[str, CompileSummary] = {}
        self.expected_rank: object = _UNSET
        self.ranks_seen: set[int] = set()
        self.seq = 0
        self.chromium_count = 0
        self.tail = Tail()
        # Per distinct compile id / type: the id's spellings, the type's file name.
        # A log has few of either, and building them per record was a tenth of the parse.
        self._ids: dict[CompileId, tuple[str, str]] = {}
        self._type_files: dict[str, str] = {}
        self.files.touch(_RAW_BODY)

    # -- the per-record path ------------------------------------------------------------
    def feed(self, rec: Record) -> None:
        stats = self.stats
        if rec.oversized:
            stats.fail_too_large += 1
            return
        pre = parse_prefix(rec.head, self.year)
        if pre is None:
            # tlparse sees the orphaned payload lines as non-glog lines too.
            stats.fail_glog += 1 + rec.payload_lines
            return
        body = rec.head[pre.body_start :]
        try:
            env = orjson.loads(body)
        except orjson.JSONDecodeError:
            env = None
        if type(env) is not dict:
            stats.fail_json += 1
            stats.fail_glog += rec.payload_lines
            return
        if STR_KEY in env:
            self._intern(env[STR_KEY])
            stats.fail_glog += rec.payload_lines
            return
        try:
            cid = CompileId.from_envelope(env)
        except ValueError:
            stats.fail_json += 1
            stats.fail_glog += rec.payload_lines
            return
        names = self._ids.get(cid)
        if names is None:
            names = self._ids[cid] = (cid.key(), cid.display())
        key, display = names
        payload = self._check_payload(env, rec)
        rank = env.get("rank", self.default_rank)
        if self.expected_rank is _UNSET:
            if rank is not None:
                self.expected_rank = rank
        elif rank != self.expected_rank:
            stats.other_rank += 1
            self._write_raw(env, body, pre)
            return
        if type(rank) is int:
            self.ranks_seen.add(rank)
        stats.ok += 1
        seq = self.seq
        self.seq += 1
        summary = self.summaries.get(key)
        if summary is None:
            summary = self.summaries[key] = CompileSummary(cid)
        etypes = [k for k in env if k not in COMMON_KEYS and k != STACK_KEY] or (
            [STACK_KEY] if STACK_KEY in env else []
        )
        for etype in etypes:
            self._add_event(etype, env, payload, seq, display, key, rank, pre, summary)
        if CHROMIUM_KEY not in env:
            self._write_raw(env, body, pre)

    def _check_payload(self, env: dict[str, Any], rec: Record) -> bytes | None:
        expect = env.get("has_payload")
        if expect is None:
            self.stats.fail_glog += rec.payload_lines
            return None
        payload = rec.payload or b""
        if type(expect) is not str or hashlib.md5(payload).hexdigest() != expect.lower():
            self.stats.fail_payload_md5 += 1
        return payload

    def _intern(self, entry: Any) -> None:
        if (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and type(entry[1]) is int
            and 0 <= entry[1] < 1 << 24
        ):
            self.strings[entry[1]] = entry[0]
        else:
            self.stats.fail_str += 1

    def _add_event(
        self,
        etype: str,
        env: dict[str, Any],
        payload: bytes | None,
        seq: int,
        display: str,
        key: str,
        rank: Any,
        pre: Prefix,
        summary: CompileSummary,
    ) -> None:
        self.counts[etype] = self.counts.get(etype, 0) + 1
        if etype not in KNOWN_TYPES:
            self.stats.unknown += 1
            self.stats.unknown_types[etype] = self.stats.unknown_types.get(etype, 0) + 1
        meta = env.get(etype)
        entry: dict[str, Any] = {
            "seq": seq,
            "type": etype,
            "compile_id": key,
            "display_id": display,
            "rank": rank,
            "timestamp": pre.timestamp,
            "thread": pre.thread,
            "pathname": pre.pathname,
            "lineno": pre.lineno,
            "metadata": meta,
        }
        if STACK_KEY in env:
            self.types_with_stack[etype] = None
            if etype != STACK_KEY:
                entry["stack"] = env[STACK_KEY]
        if payload is not None:
            entry["payload"] = payload.decode("utf-8", "replace")
        line = orjson.dumps(entry) + b"\n"
        if etype == CHROMIUM_KEY:
            self._add_chromium(payload)
        else:
            rel = self._type_files.get(etype)
            if rel is None:
                rel = self._type_files[etype] = f"by_type/{safe_name(etype)}.jsonl"
            self.files.append(rel, line)
        if self.write_events:
            self.files.append(f"by_compile_id/{key}/events.jsonl", line)
        if etype == "artifact" and isinstance(meta, dict):
            name = str(meta.get("name"))
            self.artifact_counts[name] = self.artifact_counts.get(name, 0) + 1
        summary.add(seq, etype, meta, payload)

    def _add_chromium(self, payload: bytes | None) -> None:
        if not payload:
            return
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return  # a dropped line; the md5 check has already counted it
        sep = b",\n" if self.chromium_count else b"[\n"
        self.chromium_count += 1
        self.files.append("by_type/chromium_events.json", sep + orjson.dumps(event))

    def _write_raw(self, env: dict[str, Any], body: bytes, pre: Prefix) -> None:
        if any(k in env for k in _RAW_KEYS):
            self.stats.fail_key_conflict += 1
            return
        extra = b'"timestamp":"%s","thread":%d,"pathname":%s,"lineno":%d}\n' % (
            pre.timestamp.encode(),
            pre.thread,
            orjson.dumps(pre.pathname),
            pre.lineno,
        )
        obj = body.rstrip()[:-1]
        self.files.append(_RAW_BODY, obj + (b"," if env else b"") + extra)

    # -- finishing ----------------------------------------------------------------------
    def finish(self, source: Path, source_hash: str) -> dict[str, Any]:
        """Flush all files, write the summaries, string table, raw.jsonl and manifest."""
        self.files.append(
            "by_type/chromium_events.json", b"\n]\n" if self.chromium_count else b"[]\n"
        )
        for key, summary in self.summaries.items():
            self.files.append(
                f"by_compile_id/{key}/summary.json", orjson.dumps(summary.as_json()) + b"\n"
            )
        raw_lines = self.files.take(_RAW_BODY)
        written = self.files.close()
        table = self.string_table()
        table_line = orjson.dumps({"string_table": table}) + b"\n"
        (self.out / "string_table.json").write_bytes(table_line)
        raw_body = self.out / _RAW_BODY
        with open(self.out / "raw.jsonl", "wb") as dst:
            dst.write(table_line)
            if raw_body.exists():
                with open(raw_body, "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
                raw_body.unlink()
            dst.write(b"".join(raw_lines))
        written = [w for w in written if w != _RAW_BODY]
        manifest = self._manifest(source, source_hash, written, len(table))
        (self.out / "manifest.json").write_bytes(
            orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
        )
        return manifest

    def string_table(self) -> list[str | None]:
        if not self.strings:
            return []
        table: list[str | None] = [None] * (max(self.strings) + 1)
        for i, s in self.strings.items():
            table[i] = s
        return table

    def _manifest(
        self, source: Path, source_hash: str, written: list[str], n_strings: int
    ) -> dict[str, Any]:
        by_type = [p.removeprefix("by_type/") for p in written if p.startswith("by_type/")]
        by_cid = [
            p.removeprefix("by_compile_id/") for p in written if p.startswith("by_compile_id/")
        ]
        return {
            "version": FORMAT_VERSION,
            "generated_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source_file": str(source),
            "source_file_hash": source_hash,
            "total_envelopes": self.stats.ok,
            "envelope_counts": self.counts,
            "artifact_counts": self.artifact_counts,
            "types_with_stack": list(self.types_with_stack),
            "compile_ids": list(self.summaries),
            "compile_id_display": {k: s.cid.display() for k, s in self.summaries.items()},
            "string_table_entries": n_strings,
            "parse_mode": "normal",
            "ranks": sorted(self.ranks_seen),
            "stats": self.stats.as_dict(),
            "files": {"by_type": by_type, "by_compile_id": by_cid},
            "has_events": self.write_events,
            "tail": asdict(self.tail),
        }


def parse_log(
    source: Path,
    out: Path,
    *,
    rank: int | None = None,
    write_events: bool = True,
    hash_source: bool = True,
) -> dict[str, Any]:
    """Parse ``source`` into ``out`` (an empty directory); return the manifest.

    ``write_events=False`` skips ``by_compile_id/<id>/events.jsonl`` (a second copy of
    every payload) when no one will read it: a throw-away intermediate of ``run()``.
    ``hash_source=False`` leaves the manifest's ``source_file_hash`` empty: no renderer
    reads it, and hashing the whole log costs a tenth of a throw-away parse.
    """
    parser = LogParser(out, rank=rank, write_events=write_events)
    digest = hashlib.sha256() if hash_source else None
    last = b"\n"

    def on_block(block: bytes, lines: int) -> None:
        nonlocal last
        if digest is not None:
            digest.update(block)
        parser.stats.lines += lines
        last = block[-1:]
        note_read(len(block), lines)

    limits = InputLimits.from_env()
    tail = Tail()
    stats = parser.stats
    damaged = False
    for count, rec in enumerate(iter_records(source, on_block=on_block), 1):
        before = (stats.fail_payload_md5, stats.fail_glog + stats.fail_json)
        parser.feed(rec)
        tail.last_record_line = rec.lineno
        tail.last_payload_cut = stats.fail_payload_md5 > before[0]
        damaged = tail.last_payload_cut or stats.fail_glog + stats.fail_json > before[1]
        if count & 0xFFFF == 0:
            limits.check_events(source, count, "records")
    if last != b"\n":
        stats.lines += 1  # a last line without its newline
        tail.line_ended = False
        tail.last_line_cut = damaged
    tail.lines = stats.lines
    parser.tail = tail
    return parser.finish(source, "" if digest is None else f"sha256:{digest.hexdigest()}")
