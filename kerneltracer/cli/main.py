"""Root of the ``kerneltracer`` CLI: the command group and the error boundary.

Expected failures (:class:`KernelTracerError`) print one line and exit with their code;
anything else prints one line too, plus the traceback only with ``--debug`` / ``KT_DEBUG=1``.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import click

from kerneltracer._version import __version__
from kerneltracer.core.registry import Entry, Registry
from kerneltracer.errors import KernelTracerError, one_line


class _Root(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list as click writes it, but from each command's summary in the
        table: listing the commands imports none of them."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, _summary(name).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

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


def _summary(name: str) -> click.Command:
    """A stand-in for the command ``name`` that only knows the first sentence of its help."""
    return click.Command(name, help=_TABLE[name][1])


def _report(ctx: click.Context, exc: BaseException, line: str) -> None:
    if _debug(ctx):
        import traceback  # ~3 ms: only when one is shown

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


# Sub-commands, each imported only when it runs: importing them all cost every command
# ~0.1 s of start-up (rich for status, the replay machinery…) and `--help` 0.5 s under load.
# So each is named here with the first sentence of its help, which the command list shows
# (loading checks the names agree; tests/spine/test_cli_startup.py that the list is the one
# the loaded commands give).
_TABLE: dict[str, tuple[str, str]] = {
    "run": (
        ".run_cmd:run",
        "Trace every (model, tracer) of CONFIG, one isolated worker process per job.",
    ),
    "status": (
        ".status_cmd:status",
        "Show every job of RUN_DIR: models × tracers with status, and why any is not ok.",
    ),
    "tracers": (".tracers_cmd:tracers", "List the registered tracers."),
    "config": (
        ".config_cmd:config",
        "Inspect run configs: JSON Schema, validation and the jobs a config plans.",
    ),
    "models": (".models_cmd:models", "Model helpers."),
    "analyze": (
        ".analyze_cmd:analyze",
        "Run every applicable analysis on every finished job of RUN_DIR.",
    ),
    "download": (
        ".download_cmd:download",
        "Download and check every model of CONFIG, as `run` does before tracing.",
    ),
    "slurm": (
        ".slurm_cmd:slurm",
        "Run a config on a Slurm cluster: one array task per shard, resumable.",
    ),
    "report": (
        ".report_cmd:report",
        "Build the run report of RUN_DIR: a static HTML page set plus JSON and CSV.",
    ),
    "logs": (".logs_cmd:logs", "Analyse TORCH_TRACE structured logs (tlparse-compatible reports)."),
    "records": (
        ".records_cmd:records",
        "Turn a GE profiling log or a worker phase log into tracing / summary / op statistics.",
    ),
    "fx": (
        ".fx_cmd:fx",
        "Optimise FX graphs (redundant-op elimination, recomputation) and find redundancy.",
    ),
    "timeline": (
        ".timeline_cmd:timeline",
        "Analyse chrome traces (torch.profiler / Kineto / vLLM, .json or .json.gz).",
    ),
    "coverage": (
        ".coverage_cmd:coverage",
        "Which ops each model runs: coverage of every ok torch_dispatch / profiler job.",
    ),
    "diff": (
        ".diff_cmd:diff",
        "Compare two runs (e.g. before/after a torch upgrade), model by model.",
    ),
    "corpus": (
        ".corpus_cmd:corpus",
        "The replayable op-input corpus of a run: every unique aten op signature.",
    ),
    "replay": (
        ".replay_cmd:replay",
        "Replay a corpus: build inputs, run each op, check output shapes, time it.",
    ),
    "readiness": (
        ".readiness_cmd:readiness",
        "Backend readiness: every unsupported op per model, and ops ranked by models unblocked.",
    ),
    "compile-health": (
        ".compile_health_cmd:compile_health",
        "Compile health per job and for the fleet.",
    ),
    "export": (".export_cmd:export", "Export a run's records to other tools' formats."),
}
_COMMANDS: Registry[click.Command] = Registry(
    "command", [Entry(name, target) for name, (target, _) in _TABLE.items()], package=__package__
)


def main() -> None:
    try:
        root(prog_name="kerneltracer")
    finally:
        # The process ends here: without this its shutdown re-scans every object the
        # command's imports made for cycles, three times (4% of `timeline`'s instructions
        # on a tiny trace). Frozen objects are only spared the cycle search; nothing is left open.
        gc.freeze()


if __name__ == "__main__":
    main()
