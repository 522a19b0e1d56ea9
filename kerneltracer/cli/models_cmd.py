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
    """Write tiny random-weight Llama, GPT-2, BERT and MoE models into DIRECTORY.

    Each with a trained tokenizer; the MoE (Qwen3-MoE, 4 experts) takes TP 2 and EP 2.

    Offline and deterministic; loadable with AutoModel*/AutoTokenizer.from_pretrained.
    """
    from kerneltracer.worker.frameworks.huggingface.tiny import build_tiny_models

    for name, (path, built) in build_tiny_models(directory, force=force).items():
        click.echo(f"{'built' if built else 'present'}  {name}  {path}")


@models.command("build-zoo")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), required=False)
@click.option("--only", "names", multiple=True, help="Zoo entries to build (repeatable).")
@click.option("--list", "list_only", is_flag=True, help="List the zoo's entries and exit.")
def build_zoo(directory: Path | None, names: tuple[str, ...], list_only: bool) -> None:
    """Write one tiny random-weight model per architecture of the zoo into DIRECTORY.

    Decoders, encoders with every task head, encoder-decoders, MoE, state-space, hybrid,
    recurrent, vision, video, detection, audio, time-series and multimodal models, built
    offline from transformers configs (no tokenizers but XLM's: inputs are seeded random
    ids). Entries already built by this version are kept.
    """
    from kerneltracer.cli.options import split_values
    from kerneltracer.worker.frameworks.huggingface.zoo import ZOO, build_zoo

    if list_only:
        for entry in ZOO:
            sibling = f"  (sibling of {entry.sibling})" if entry.sibling else ""
            click.echo(f"{entry.name:24} {entry.family:16} {entry.arch}{sibling}")
        return
    if directory is None:
        raise click.UsageError("give the DIRECTORY to build into (or --list)")
    for path in build_zoo(directory, split_values(names) or None):
        click.echo(f"{path.name:16} {path}")
