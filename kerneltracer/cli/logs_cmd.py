"""``kerneltracer logs``: structured-log (TORCH_TRACE) analysis, tlparse's two stages.

``kerneltracer logs LOG -o OUT`` is shorthand for ``kerneltracer logs run LOG -o OUT``.
The implementation is imported inside the commands so ``kerneltracer --help`` stays fast.
``python -m kerneltracer.cli.logs_cmd LOG -o OUT`` runs this command alone, without
importing the rest of the CLI (scripts, and timing the analysis itself).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kerneltracer.cli.options import input_limit_options, out_option, split_values, strict_option
from kerneltracer.errors import KernelTracerError, ParseFailuresError


class _LogsGroup(click.Group):
    """A group whose first argument may be a log path instead of a sub-command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


_modules_opt = click.option(
    "--modules",
    multiple=True,
    metavar="LIST",
    help="Comma-separated render modules to run (default: all that apply).",
)
_skip_opt = click.option(
    "--skip-modules", multiple=True, metavar="LIST", help="Comma-separated render modules to skip."
)
_export_opt = click.option(
    "--export", "export", is_flag=True, help="torch.export mode (tlparse --export)."
)
_overwrite_opt = click.option(
    "--overwrite", is_flag=True, help="Replace OUT if it exists and is not empty."
)
_strict_opt = strict_option("Exit non-zero if any log line failed to parse.")
_out_opt = out_option("Output directory.", required=True, dest="out")


def _report_stats(stats: Any, strict: bool) -> None:
    click.echo(f"parsed: {stats.summary()}", err=True)
    if stats.unknown_types:
        click.echo(f"unknown envelope types: {', '.join(sorted(stats.unknown_types))}", err=True)
    if strict and stats.failures:
        raise ParseFailuresError(
            f"--strict: {stats.failures} log line(s) failed to parse ({stats.summary()})"
        )


@click.group(cls=_LogsGroup)
def logs() -> None:
    """Analyse TORCH_TRACE structured logs (tlparse-compatible reports).

    \b
      kerneltracer logs LOG|DIR -o OUT          parse + render (same as `logs run`)
      kerneltracer logs parse LOG|DIR -o INTER  stage 1: intermediate JSON files
      kerneltracer logs render INTER -o OUT     stage 2: HTML / JSON reports

    A DIR holds per-rank logs (dedicated_log_torch_trace_rank_N.log): one report per rank
    plus a multi-rank page with desync / divergence diagnostics.
    """


@logs.command("parse")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@_out_opt
@_strict_opt
@_overwrite_opt
@input_limit_options
def parse_cmd(source: Path, out: Path, strict: bool, overwrite: bool) -> None:
    """Stage 1: stream SOURCE (a log or a dir of rank logs) into intermediate files."""
    from kerneltracer.analysis.structured_logs import parse
    from kerneltracer.cli.read_progress import input_bytes, read_progress

    with read_progress(source.name, input_bytes([source])):
        result = parse(source, out, overwrite=overwrite)
    _report_stats(result.stats, strict)
    click.echo(str(out))


@logs.command("render")
@click.argument("inter", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_out_opt
@_modules_opt
@_skip_opt
@_export_opt
@_overwrite_opt
def render_cmd(
    inter: Path,
    out: Path,
    modules: tuple[str, ...],
    skip_modules: tuple[str, ...],
    export: bool,
    overwrite: bool,
) -> None:
    """Stage 2: render the intermediate directory INTER into reports."""
    from kerneltracer.analysis.structured_logs import render

    result = render(
        inter,
        out,
        modules=split_values(modules) or None,
        skip_modules=split_values(skip_modules),
        export=export,
        overwrite=overwrite,
    )
    click.echo(
        f"rendered {len(result.files)} files with modules: {', '.join(result.modules)}", err=True
    )
    click.echo(str(out / "index.html"))


@logs.command("run")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@_out_opt
@_strict_opt
@click.option(
    "--keep-intermediate", is_flag=True, help="Keep the intermediate files in OUT/intermediate."
)
@click.option(
    "--only-intermediate", is_flag=True, help="Stop after stage 1 (OUT is the intermediate dir)."
)
@_modules_opt
@_skip_opt
@_export_opt
@_overwrite_opt
@input_limit_options
def run_cmd(
    source: Path,
    out: Path,
    strict: bool,
    keep_intermediate: bool,
    only_intermediate: bool,
    modules: tuple[str, ...],
    skip_modules: tuple[str, ...],
    export: bool,
    overwrite: bool,
) -> None:
    """Parse SOURCE and render it into OUT in one step."""
    from kerneltracer.analysis.structured_logs import run
    from kerneltracer.cli.read_progress import input_bytes, read_progress

    with read_progress(source.name, input_bytes([source])):
        parsed, rendered = run(
            source,
            out,
            keep_intermediate=keep_intermediate,
            only_intermediate=only_intermediate,
            modules=split_values(modules) or None,
            skip_modules=split_values(skip_modules),
            export=export,
            overwrite=overwrite,
        )
    _report_stats(parsed.stats, strict)
    click.echo(str(out if rendered is None else out / "index.html"))


def main() -> None:
    """``logs`` as a program of its own, with the CLI's exit codes."""
    try:
        logs.main(prog_name="kerneltracer logs", standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KernelTracerError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
