"""``kerneltracer records LOG -o OUT``: analyse a Start/End record log (ada-pa's format)."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import input_limit_options, out_option, strict_option

_SHOWN_BAD_LINES = 20


def _split_names(values: tuple[str, ...]) -> list[str] | None:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


@click.command("records")
@click.argument("log", type=click.Path(path_type=Path))
@out_option("Directory for the reports (created if missing).", required=True)
@click.option(
    "--reporters", "reporters", multiple=True, metavar="NAME[,NAME…]",
    help="Reporters to run (repeat or comma-separate): tracing, summary, op_statistic, "
    "anomalies. Default: all.",
)  # fmt: skip
@click.option(
    "--prefix", default=None,
    help="File-name prefix: OUT/<prefix>_<type>_<index>.<ext>. Default: the log's file stem.",
)  # fmt: skip
@strict_option("Fail (exit 1, no reports) on any bad line.")
@input_limit_options
def records(
    log: Path, out_dir: Path, reporters: tuple[str, ...], prefix: str | None, strict: bool
) -> None:
    """Turn a GE profiling log or a worker phase log into tracing / summary / op statistics.

    LOG lines are `<timestamp_ns> <tid> [node] [event] Start|End`; dumps between GE's
    `Profiler version: …, dump start` and `Profiling dump end` each give one set of reports.
    """
    from kerneltracer.analysis.records import analyse
    from kerneltracer.analysis.records.model import AnomalyKind
    from kerneltracer.analysis.records.reporters import reporter_classes, run_reporters
    from kerneltracer.errors import KernelTracerError, UsageError

    names = _split_names(reporters)
    reporter_classes(names)  # validate before the (possibly long) analysis
    if prefix is not None and (not prefix or "/" in prefix or prefix in (".", "..")):
        raise UsageError(f"--prefix {prefix!r} must be a plain file-name prefix (no '/')")
    analysis = analyse(log)
    if analysis.bad_count:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(analysis.bad_kinds.items()))
        click.echo(f"{log}: {analysis.bad_count} bad line(s) discarded ({kinds}):", err=True)
        for bad in analysis.bad_lines[:_SHOWN_BAD_LINES]:
            click.echo(f"  line {bad.line}: {bad.reason}", err=True)
        if analysis.bad_count > _SHOWN_BAD_LINES:
            click.echo(f"  … and {analysis.bad_count - _SHOWN_BAD_LINES} more", err=True)
        if strict:
            first = analysis.bad_lines[0]
            raise KernelTracerError(
                f"{log}: {analysis.bad_count} bad line(s) (first: line {first.line}: "
                f"{first.reason}); --strict writes no reports"
            )
    if not analysis.pds:
        raise KernelTracerError(f"{log}: no Start/End records found ({analysis.lines} lines read)")
    listed = " (listed in the anomalies report)" if names is None or "anomalies" in names else ""
    for kind in AnomalyKind:
        total = analysis.anomaly_total(kind)
        if total:
            click.echo(f"{log}: {kind.label}: {total}{listed}", err=True)
    written = run_reporters(analysis.pds, out_dir / (prefix or log.stem), names)
    click.echo(
        f"{len(analysis.pds)} dump(s), {analysis.records} records, {analysis.events} events "
        f"→ {len(written)} file(s) in {out_dir}"
    )
    for path in written:
        click.echo(f"  {path}")
