"""``kerneltracer tracers``."""

from __future__ import annotations

import click


@click.command()
def tracers() -> None:
    """List the registered tracers.

    Each with its frameworks, exclusive group, version, outputs and the artefact kinds it
    writes (what analyses and coverage select on)."""
    from rich.table import Table

    from kerneltracer.cli.tables import console
    from kerneltracer.tracers.registry import TRACERS

    table = Table(title="tracers")
    table.add_column("name", no_wrap=True)
    for col in ("frameworks", "group", "version", "what it records", "outputs", "kinds"):
        table.add_column(col, overflow="fold")
    for name, cls in TRACERS.items():
        table.add_row(
            name,
            ", ".join(sorted(cls.frameworks)),
            cls.exclusive_group or "-",
            cls.version,
            cls.summary,
            cls.outputs_doc,
            ", ".join(dict.fromkeys(cls.artefacts.values())) or "-",
        )
    console().print(table)
