"""``kerneltracer replay CORPUS``: run every op signature on real inputs, check and time it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kerneltracer.cli.options import input_limit_options, out_option, strict_option

# corpus.replay.DEVICES, spelt here so that `replay --help` loads no replay code (a test
# keeps the two equal).
DEVICES = ("cpu", "cuda")

if TYPE_CHECKING:
    from kerneltracer.corpus.model import Signature
    from kerneltracer.corpus.replay import ReplayOptions, ReplayResult

FAILURES_SHOWN = 50


@click.command()
@click.argument("corpus_path", metavar="CORPUS", type=click.Path(path_type=Path, exists=True))
@click.option("--device", type=click.Choice(DEVICES), default="cpu", show_default=True)
@click.option("--ops", help="Only ops matching these globs (comma-separated): 'aten.mm*,softmax'.")
@click.option("--top", type=int, help="Only the N signatures with the most calls.")
@click.option("--repeats", default=5, show_default=True, help="Timed samples per signature.")
@click.option("--batch-size", default=64, show_default=True, help="Signatures per worker.")
@click.option("--timeout", "timeout_s", default=60.0, show_default=True, help="Seconds per op.")
@click.option("--threads", default=1, show_default=True, help="torch threads (0: torch default).")
@out_option("Output directory (default: replay/ beside the corpus).")
@strict_option("Fail on any malformed line of an operator_inp log.")
@click.option(
    "--import",
    "imports",
    multiple=True,
    help="Module the workers import first (a backend extension or custom ops); repeatable.",
)
@input_limit_options
def replay(
    corpus_path: Path,
    device: str,
    ops: str | None,
    top: int | None,
    repeats: int,
    batch_size: int,
    timeout_s: float,
    threads: int,
    out_dir: Path | None,
    strict: bool,
    imports: tuple[str, ...],
) -> None:
    """Replay a corpus: build inputs, run each op, check output shapes, time it.

    CORPUS is a `kerneltracer corpus` output dir, its corpus.parquet, or an operator_inp
    log (.txt; no recorded outputs, so shapes are not checked). Each signature gets random
    inputs with the recorded shapes, strides, dtypes and integer ranges; it runs in a worker
    process, so an op that crashes or hangs is reported and the replay goes on. Writes
    replay.csv, replay_models.csv (estimated share of each model's op time) and replay.json.
    Exits 1 when any signature did not replay.
    """
    from kerneltracer.cli.options import split_values
    from kerneltracer.core.interrupts import signal_of
    from kerneltracer.core.layout import replay_dir
    from kerneltracer.corpus.replay import ReplayOptions, ReplayResult, select
    from kerneltracer.corpus.replay import replay as run_replay
    from kerneltracer.errors import InputFileError, UsageError

    if repeats < 1 or batch_size < 1 or timeout_s <= 0 or threads < 0:
        raise UsageError("--repeats, --batch-size and --timeout must be positive")
    sigs = _load(corpus_path, strict)
    if not sigs:
        raise InputFileError(f"{corpus_path}: no op signature in it, nothing to replay")
    chosen = select(sigs, ops, top)
    if not chosen:
        raise UsageError(f"no signature matches --ops {ops!r} (corpus has {len(sigs)})")
    options = ReplayOptions(
        device=device,
        repeats=repeats,
        batch_size=batch_size,
        timeout_s=timeout_s,
        threads=threads or None,
        imports=tuple(split_values(imports)),
    )
    base = corpus_path if corpus_path.is_dir() else corpus_path.parent
    out = out_dir if out_dir is not None else replay_dir(base)
    click.echo(f"replaying {len(chosen)} of {len(sigs)} signature(s) on {device}")
    start = time.perf_counter()
    finished: list[ReplayResult] = []
    try:
        run_replay(chosen, options, on_result=finished.append)
    except KeyboardInterrupt as exc:
        # What ran is kept; the signature in flight and those not reached are recorded
        # interrupted (the worker's process group is already gone), then the interrupt goes on.
        why = f"replay interrupted by {signal_of(exc)}"
        rest = [ReplayResult(sig, "interrupted", why) for sig in chosen[len(finished) :]]
        _write(finished + rest, options, out, time.perf_counter() - start)
        raise
    if any(_write(finished, options, out, time.perf_counter() - start)):
        raise SystemExit(1)


def _write(
    results: list[ReplayResult], options: ReplayOptions, out: Path, wall: float
) -> list[str]:
    """Write the reports and print the summary; the statuses that are not ok."""
    from kerneltracer.corpus.replay_export import write_replay

    written = write_replay(results, options, out, wall)
    _print_summary(results, wall)
    click.echo(f"wrote {len(written)} files to {out}")
    return [r.status for r in results if r.status != "ok"]


def _load(path: Path, strict: bool) -> list[Signature]:
    from kerneltracer.corpus.logs import signatures_from_log
    from kerneltracer.corpus.schema import PARQUET, read_signatures
    from kerneltracer.errors import KernelTracerError
    from kerneltracer.inputguard import InputLimits, check_input_file

    # The corpus readers load the whole file: bounded here like every user file.
    target = path / PARQUET if path.is_dir() else path
    if target.exists() or not path.is_dir():
        size = check_input_file(target, "corpus").st_size
        InputLimits.from_env().check_bytes(target, size, "corpus")
    if path.is_file() and path.suffix == ".txt":
        sigs, log = signatures_from_log(path)
        for kind, n in sorted(log.malformed.items()):
            click.echo(f"malformed lines ({kind}): {n}", err=True)
        for line in log.first_errors:
            click.echo(f"  {line}", err=True)
        if strict and log.malformed:
            raise KernelTracerError(f"{sum(log.malformed.values())} malformed line(s) and --strict")
        return sigs
    return read_signatures(path)


def _print_summary(results: list[ReplayResult], wall: float) -> None:
    from collections import Counter

    counts = Counter(r.status for r in results)
    rate = len(results) / wall if wall > 0 else 0.0
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    click.echo(f"{len(results)} signature(s) in {wall:.1f}s ({rate:.1f}/s): {parts}")
    bad = [r for r in results if r.status != "ok"]
    for r in bad[:FAILURES_SHOWN]:
        click.echo(f"  {r.status:<8} {r.sig.op} [{r.sig.sig_id}]: {r.reason}")
    if len(bad) > FAILURES_SHOWN:
        click.echo(f"  ... and {len(bad) - FAILURES_SHOWN} more (see replay.csv)")
    by_op: dict[str, float] = {}
    for r in results:
        if r.total_us is not None:
            by_op[r.sig.op] = by_op.get(r.sig.op, 0.0) + r.total_us
    if by_op:
        click.echo("top ops by estimated time (calls x time per call, summed over models):")
        for op, us in sorted(by_op.items(), key=lambda kv: -kv[1])[:10]:
            click.echo(f"  {us / 1000:>10.3f} ms  {op}")
