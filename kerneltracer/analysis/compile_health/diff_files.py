"""The files of ``kerneltracer diff``'s compile level: the diff as JSON, CSV and a page.

Apart from diff.py (the comparison) and page.py (the HTML), which both stay free of files.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from kerneltracer.analysis.compile_health.diff import CompileDiff
from kerneltracer.analysis.compile_health.page import render_diff
from kerneltracer.jsonio import atomic_write_json, atomic_write_text

DIFF_JSON = "compile_diff.json"
_DIFF_CSV = "compile_diff.csv"
DIFF_HTML = "compile_diff.html"


def write_compile_diff(
    diff: CompileDiff, out: Path, run_a: str = "", run_b: str = ""
) -> list[Path]:
    """compile_diff.json, .csv and .html into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / DIFF_HTML, render_diff(diff, run_a, run_b))
    atomic_write_json(out / DIFF_JSON, diff.as_json())
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("model", "job", "field", "before", "after"))
    for j in diff.jobs:
        for c in [*([j.status] if j.status else []), *j.counts, *j.times]:
            w.writerow((j.model, j.job, c.field, c.before, c.after))
        for x in j.breaks_added:
            w.writerow((j.model, j.job, "break", "", f"{x['key']} at {x['location']}"))
        for x in j.breaks_removed:
            w.writerow((j.model, j.job, "break", f"{x['key']} at {x['location']}", ""))
        for r in j.recompile_reasons_added:
            w.writerow((j.model, j.job, "recompile_reason", "", r))
        for r in j.recompile_reasons_removed:
            w.writerow((j.model, j.job, "recompile_reason", r, ""))
    for k in diff.only_in_a:
        w.writerow(("", k, "job", "present", "absent"))
    for k in diff.only_in_b:
        w.writerow(("", k, "job", "absent", "present"))
    atomic_write_text(out / _DIFF_CSV, buf.getvalue())
    return [out / DIFF_JSON, out / _DIFF_CSV, out / DIFF_HTML]
