"""``python -m kerneltracer.analysis.structured_logs LOG -o OUT``: the ``logs`` command alone.

Same options as ``kerneltracer logs``, without importing the rest of the CLI (useful in
scripts and for timing the analysis itself).
"""

from __future__ import annotations

import sys

import click

from kerneltracer.cli.logs_cmd import logs
from kerneltracer.errors import KernelTracerError


def main() -> None:
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
