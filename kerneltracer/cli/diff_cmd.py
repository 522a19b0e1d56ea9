"""``kerneltracer diff RUN_A RUN_B``: what changed between two runs, as JSON + HTML."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kerneltracer.cli.options import echo_problems, out_option

if TYPE_CHECKING:
    from kerneltracer.analysis.compile_health.diff import CompileDiff
    from kerneltracer.coverage.diff_schema import DiffReport


class _Percent(click.ParamType):
    name = "PERCENT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        text = str(value).strip().removesuffix("%")
        try:
            number = float(text)
        except ValueError:
            self.fail(f"{value!r} is not a percentage (e.g. 10%)", param, ctx)
        if not number >= 0:
            self.fail(f"{value!r} must be a non-negative percentage", param, ctx)
        return number / 100.0


def _default_out_dir(run_a: Path, run_b: Path) -> Path:
    from kerneltracer.core.jobspec import slugify

    return run_b / "diff" / slugify(run_a.resolve().name)


@click.command()
@click.argument("run_a", type=click.Path(path_type=Path, file_okay=False))
@click.argument("run_b", type=click.Path(path_type=Path, file_okay=False))
@out_option("Output directory (default: RUN_B/diff/<name of RUN_A>/).")
@click.option(
    "--min-time-change",
    type=_Percent(),
    default="10%",
    show_default=True,
    help="Report a self-time change only if it is at least this relative change.",
)
@click.option(
    "--min-time-us",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="...and at least this many microseconds (filters noise on tiny ops).",
)
@click.option(
    "--compile-time-change",
    type=_Percent(),
    default="5%",
    show_default=True,
    help="Compile level: a compile-phase time change below this relative change is noise.",
)
@click.option("--fail-on-change", is_flag=True, help="Exit 1 when anything differs (for CI).")
@click.option("--max-lines", default=20, show_default=True, help="Changes listed on the console.")
def diff(
    run_a: Path,
    run_b: Path,
    out_dir: Path | None,
    min_time_change: float,
    min_time_us: float,
    compile_time_change: float,
    fail_on_change: bool,
    max_lines: int,
) -> None:
    """Compare two runs (e.g. before/after a torch upgrade), model by model.

    Reports status changes per (model, tracer) with the new failure reason, models present
    in only one run, and, for jobs ok in both runs: ops added/removed and call-count changes
    (torch_dispatch, profilers) and self-time changes (torch_profiler, vllm_profiler).
    The compile level (jobs with a TORCH_TRACE log) compares status, graphs, graph breaks
    (added / removed, by registry id and code location), recompiles and their reasons,
    guards, dynamic shapes, kernels and per-phase compile time: compile_diff.json / .csv
    / .html.
    Models are matched by display id. Writes diff.json (schema:
    kerneltracer/coverage/diff.schema.json) and a self-contained diff.html. Exit code 0,
    or 1 with --fail-on-change when anything differs; unreadable inputs are listed but
    are not changes.
    """
    from kerneltracer.analysis.compile_health.diff_files import write_compile_diff
    from kerneltracer.coverage.diff import diff_runs
    from kerneltracer.coverage.diff_html import write_diff
    from kerneltracer.errors import RunDirError
    from kerneltracer.jsonio import outputs_all_or_none

    for run in (run_a, run_b):
        if not run.is_dir():
            raise RunDirError(f"run dir {run} does not exist")
    report = diff_runs(run_a, run_b, min_time_change=min_time_change, min_time_us=min_time_us)
    compile_diff = _compile_diff(run_a, run_b, compile_time_change)
    out = out_dir if out_dir is not None else _default_out_dir(run_a, run_b)
    # Both levels' files, or none of them (a full disk leaves no half of a diff).
    with outputs_all_or_none(out):
        written = write_diff(report, out)
        compile_written = (
            write_compile_diff(compile_diff, out, str(run_a), str(run_b))
            if compile_diff is not None
            else []
        )
    _print_summary(report, max_lines)
    click.echo(f"wrote {written[0]} and {written[1]}")
    if compile_diff is not None:
        _print_compile_level(compile_diff, compile_written, compile_time_change, max_lines)
    compile_changed = compile_diff is not None and compile_diff.has_changes
    if fail_on_change and (report.has_changes or compile_changed):
        sys.exit(1)


def _compile_diff(run_a: Path, run_b: Path, threshold: float) -> CompileDiff | None:
    from kerneltracer.analysis.compile_health.diff import diff_fleets
    from kerneltracer.analysis.compile_health.fleet import run_health

    a, b = run_health(run_a), run_health(run_b)
    if not a.jobs and not b.jobs:
        return None
    return diff_fleets(a, b, threshold=threshold)


def _print_compile_level(
    diff: CompileDiff, written: list[Path], threshold: float, max_lines: int
) -> None:
    from kerneltracer.analysis.compile_health.diff import summary_lines

    click.echo(
        f"compile: {diff.jobs_compared} job(s) compared, {len(diff.jobs)} changed "
        f"(time threshold {threshold:.0%})"
    )
    lines = summary_lines(diff)
    for line in lines[:max_lines]:
        click.echo(f"  {line}")
    if len(lines) > max_lines:
        click.echo(f"  ... {len(lines) - max_lines} more in {written[0].name}")
    click.echo(f"wrote {written[0]}")


def _print_summary(report: DiffReport, max_lines: int) -> None:
    s = report.summary
    click.echo(
        f"{s.models_compared} model(s) compared, {s.models_changed} changed; "
        f"only in A: {s.models_only_in_a}, only in B: {s.models_only_in_b}"
    )
    if not report.has_changes:
        click.echo("no differences")
    else:
        click.echo(
            f"status changes: {s.status_changes}, ops +{s.ops_added}/-{s.ops_removed}, "
            f"count changes: {s.count_changes}, time changes: {s.time_changes}"
        )
    lines = [f"only in A: {m}" for m in report.models_only_in_a]
    lines += [f"only in B: {m}" for m in report.models_only_in_b]
    for m in report.models:
        for c in m.status_changes:
            why = f" ({c.reason_after})" if c.reason_after and c.after != "ok" else ""
            lines.append(
                f"{m.model} {c.tracer}: {c.before or 'absent'} -> {c.after or 'absent'}{why}"
            )
        lines += [f"{m.model} {o.source}: - {o.op}" for o in m.ops_removed]
        lines += [f"{m.model} {o.source}: + {o.op}" for o in m.ops_added]
    for line in lines[:max_lines]:
        click.echo(f"  {line}")
    if len(lines) > max_lines:
        click.echo(f"  ... {len(lines) - max_lines} more in diff.json / diff.html")
    echo_problems(
        [f"{p.path}: {p.reason}" for p in report.problems if p.run == "a"],
        "unreadable input in run A",
    )
    echo_problems(
        [f"{p.path}: {p.reason}" for p in report.problems if p.run == "b"],
        "unreadable input in run B",
    )
