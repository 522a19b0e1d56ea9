"""Write a :class:`DiffReport` as ``diff.json`` and a self-contained ``diff.html``.

The page loads nothing at view time (a Content-Security-Policy forbids it); every model id,
op and failure reason goes through jinja2 autoescaping.
"""

from __future__ import annotations

from pathlib import Path

from kerneltracer.core.templates import html_environment
from kerneltracer.coverage.diff_schema import DiffReport
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_text

DIFF_JSON = "diff.json"
DIFF_HTML = "diff.html"


def render_diff_html(report: DiffReport) -> str:
    env = html_environment("kerneltracer.coverage")
    return env.get_template("diff.html.j2").render(report=report)


def write_diff(report: DiffReport, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out_dir / DIFF_JSON, report.model_dump_json(indent=2).encode() + b"\n")
    atomic_write_text(out_dir / DIFF_HTML, render_diff_html(report))
    return [out_dir / DIFF_JSON, out_dir / DIFF_HTML]
