"""A model traced in two modes and two phases is one model with four variants, in every view:
status (table and --json), the report's grid and coverage page, and the coverage exports.

The run is hand-made (real status files and dispatch summaries, no worker), so the test is
fast; the e2e browser test covers a real run with decode and generate jobs.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import orjson
import pytest

from kerneltracer.core.layout import job_key
from kerneltracer.coverage import build_coverage
from kerneltracer.report import build_report
from tests.coverage.synth import dispatch_files, make_job
from tests.helpers import kt

VARIANTS = [("eval", "prefill"), ("eval", "decode"), ("train", "prefill"), ("train", "decode")]
LABELS = {"eval · prefill", "eval · decode", "train · prefill", "train · decode"}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    planned = []
    for mode, phase in VARIANTS:
        # Distinct call counts per variant: a view that merged two variants would show it.
        calls = 10 * (VARIANTS.index((mode, phase)) + 1)
        ops = {"aten.mm.default": (calls, 1), "aten.add.Tensor": (2, 1)}
        if phase == "decode":
            ops["aten.index_select.default"] = (1, 1)
        make_job(
            run_dir,
            "org/llm",
            "torch_dispatch",
            dispatch_files(ops),
            mode=mode,
            phase=phase,
            slug="org--llm",
        )
        planned.append(("org--llm", "org/llm", mode, phase))
    bert = dispatch_files({"aten.mm.default": (3, 1)})
    make_job(run_dir, "org/bert", "torch_dispatch", bert, slug="org--bert")
    planned.append(("org--bert", "org/bert", "eval", "prefill"))
    manifest = {
        "kerneltracer_version": "0.1.0",
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
        "wall_s": 60.0,
        "interrupted": False,
        "jobs": [
            {
                "key": job_key(slug, "torch_dispatch", mode, phase),
                "model": model,
                "tracer": "torch_dispatch",
                "mode": mode,
                "phase": phase,
            }
            for slug, model, mode, phase in planned
        ],
    }
    (run_dir / "run.json").write_bytes(orjson.dumps(manifest))
    return run_dir


def test_coverage_has_four_variant_columns_and_counts_two_models(run: Path) -> None:
    cov = build_coverage(run)
    llm = [m for m in cov.models_for("torch_dispatch") if cov.variant(m)[0] == "org/llm"]
    assert len(llm) == 4
    assert {f"{cov.variant(m)[1]} · {cov.variant(m)[2]}" for m in llm} == LABELS
    assert cov.distinct_models() == ["org/bert", "org/llm"]
    # Each variant keeps its own numbers (decode and train did overwrite prefill before).
    assert sorted(cov.matrix()["aten.mm.default"][m] for m in llm) == [10, 20, 30, 40]
    assert sorted(cov.matrix()["aten.index_select.default"]) == sorted(
        m for m in llm if cov.variant(m)[2] == "decode"
    )


def test_coverage_exports_and_page_label_each_variant(run: Path) -> None:
    result = build_report(run)
    with (result.out_dir / "coverage.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["op"] == "aten.mm.default"]
    assert {(r["model_id"], r["mode"], r["phase"], r["calls"]) for r in rows} == {
        ("org/llm", "eval", "prefill", "10"),
        ("org/llm", "eval", "decode", "20"),
        ("org/llm", "train", "prefill", "30"),
        ("org/llm", "train", "decode", "40"),
        ("org/bert", "eval", "prefill", "3"),
    }
    assert len({r["model"] for r in rows}) == 5  # one label per variant
    summary = json.loads((result.out_dir / "coverage_summary.json").read_text())
    assert summary["distinct_models"] == 2 and len(summary["model_variants"]) == 5

    page = (result.out_dir / "coverage.html").read_text()
    assert "across 2 models (5 model variants: mode · phase)" in page
    thead = page[page.index('<table id="matrix"') :]
    thead = thead[: thead.index("</thead>")]
    headers = re.findall(r'<th class="num" title="([^"]*)">([^<]*)<br><span[^>]*>([^<]*)<', thead)
    llm = [(model, variant) for _, model, variant in headers if model == "org/llm"]
    assert sorted(v for _, v in llm) == sorted(LABELS)


def test_report_grid_has_one_labelled_row_per_variant(run: Path) -> None:
    result = build_report(run)
    assert len(result.run.models) == 2 and result.run.variants == 5
    index = result.index.read_text()
    row = r'<tr data-jobs="\d+"><th [^>]*><a [^>]*>([^<]*)</a></th><td [^>]*>([^<]*)<'
    rows = re.findall(row, index)
    assert sorted(v for m, v in rows if m == "org/llm") == sorted(LABELS)
    cards = re.findall(r"<b>(\d+)</b>([a-z ]+)</div>", index)
    assert ("2", "models") in cards and ("5", "model variants") in cards


def test_status_shows_every_variant(run: Path) -> None:
    table = kt("status", str(run))
    assert table.returncode == 0, table.stderr
    lines = [ln for ln in table.stdout.splitlines() if "org/llm" in ln]
    assert len(lines) == 4
    for label in LABELS:
        assert sum(label in ln for ln in lines) == 1, (label, lines)
    assert "jobs: 2 models, 5 model variants" in table.stdout
    assert "5 jobs: 5 ok" in table.stdout

    as_json = kt("status", str(run), "--json")
    jobs = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert {(j["mode"], j["phase"]) for j in jobs if j["model"] == "org/llm"} == set(VARIANTS)
