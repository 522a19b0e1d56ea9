"""``kerneltracer models build-tiny DIR``."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def models() -> None:
    """Model helpers."""


@models.command("build-tiny")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True, help="Rebuild even if the models are already there.")
def build_tiny(directory: Path, force: bool) -> None:
    """Write tiny random-weight Llama, GPT-2 and BERT (with trained tokenizers) into DIRECTORY.

    Offline and deterministic; loadable with AutoModel*/AutoTokenizer.from_pretrained.
    """
    from kerneltracer.tinymodels import build_tiny_models

    for name, (path, built) in build_tiny_models(directory, force=force).items():
        click.echo(f"{'built' if built else 'present'}  {name}  {path}")
