"""Small helpers shared by the CLI's commands."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kerneltracer.inputguard import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_EVENTS,
    EVENTS_ENV,
    SIZE_ENV,
    format_size,
    parse_size,
)

if TYPE_CHECKING:
    from kerneltracer.costmodel import Device

F = TypeVar("F", bound=Callable[..., Any])


def single_threaded_blas() -> None:
    """Have numpy's OpenBLAS start one thread, not one per core, unless the user chose.

    Call before numpy is first imported. The trace and log readers never multiply
    matrices, yet OpenBLAS starts its threads when numpy is imported and they spin while
    it loads: 0.1-0.2 s of CPU on two cores, a third of `timeline` on a tiny trace."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def out_option(help: str, *, required: bool = False, dest: str = "out_dir") -> Callable[[F], F]:
    """``-o/--out DIR``, the output directory of every command that writes files; ``help``
    says what goes there and the command's default."""
    return click.option(
        "-o",
        "--out",
        dest,
        type=click.Path(path_type=Path, file_okay=False),
        required=required,
        help=help,
    )


def strict_option(help: str) -> Callable[[F], F]:
    """``--strict``: fail instead of counting what could not be read; ``help`` says on what
    and what is then written (bad input is otherwise counted, never silent)."""
    return click.option("--strict", is_flag=True, help=help)


def models_option(command: F) -> F:
    """``--models PATTERN``: the models of a config a command works on (``split_values``)."""
    return click.option(
        "--models",
        multiple=True,
        metavar="PATTERN",
        help="Only models whose id/path/name matches a glob (repeat or comma-separate).",
    )(command)


def split_values(values: tuple[str, ...]) -> list[str]:
    """Values of a repeatable option that also accepts commas: ``--x a,b --x c`` → a, b, c."""
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


# The help's list of the built-in table (costmodel/devices.yaml; a test keeps them equal).
BUILT_IN_DEVICES = "H100 (default), H200, A100, B200, MI300X, MI250X, MI250"


def device_options_for(default: str = "") -> Callable[[F], F]:
    """``--device NAME`` and ``--devices FILE``: the device estimated op times are for;
    ``default``, where given, says which one the command takes without ``--device``.

    No default value here: the device table (and the cost model with it) loads only when a
    command runs (:func:`resolve_device`), never for ``--help``."""

    without = f" Without it: {default}." if default else ""

    def decorate(command: F) -> F:
        command = click.option(
            "--devices",
            "devices_file",
            type=click.Path(path_type=Path, dir_okay=False, exists=True),
            help="A devices YAML merged over the built-in table (same schema).",
        )(command)
        return click.option(
            "--device",
            "device_name",
            metavar="NAME",
            help="Device for estimated times (roofline lower bound from shapes): "
            f"{BUILT_IN_DEVICES} or one from --devices.{without}",
        )(command)

    return decorate


device_options = device_options_for()


def resolve_device(name: str | None, devices_file: Path | None) -> Device:
    """The named device (the cost model's default when None) of the built-in table merged
    with ``devices_file``; a bad name or file is a usage error listing the valid choices."""
    from kerneltracer.costmodel import DEFAULT_DEVICE, load_devices

    return load_devices(devices_file).get(name or DEFAULT_DEVICE)


class MemorySize(click.ParamType):
    """A byte count with an optional binary unit: 512M, 8G, 1.5GiB; 0 means no limit."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        size = parse_size(str(value))
        if size is None:
            self.fail(f"{value!r} is not a size (e.g. 512M, 8G, 1.5GiB, or 0 for none)", param, ctx)
        return size


def _env_option(flag: str, kind: click.ParamType, env: str, help: str) -> Callable[[F], F]:
    """An option whose value goes into ``env`` (its default when not given): the readers
    (kerneltracer.inputguard) take their limits from the environment, so the value also
    reaches the analysis and replay worker processes a command starts."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            os.environ[env] = str(value)
        return value

    return click.option(
        flag,
        type=kind,
        default=None,
        expose_value=False,
        callback=callback,
        help=f"{help} (or ${env}).",
    )


def input_limit_options(func: F) -> F:
    """``--max-input-size`` and ``--max-events``: the bounds every reader of user files keeps."""
    func = _env_option(
        "--max-events",
        click.IntRange(min=0),
        EVENTS_ENV,
        "Most events (trace events, log records, rows) read from one input file; "
        f"0 = no limit. Default {DEFAULT_MAX_EVENTS:,}",
    )(func)
    return _env_option(
        "--max-input-size",
        MemorySize(),
        SIZE_ENV,
        "Most bytes read from one input file once decompressed, e.g. 8G; 0 = no "
        f"limit. Default {format_size(DEFAULT_MAX_BYTES)}",
    )(func)


_PROBLEMS_SHOWN = 20


def echo_problems(lines: list[str], prefix: str = "unreadable input") -> None:
    """One stderr line per unreadable input, the first _PROBLEMS_SHOWN of them: a run of
    thousands of damaged jobs must not bury the summary (--strict still counts them all)."""
    for line in lines[:_PROBLEMS_SHOWN]:
        click.echo(f"{prefix}: {line}", err=True)
    if len(lines) > _PROBLEMS_SHOWN:
        more = len(lines) - _PROBLEMS_SHOWN
        click.echo(f"{prefix}: ... and {more} more ({len(lines)} in all)", err=True)
