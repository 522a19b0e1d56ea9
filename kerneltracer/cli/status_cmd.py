"""``kerneltracer status RUN_DIR``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kerneltracer.cli.tables import JobRow


def collect(run_dir: Path, keys: set[str] | None = None) -> list[JobRow]:
    """One row per job the run planned (run.json, or a shard's run.shard-*.json) or that has
    a status file; only ``keys`` when given."""
    from kerneltracer.errors import RunDirError
    from kerneltracer.jobs import JOBS_DIR, STATUS_FILE
    from kerneltracer.jsonio import read_json
    from kerneltracer.status import read_raw_status

    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    planned: dict[str, dict[str, str]] = {}
    manifests = sorted(run_dir.glob("run*.json"))
    for manifest in manifests:
        try:
            for j in read_json(manifest).get("jobs", []):
                planned[j["key"]] = j
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            pass
    jobs_root = run_dir / JOBS_DIR
    found = (
        {str(p.parent.relative_to(jobs_root)) for p in jobs_root.glob(f"*/*/{STATUS_FILE}")}
        if jobs_root.is_dir()
        else set()
    )
    if not planned and not found and not manifests:
        raise RunDirError(f"{run_dir} is not a kerneltracer run dir (no run.json, no job status)")
    rows = []
    for key in list(planned) + sorted(found - set(planned)):
        if keys is not None and key not in keys:
            continue
        raw = read_raw_status(jobs_root / key)
        rows.append(row_of(key, raw, planned.get(key, {}), key in found))
    return rows


def row_of(key: str, raw: dict[str, Any] | None, meta: dict[str, str], found: bool) -> JobRow:
    """A table row from a status file's dict (or its absence) and the run manifest's entry."""
    if raw is None or not isinstance(raw.get("status"), str):
        tracer, _, mode = key.split("/", 1)[-1].partition(".")
        return JobRow(
            key,
            meta.get("model", key.split("/")[0]),
            meta.get("tracer", tracer),
            meta.get("mode", mode or "eval"),
            "pending",
            None,
            None,
            "no valid status file" if found else None,
        )
    model = raw["model"] if isinstance(raw.get("model"), dict) else {}
    return JobRow(
        key=key,
        model=str(model.get("display", key.split("/")[0])),
        tracer=str(raw.get("tracer", "")),
        mode=str(raw.get("mode", "eval")),
        status=raw["status"],
        duration_s=raw.get("duration_s"),
        peak_rss_bytes=raw.get("tree_peak_rss_bytes") or raw.get("peak_rss_bytes"),
        reason=raw.get("reason"),
    )


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per job instead.")
@click.option("--full", is_flag=True, help="Always print the full models × tracers grid.")
def status(run_dir: Path, as_json: bool, full: bool) -> None:
    """Show every job of RUN_DIR: models × tracers with status, and why any is not ok."""
    from dataclasses import asdict

    from kerneltracer.cli.tables import console, status_table, summary_line
    from kerneltracer.jsonio import dumps

    rows = collect(run_dir)
    if as_json:
        for row in rows:
            click.echo(dumps(asdict(row), indent=False).decode())
        return
    con = console()
    con.print(status_table(rows, full=full))
    con.print(summary_line(rows), highlight=False)
