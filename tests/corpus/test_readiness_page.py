"""The run report's readiness page, from what `kerneltracer readiness` left in the report."""

from __future__ import annotations

import re
from pathlib import Path

from kerneltracer.core.signature import signature_id
from kerneltracer.corpus.model import Signature
from kerneltracer.corpus.readiness import assess
from kerneltracer.corpus.readiness_export import write_readiness
from kerneltracer.corpus.support import Support
from kerneltracer.report.build import build_report
from tests.support.synthetic_run import make_synthetic_run


def _sig(op: str, calls: dict[str, int]) -> Signature:
    return Signature(signature_id(op, [], {}), op, [], {}, [], {"forward": 1}, calls)


def test_page_says_how_to_assess_when_nothing_was_assessed(tmp_path: Path) -> None:
    make_synthetic_run(tmp_path / "run", n_models=3)
    result = build_report(tmp_path / "run")
    html = (result.out_dir / "readiness.html").read_text()
    assert "no readiness assessment yet" in html and "--dispatch-key KEY" in html
    assert 'href="readiness.html"' in (result.out_dir / "index.html").read_text()


def test_page_lists_blockers_and_the_add_order(tmp_path: Path) -> None:
    run = tmp_path / "run"
    make_synthetic_run(run, n_models=3)
    sigs = [
        _sig("aten.mm.default", {"org/model-0000": 3, "org/<b>evil</b>": 1}),
        _sig("aten.gelu.default", {"org/model-0000": 2}),
    ]
    r = assess(sigs, Support("my-npu.yaml", {"aten.gelu.default"}.__contains__))
    write_readiness(r, run / "report" / "readiness")
    html = (build_report(run).out_dir / "readiness.html").read_text()
    assert "my-npu.yaml" in html and "0 of 2 models ready, 2 blocked" in html
    # The charts name ops too: count in the tables only.
    tables = re.sub(r"<svg .*?</svg>", "", html, flags=re.S)
    assert html.count('<svg class="chart') == 2
    assert tables.count("aten.mm.default") == 3  # ranked row + one per blocked model
    assert "&lt;b&gt;evil&lt;/b&gt;" in html and "<b>evil</b>" not in html
    assert 'href="readiness/readiness_ranked.csv"' in html


def test_corrupt_readiness_file_is_a_note_not_a_failed_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    make_synthetic_run(run, n_models=3)
    (run / "report" / "readiness").mkdir(parents=True)
    (run / "report" / "readiness" / "readiness.json").write_text('{"support": 1}')
    html = (build_report(run).out_dir / "readiness.html").read_text()
    assert "not a readiness file" in html


def test_page_names_the_time_weight(tmp_path: Path) -> None:
    run = tmp_path / "run"
    make_synthetic_run(run, n_models=3)
    sigs = [_sig("aten.mm.default", {"org/model-0000": 3})]
    times = {sigs[0].sig_id: 2.5}
    note = "estimated from shapes: roofline time lower bound on H100 (NVIDIA H100 SXM5 80GB)"
    r = assess(sigs, Support("npu", lambda op: False), None, times, "estimate", note)
    write_readiness(r, run / "report" / "readiness")
    html = (build_report(run).out_dir / "readiness.html").read_text()
    assert "est. time lower bound (µs)" in html and note in html and "not measured" in html
    assert "7.5" in html  # 3 calls x 2.5 µs
    csv_text = (run / "report" / "readiness" / "readiness_ranked.csv").read_text()
    assert csv_text.splitlines()[1].split(",")[-2] == "estimate"  # time_weight column
    r = assess(sigs, Support("npu", lambda op: False), None, times)  # a replay's times
    write_readiness(r, run / "report" / "readiness")
    html = (build_report(run).out_dir / "readiness.html").read_text()
    assert "replayed time (µs)" in html and "from shapes" not in html
