"""``kerneltracer compile-health RUN_DIR | LOG…``: the fleet's compile health."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import out_option, single_threaded_blas
from kerneltracer.core.layout import RUN, RunPaths

TOP_SHOWN = 5


@click.command("compile-health")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@out_option(f"Output directory (default: RUN_DIR/{RUN.report.compile_health}/; required for logs).")
def compile_health(inputs: tuple[Path, ...], out_dir: Path | None) -> None:
    """Compile health per job and for the fleet.

    Pass/fail (fail type, reason), graphs, graph breaks by registry id and user frame,
    recompiles and their reasons, guards, dynamic shapes, cache hits/misses, compile time
    per phase, generated kernels.

    INPUTS is one run dir (every job with a TORCH_TRACE log), or TORCH_TRACE logs /
    directories of logs / `kerneltracer logs` outputs (one row each). Writes
    compile_health.{csv,parquet,json,html}, compile_breaks.csv, compile_recompiles.csv,
    compile_ids.csv (one row per compile id).
    A log cut short (truncated) or not readable as one (unusable) is a state of its own:
    the files are written, then the command exits 1 naming each.
    """
    single_threaded_blas()
    from kerneltracer.analysis.compile_health.export import write_fleet
    from kerneltracer.analysis.compile_health.fleet import logs_health, run_health
    from kerneltracer.cli.read_progress import input_bytes, read_progress
    from kerneltracer.errors import InputFileError, UsageError
    from kerneltracer.jsonio import outputs_all_or_none

    run_dir = inputs[0] if len(inputs) == 1 and _is_run_dir(inputs[0]) else None
    if run_dir is not None:
        with read_progress("logs"):
            fleet = run_health(run_dir)
        out = out_dir if out_dir is not None else RunPaths(run_dir).report.compile_health
    else:
        if out_dir is None:
            raise UsageError("compile-health on logs needs --out DIR (a run dir has a default)")
        with read_progress("logs", input_bytes(inputs)):
            fleet = logs_health(inputs)
        out = out_dir
    with outputs_all_or_none(out):
        written = write_fleet(fleet, out)
    s = fleet.summary()
    counts = ", ".join(f"{n} {k}" for k, n in s["status_counts"].items() if n)
    rates = ", ".join(
        f"{k} {'n/a' if s[f'{k}_rate'] is None else format(s[f'{k}_rate'], '.1%')}"
        for k in ("pass", "partial", "fail")
    )
    click.echo(f"{s['jobs']} compile job(s): {counts or 'none'}; rate: {rates}")
    for b in s["top_breaks"][:TOP_SHOWN]:
        where = f" at {b['example_frame']}" if b["example_frame"] else ""
        click.echo(f"  break {b['gb_id'] or '-'} {b['gb_type']}: {b['models']} model(s){where}")
    for r in s["top_recompile_reasons"][:TOP_SHOWN]:
        click.echo(f"  recompile: {r['reason']}: {r['models']} model(s)")
    for p in s["problems"]:
        click.echo(f"unreadable: {p}", err=True)
    click.echo(f"wrote {written[-1]}")
    untrusted = s["untrusted"]
    if untrusted:
        # The table says it too; the exit code keeps a script from reading it as healthy.
        shown = "; ".join(f"{u['job']}: {u['status']} ({u['reason']})" for u in untrusted[:3])
        more = f"; +{len(untrusted) - 3} more" if len(untrusted) > 3 else ""
        raise InputFileError(
            f"{len(untrusted)} of {s['jobs']} compile log(s) cannot be trusted: {shown}{more}"
        )


def _is_run_dir(path: Path) -> bool:
    return path.is_dir() and RunPaths(path).jobs.is_dir()
