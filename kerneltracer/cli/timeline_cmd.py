"""``kerneltracer timeline TRACE… -o OUT``: bottleneck and GPU breakdown reports for traces."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import (
    device_options_for,
    input_limit_options,
    out_option,
    single_threaded_blas,
    strict_option,
)
from kerneltracer.errors import InputFileError, UsageError
from kerneltracer.inputguard import check_input_file


@click.command("timeline")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@out_option(
    "Directory for the reports (one sub-directory per trace, plus summary.json/md).", required=True
)
@click.option(
    "--no-inferscope",
    is_flag=True,
    help="Skip writing the InferScope trace file and its constraint validation.",
)
@click.option(
    "--include-last-step",
    is_flag=True,
    help="Keep the last ProfilerStep in the GPU breakdowns (HTA drops it by default).",
)
@strict_option(
    "Fail (exit 1, no reports) if any event is malformed instead of counting and dropping it."
)
@click.option(
    "--no-ops",
    is_flag=True,
    help="Skip op → kernel attribution (ops.csv, kernels_by_op.csv, ops.html).",
)
@click.option(
    "--capture-trace",
    type=click.Path(path_type=Path),
    default=None,
    help="A trace of the CUDA graph capture (or of an eager run of the same step): "
    "attributes kernels replayed by graph launches to the captured ops.",
)
@device_options_for("the trace's GPU when the table has it, else no estimate")
@input_limit_options
def timeline(
    traces: tuple[Path, ...],
    out_dir: Path,
    no_inferscope: bool,
    include_last_step: bool,
    strict: bool,
    no_ops: bool,
    capture_trace: Path | None,
    device_name: str | None,
    devices_file: Path | None,
) -> None:
    """Analyse chrome traces (torch.profiler / Kineto / vLLM, .json or .json.gz).

    Each TRACE is one rank (its distributedInfo.rank, else its position); a directory
    stands for the chrome traces under it (a multi-rank job's rank_<r>/ traces). Writes per
    trace report.json, report.md, report.html and inferscope_trace.json.gz, and the op
    attribution (ops.csv, ops.parquet, kernels_by_op.csv, ops.json, ops.html); with
    several traces summary.md also gives per rank the comm / comp overlap and the time
    waiting in collectives, and names the straggler of each step.
    """
    single_threaded_blas()
    from kerneltracer.core.heap import no_cyclic_gc

    # From the imports on, until the command's context closes: they and the reports made
    # the collector re-scan every module's objects (39 -> 16 ms of collections at 218k
    # events; next to nothing on a tiny trace), and what is left at the end is frozen,
    # not collected (the process ends). The analyses pause it themselves.
    click.get_current_context().with_resource(no_cyclic_gc(freeze=True))
    from kerneltracer.analysis.timeline.load.loader import count_text
    from kerneltracer.analysis.timeline.pipeline import OpsOptions, TraceAnalysis
    from kerneltracer.analysis.timeline.writer import expand_traces, run_timeline
    from kerneltracer.cli.read_progress import ReadProgress
    from kerneltracer.jsonio import outputs_all_or_none

    traces = tuple(expand_traces(traces))
    ops = None if no_ops else OpsOptions(capture_trace, device_name, devices_file)
    if ops is not None and (device_name or devices_file):
        from kerneltracer.costmodel import load_devices

        table = load_devices(devices_file)  # a bad file or name: one line, before any work
        if device_name:
            table.get(device_name)
    for trace in [*traces, *([capture_trace] if capture_trace and not no_ops else [])]:
        try:
            check_input_file(trace, "trace file")
        except InputFileError as exc:
            raise UsageError(str(exc)) from None
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"output path {out_dir} exists and is not a directory")

    reading = ReadProgress()

    def progress(path: Path) -> None:
        click.echo(f"analysing {path}", err=True)
        reading.start(path.name)

    def counts(a: TraceAnalysis) -> None:
        t = a.trace
        line = f"  {len(t)} events used, {count_text(t.bad_events, 'malformed event')} dropped"
        if t.skipped_events:
            line += f", {count_text(t.skipped_events, 'unused event')} skipped"
        click.echo(line, err=True)
        if a.ops is not None and a.ops.attribution.rows.size:
            click.echo(f"  {a.ops.share_text()}", err=True)

    with outputs_all_or_none(out_dir), reading:
        written = run_timeline(
            list(traces),
            out_dir,
            convert=not no_inferscope,
            include_last_step=include_last_step,
            strict=strict,
            on_trace=progress,
            on_analysed=counts,
            ops=ops,
            load_progress=reading,
        )
    summary = out_dir / "summary.md"
    click.echo(f"wrote {len(written)} files to {out_dir} (start with {summary})")
