"""Writing a fleet's compile health: the table (Parquet + CSV), the long tables of breaks
and recompiles (CSV), ``compile_health.json`` (summary + per-job detail) and the page."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from kerneltracer.analysis.compile_health.fleet import FleetHealth
from kerneltracer.analysis.compile_health.health import COUNT_COLUMNS, TEXTS_DIR, JobHealth
from kerneltracer.analysis.compile_health.records import PHASES
from kerneltracer.core.arrowrows import write_parquet
from kerneltracer.jsonio import atomic_tree, atomic_write_json, atomic_write_text

_TABLE_PARQUET = "compile_health.parquet"
_TABLE_CSV = "compile_health.csv"
_BREAKS_CSV = "compile_breaks.csv"
_RECOMPILES_CSV = "compile_recompiles.csv"
_COMPILE_IDS_CSV = "compile_ids.csv"
SUMMARY_JSON = "compile_health.json"
_PAGE = "compile_health.html"
# 2: each job's lists are "break_list" / "recompile_list" / "compile_list", never the
# name of a count column of its row ("recompiles" is the count, as in the CSV).
SCHEMA_VERSION = 2

_STRING_COLUMNS = (
    "model",
    "job",
    "mode",
    "job_status",
    "compile_status",
    "fail_type",
    "fail_reason",
    "weights",
)
_FLOAT_COLUMNS = ("compile_time_s", *(f"{p}_s" for p in PHASES), "dynamo_before_restart_s")
_TAIL_COLUMNS = ("break_keys", "options")
TABLE_COLUMNS = (*_STRING_COLUMNS, *COUNT_COLUMNS, *_FLOAT_COLUMNS, *_TAIL_COLUMNS)


def write_fleet(fleet: FleetHealth, out: Path) -> list[Path]:
    """Every file of the fleet's compile health into ``out``; returns them, page last."""
    from kerneltracer.analysis.compile_health.page import render_page

    out.mkdir(parents=True, exist_ok=True)
    rows = [j.row() for j in fleet.jobs]
    written = [
        _write_parquet(rows, out / _TABLE_PARQUET),
        _write_csv(out / _TABLE_CSV, TABLE_COLUMNS, rows),
        _write_csv(out / _BREAKS_CSV, BREAK_COLUMNS, break_rows(fleet.jobs)),
        _write_csv(out / _RECOMPILES_CSV, RECOMPILE_COLUMNS, recompile_rows(fleet.jobs)),
        _write_csv(out / _COMPILE_IDS_CSV, COMPILE_ID_COLUMNS, compile_id_rows(fleet.jobs)),
    ]
    written += _write_texts(fleet, out)
    atomic_write_json(out / SUMMARY_JSON, document(fleet))
    written.append(out / SUMMARY_JSON)
    atomic_write_text(out / _PAGE, render_page(fleet))
    written.append(out / _PAGE)
    return written


def _write_texts(fleet: FleetHealth, out: Path) -> list[Path]:
    """The compile ids' texts, as one folder that replaces the last one whole (so texts
    of an earlier compile health here never pass for this one's)."""
    texts = {rel: text for j in fleet.jobs for rel, text in j.texts.items()}
    if not texts:
        if (out / TEXTS_DIR).is_dir():
            with atomic_tree(out / TEXTS_DIR):
                pass
        return []
    prefix = f"{TEXTS_DIR}/"
    with atomic_tree(out / TEXTS_DIR) as stage:
        made: set[Path] = set()
        for rel, text in texts.items():
            path = stage / rel.removeprefix(prefix)
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            path.write_bytes(text.encode("utf-8"))
    return [out / rel for rel in texts]


def document(fleet: FleetHealth) -> dict[str, Any]:
    """``compile_health.json``: what the diff reads back (no need of the Parquet)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "summary": fleet.summary(),
        "jobs": [_job_document(j) for j in fleet.jobs],
    }


def _job_document(j: JobHealth) -> dict[str, Any]:
    return {
        **j.row(),
        "options": j.options,
        "break_list": [vars(b) for b in j.breaks],
        "recompile_list": [vars(r) for r in j.recompiles],
        "compile_list": [vars(c) for c in j.compiles],
        "problems": j.problems,
    }


BREAK_COLUMNS = (
    "model",
    "key",
    "gb_id",
    "gb_type",
    "frame",
    "code",
    "occurrences",
    "compile_ids",
    "skipped_function",
    "explanation",
    "hints",
    "url",
)
RECOMPILE_COLUMNS = (
    "model",
    "compile_id",
    "function",
    "frame",
    "reason_key",
    "reason",
    "resumes_after_line",
    "after_breaks",
)


COMPILE_ID_COLUMNS = (
    "model",
    "job",
    "compile_id",
    "rank",
    "function",
    "frame",
    "status",
    "fail_type",
    "fail_reason",
    "compile_time_s",
    *(f"{p}_s" for p in PHASES),
    "dynamo_before_restart_s",
    "graphs",
    "graph_ops",
    "guards",
    "shape_env_guards",
    "breaks",
    "restart_reasons",
    "recompile_reasons",
    "cache_hit",
    "cache_miss",
    "kernels_cpp",
    "kernels_triton",
    "kernels_extern",
)


def compile_id_rows(jobs: list[JobHealth]) -> list[dict[str, Any]]:
    """One row per compile id of every job: the page's per-compile-id tables."""
    return [
        {
            **vars(c),
            "model": j.model,
            "job": j.job,
            "compile_time_s": c.total_s,
            **{f"{p}_s": c.phase_s.get(p) for p in PHASES},
            "breaks": "\n".join(c.breaks),
            "restart_reasons": "\n".join(c.restart_reasons),
            "recompile_reasons": "\n".join(c.recompile_reasons),
            **{f"cache_{k}": c.cache.get(k, 0) for k in ("hit", "miss")},
            **{f"kernels_{k}": c.kernels.get(k, 0) for k in ("cpp", "triton", "extern")},
        }
        for j in jobs
        for c in j.compiles
    ]


def break_rows(jobs: list[JobHealth]) -> list[dict[str, Any]]:
    return [
        {**vars(b), "compile_ids": " ".join(b.compile_ids), "hints": "\n".join(b.hints)}
        for j in jobs
        for b in j.breaks
    ]


def recompile_rows(jobs: list[JobHealth]) -> list[dict[str, Any]]:
    return [
        {**vars(r), "after_breaks": " ".join(r.after_breaks)} for j in jobs for r in j.recompiles
    ]


def _write_csv(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())
    return path


def arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [pa.field(c, pa.string()) for c in _STRING_COLUMNS]
        + [pa.field(c, pa.int64(), nullable=False) for c in COUNT_COLUMNS]
        # null: a truncated or unusable log's times are unknown
        + [pa.field(c, pa.float64()) for c in _FLOAT_COLUMNS]
        + [pa.field(c, pa.string(), nullable=False) for c in _TAIL_COLUMNS]
    )


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> Path:
    return write_parquet(path, rows, arrow_schema())
