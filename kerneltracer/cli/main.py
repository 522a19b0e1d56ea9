"""Root of the ``kerneltracer`` CLI: the command group and the error boundary.

Expected failures (:class:`KernelTracerError`) print one line and exit with their code;
anything else prints one line too, plus the traceback only with ``--debug`` / ``KT_DEBUG=1``.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from kerneltracer._version import __version__
from kerneltracer.core.registry import Entry, Registry
from kerneltracer.errors import KernelTracerError, one_line


class _Root(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return super().get_command(ctx, cmd_name)
        return _COMMANDS[cmd_name]

    def invoke(self, ctx: click.Context) -> Any:
        from kerneltracer.core.interrupts import interrupt_on_signals, signal_of

        try:
            with interrupt_on_signals():
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt as exc:
            click.echo(f"interrupted ({signal_of(exc)})", err=True)
            sys.exit(130)
        except KernelTracerError as exc:
            _report(ctx, exc, f"error: {one_line(str(exc))}")
            sys.exit(exc.exit_code)
        except OSError as exc:  # the machine's state (disk full, permissions), not a bug
            from kerneltracer.core.oserrors import os_error_text

            _report(ctx, exc, f"error: {one_line(os_error_text(exc))}")
            sys.exit(1)
        except Exception as exc:
            _report(ctx, exc, f"internal error: {type(exc).__name__}: {one_line(str(exc))}")
            sys.exit(1)


def _report(ctx: click.Context, exc: BaseException, line: str) -> None:
    if _debug(ctx):
        traceback.print_exception(exc)
    click.echo(line, err=True)
    if not _debug(ctx) and not isinstance(exc, KernelTracerError | OSError):
        click.echo("(run with --debug for the traceback)", err=True)


def _debug(ctx: click.Context) -> bool:
    from kerneltracer.environ import KtEnv

    root = ctx.find_root()
    return bool((root.obj or {}).get("debug")) or KtEnv.read().debug


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


# Sub-commands, each imported only when it runs (or help lists it): importing them all
# cost every command ~0.1 s of start-up (rich for status, the replay machinery…), so each
# names itself here too (a click command's name; loading checks they agree).
_COMMANDS: Registry[click.Command] = Registry(
    "command",
    [
        Entry("run", ".run_cmd:run"),
        Entry("status", ".status_cmd:status"),
        Entry("tracers", ".tracers_cmd:tracers"),
        Entry("config", ".config_cmd:config"),
        Entry("models", ".models_cmd:models"),
        Entry("analyze", ".analyze_cmd:analyze"),
        Entry("download", ".download_cmd:download"),
        Entry("slurm", ".slurm_cmd:slurm"),
        Entry("report", ".report_cmd:report"),
        Entry("logs", ".logs_cmd:logs"),
        Entry("records", ".records_cmd:records"),
        Entry("fx", ".fx_cmd:fx"),
        Entry("timeline", ".timeline_cmd:timeline"),
        Entry("coverage", ".coverage_cmd:coverage"),
        Entry("diff", ".diff_cmd:diff"),
        Entry("corpus", ".corpus_cmd:corpus"),
        Entry("replay", ".replay_cmd:replay"),
        Entry("readiness", ".readiness_cmd:readiness"),
        Entry("compile-health", ".compile_health_cmd:compile_health"),
        Entry("export", ".export_cmd:export"),
    ],
    package=__package__,
)


def main() -> None:
    root(prog_name="kerneltracer")


if __name__ == "__main__":
    main()
