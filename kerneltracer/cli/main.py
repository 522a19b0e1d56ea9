"""Root of the ``kerneltracer`` CLI: the command group and the error boundary.

Expected failures (:class:`KernelTracerError`) print one line and exit with their code;
anything else prints one line too, plus the traceback only with ``--debug`` / ``KT_DEBUG=1``.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import click

from kerneltracer import __version__
from kerneltracer.errors import KernelTracerError


class _Root(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except KernelTracerError as exc:
            _report(ctx, exc, f"error: {exc}")
            sys.exit(exc.exit_code)
        except Exception as exc:
            _report(ctx, exc, f"internal error: {type(exc).__name__}: {exc}")
            sys.exit(1)


def _report(ctx: click.Context, exc: BaseException, line: str) -> None:
    if _debug(ctx):
        traceback.print_exception(exc)
    click.echo(line, err=True)
    if not _debug(ctx) and not isinstance(exc, KernelTracerError):
        click.echo("(run with --debug for the traceback)", err=True)


def _debug(ctx: click.Context) -> bool:
    root = ctx.find_root()
    return bool((root.obj or {}).get("debug")) or os.environ.get("KT_DEBUG", "") not in ("", "0")


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kerneltracer")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors (or set KT_DEBUG=1).")
@click.pass_context
def root(ctx: click.Context, debug: bool) -> None:
    """Trace which operators, kernels, graphs and compile artefacts models really run.

    Every (model, tracer) runs in its own worker process, so one crash, hang or OOM
    never takes the batch down. Start with `kerneltracer run CONFIG`.
    """
    ctx.obj = {"debug": debug}


def _register() -> None:
    # Explicit registry of sub-commands: one line per command module.
    from kerneltracer.cli import (
        analyze_cmd,
        config_cmd,
        models_cmd,
        run_cmd,
        status_cmd,
        tracers_cmd,
    )

    root.add_command(run_cmd.run)
    root.add_command(status_cmd.status)
    root.add_command(tracers_cmd.tracers)
    root.add_command(config_cmd.config)
    root.add_command(models_cmd.models)
    root.add_command(analyze_cmd.analyze)
    from kerneltracer.cli.download_cmd import download

    root.add_command(download)
    from kerneltracer.cli.slurm_cmd import slurm

    root.add_command(slurm)
    # Analysis commands (each module defines one click command or group).
    from kerneltracer.cli.report_cmd import report

    root.add_command(report)
    from kerneltracer.cli.logs_cmd import logs

    root.add_command(logs)
    from kerneltracer.cli.records_cmd import records

    root.add_command(records)
    from kerneltracer.cli.fx_cmd import fx

    root.add_command(fx)
    from kerneltracer.cli.timeline_cmd import timeline

    root.add_command(timeline)
    from kerneltracer.cli.coverage_cmd import coverage

    root.add_command(coverage)
    from kerneltracer.cli.diff_cmd import diff

    root.add_command(diff)
    from kerneltracer.cli.corpus_cmd import corpus
    from kerneltracer.cli.readiness_cmd import readiness
    from kerneltracer.cli.replay_cmd import replay

    root.add_command(corpus)
    root.add_command(replay)
    root.add_command(readiness)


_register()


def main() -> None:
    root(prog_name="kerneltracer")


if __name__ == "__main__":
    main()
