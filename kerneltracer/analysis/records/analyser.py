"""Analyse a record log: parse → pair Start/End → nest → attribute, one ProfilingData per dump."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.analysis.records.attribution import AtomicRules, attribute
from kerneltracer.analysis.records.model import (
    NO_NAME,
    Anomaly,
    AnomalyKind,
    EventTable,
    ProfilingData,
    RecordTable,
    display_name,
)
from kerneltracer.analysis.records.nesting import build_nesting
from kerneltracer.analysis.records.pairing import PairedEvents, pair_records
from kerneltracer.analysis.records.parser import MAX_DETAILS, BadLine, RawDump, parse_log
from kerneltracer.errors import InputFileError, UsageError
from kerneltracer.inputguard import check_input_file


@dataclass(frozen=True)
class Analysis:
    path: Path
    pds: tuple[ProfilingData, ...]
    lines: int
    bad_count: int
    bad_lines: tuple[BadLine, ...]  # the first MAX_DETAILS bad lines
    ignored_lines: int  # program output between dumps
    bad_kinds: dict[str, int] = field(default_factory=dict)  # exact counts by kind

    @property
    def records(self) -> int:
        return sum(len(pd.records) for pd in self.pds)

    @property
    def events(self) -> int:
        return sum(len(pd.event_records) for pd in self.pds)

    def anomaly_total(self, kind: AnomalyKind) -> int:
        return sum(pd.count(kind) for pd in self.pds)


def analyse(path: Path, rules: AtomicRules | None = None) -> Analysis:
    path = Path(path)
    try:
        check_input_file(path, "record log")
    except InputFileError as exc:
        raise UsageError(str(exc)) from None
    try:
        parsed = parse_log(path)
    except OSError as exc:
        raise UsageError(f"cannot read record log {path}: {exc.strerror or exc}") from exc
    pds = tuple(
        _build_profiling_data(i, dump, parsed.names, rules) for i, dump in enumerate(parsed.dumps)
    )
    return Analysis(
        path,
        pds,
        parsed.lines,
        parsed.bad_count,
        tuple(parsed.bad_lines),
        parsed.ignored_lines,
        dict(parsed.bad_kinds),
    )


def _build_profiling_data(
    index: int, dump: RawDump, shared_names: list[str], rules: AtomicRules | None = None
) -> ProfilingData:
    names = list(shared_names)  # attribution may add atomic op names: keep them per dump
    ev = pair_records(dump)
    nest = build_nesting(ev)
    attributed = attribute(ev, nest, names, rules)
    frozen_names = tuple(names)
    iteration = str(index)
    records = RecordTable(
        {
            "timestamp": dump.timestamp, "tid": dump.tid, "node": dump.node,
            "event": dump.event, "et": dump.et, "device": dump.device, "line": dump.line,
        },
        frozen_names,
        iteration,
    )  # fmt: skip
    events = EventTable(
        {
            "start": ev.start, "end": ev.end, "node": ev.node, "event": ev.event,
            "tid": ev.tid, "device": ev.device, "op": attributed.op,
            "attribution": attributed.attribution, "parent": nest.parent,
            "same_parent": nest.same_parent, "nested": nest.nested,
            "start_rec": ev.start_rec, "end_rec": ev.end_rec,
        },
        frozen_names,
        iteration,
        dump.line,
    )  # fmt: skip
    anomalies, counts = _anomalies(dump, ev, nest.crossings, frozen_names)
    return ProfilingData(
        index=index,
        version=dump.version or "phase-log",
        names=frozen_names,
        records=records,
        event_records=events,
        anomalies=anomalies,
        anomaly_counts=tuple(sorted(counts.items())),
    )


class _Sink:
    """Counts every anomaly exactly; keeps details for the first MAX_DETAILS of each kind."""

    def __init__(self) -> None:
        self.details: list[Anomaly] = []
        self.counts: Counter[AnomalyKind] = Counter()

    def wants(self, kind: AnomalyKind) -> bool:
        self.counts[kind] += 1
        return self.counts[kind] <= MAX_DETAILS


def _anomalies(
    dump: RawDump, ev: PairedEvents, crossings: list[tuple[int, int]], names: tuple[str, ...]
) -> tuple[tuple[Anomaly, ...], Counter[AnomalyKind]]:
    sink = _Sink()
    dump_problems = []
    if dump.declared is not None and dump.declared != len(dump):
        dump_problems.append(f"dump header declares {dump.declared} records, found {len(dump)}")
    if not dump.ended:
        dump_problems.append("dump has no 'Profiling dump end' line (truncated output?)")
    for text in dump_problems:
        if sink.wants(AnomalyKind.DUMP):
            sink.details.append(Anomaly(AnomalyKind.DUMP, dump.first_line, 0, 0, None, "", text))
    for kind, recs, what in (
        (AnomalyKind.UNMATCHED_START, ev.unmatched_starts, "Start without a matching End"),
        (AnomalyKind.UNMATCHED_END, ev.unmatched_ends, "End without a matching Start"),
    ):
        for r in recs:
            if sink.wants(kind):
                node = dump.node[r]
                sink.details.append(Anomaly(
                    kind, dump.line[r], 0, dump.tid[r],
                    None if node == NO_NAME else names[node], names[dump.event[r]], what,
                ))  # fmt: skip
    for a, b in crossings:
        if sink.wants(AnomalyKind.CROSSING):
            sink.details.append(_crossing(ev, dump, names, a, b))
    sink.details.sort(key=lambda x: (x.line, x.kind))
    return tuple(sink.details), sink.counts


def _crossing(ev: PairedEvents, dump: RawDump, names: tuple[str, ...], a: int, b: int) -> Anomaly:
    def label(k: int) -> str:
        node = ev.node[k]
        return display_name(None if node == NO_NAME else names[node], names[ev.event[k]])

    node = ev.node[b]
    return Anomaly(
        AnomalyKind.CROSSING,
        dump.line[ev.start_rec[b]],
        dump.line[ev.start_rec[a]],
        ev.tid[b],
        None if node == NO_NAME else names[node],
        names[ev.event[b]],
        f"[{ev.start[b]}, {ev.end[b]}] crosses {label(a)} [{ev.start[a]}, {ev.end[a]}]: "
        "it starts inside it and ends after it",
    )
