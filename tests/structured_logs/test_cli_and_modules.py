"""CLI behaviour, module selection, export mode, the per-job analysis, and unit pieces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from kerneltracer.analysis.base import AnalysisJob
from kerneltracer.analysis.registry import ANALYSES
from kerneltracer.analysis.structured_logs import parse, render, run
from kerneltracer.analysis.structured_logs.compile_id import CompileId
from kerneltracer.analysis.structured_logs.envelopes import INVENTORY
from kerneltracer.analysis.structured_logs.glog import parse_prefix
from kerneltracer.analysis.structured_logs.rendering.highlight import highlight_python
from kerneltracer.analysis.structured_logs.rendering.registry import module_names
from kerneltracer.errors import UsageError
from tests.structured_logs.helpers import run_tlparse


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kerneltracer.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_strict_fails_only_when_lines_failed(testdata_dir: Path, tmp_path: Path) -> None:
    logs = testdata_dir / "tlparse"
    bad = _cli(
        "logs", str(logs / "simple_corrupted_json.log"), "-o", str(tmp_path / "a"), "--strict"
    )
    assert bad.returncode != 0
    assert "fail_payload_md5: 1" in bad.stderr
    good = _cli("logs", "parse", str(logs / "simple.log"), "-o", str(tmp_path / "b"), "--strict")
    assert good.returncode == 0, good.stderr


def test_existing_output_needs_overwrite(testdata_dir: Path, tmp_path: Path) -> None:
    log = testdata_dir / "tlparse" / "links.log"
    assert _cli("logs", str(log), "-o", str(tmp_path / "o")).returncode == 0
    again = _cli("logs", str(log), "-o", str(tmp_path / "o"))
    assert again.returncode == 2
    assert "--overwrite" in again.stderr
    assert _cli("logs", str(log), "-o", str(tmp_path / "o"), "--overwrite").returncode == 0


def test_unknown_module_lists_valid_choices(testdata_dir: Path, tmp_path: Path) -> None:
    parse(testdata_dir / "tlparse" / "links.log", tmp_path / "inter")
    res = _cli(
        "logs", "render", str(tmp_path / "inter"), "-o", str(tmp_path / "o"), "--modules", "nope"
    )
    assert res.returncode == 2
    assert "compile_directory" in res.stderr and "graphs" in res.stderr
    with pytest.raises(UsageError):
        render(tmp_path / "inter", tmp_path / "o2", skip_modules=["bogus"])


def test_modules_and_skip_modules_select_outputs(testdata_dir: Path, tmp_path: Path) -> None:
    inter = tmp_path / "inter"
    parse(testdata_dir / "tlparse" / "simple.log", inter)
    only = render(inter, tmp_path / "only", modules=["compile_directory", "chromium"])
    assert sorted(only.files) == ["chromium_events.json", "compile_directory.json"]
    render(inter, tmp_path / "skip", skip_modules=["inductor_code", "graphs"])
    assert not list((tmp_path / "skip").rglob("inductor_output_code*"))
    assert list((tmp_path / "skip").rglob("compilation_metrics_*.html"))
    assert (tmp_path / "skip" / "index.html").is_file()


def test_render_rejects_a_non_intermediate_dir(tmp_path: Path) -> None:
    res = _cli("logs", "render", str(tmp_path), "-o", str(tmp_path / "o"))
    assert res.returncode == 2
    assert "manifest.json" in res.stderr


@pytest.mark.parametrize("name", ["export.log", "export_guard_added.log"])
def test_export_mode_files_match_tlparse_export(
    name: str, testdata_dir: Path, tmp_path: Path
) -> None:
    log = testdata_dir / "tlparse" / name
    run_tlparse(log, tmp_path / "tl", "--export")
    run(log, tmp_path / "ours", export=True)
    theirs = {
        p.relative_to(tmp_path / "tl").as_posix()
        for p in (tmp_path / "tl").rglob("*")
        if p.is_file()
    }
    ours = {
        p.relative_to(tmp_path / "ours").as_posix()
        for p in (tmp_path / "ours").rglob("*")
        if p.is_file()
    }
    assert theirs <= ours
    index = (tmp_path / "ours" / "index.html").read_text()
    kind = "Data Dependent Error" if name == "export.log" else "Guard Evaluated"
    assert kind in index


def test_per_job_analysis_applies_to_torch_compile_traces(
    testdata_dir: Path, tmp_path: Path
) -> None:
    analysis = ANALYSES["structured_logs"]()
    job_dir = tmp_path / "job"
    (job_dir / "torch_trace").mkdir(parents=True)
    (job_dir / "torch_trace" / "rank0.log").write_bytes(
        (testdata_dir / "tlparse" / "simple.log").read_bytes()
    )
    job = AnalysisJob(job_dir, "torch_compile", "m", "ok", ("torch_trace/rank0.log", "worker.log"))
    assert analysis.applies(job)
    # Selected on the artefact kind, recorded or derived from the name, not on the tracer.
    assert analysis.applies(AnalysisJob(job_dir, "new_compiler", "m", "ok", job.outputs))
    recorded_other = ("compile_code", "profiler_text")
    assert not analysis.applies(AnalysisJob(job_dir, "m", "m", "ok", job.outputs, recorded_other))
    assert not analysis.applies(AnalysisJob(job_dir, "torch_compile", "m", "ok", ("worker.log",)))
    out = tmp_path / "analysis"
    out.mkdir()
    written = analysis.run(job, out)
    assert out / "index.html" in written
    assert all(p.is_file() for p in written)
    assert (job_dir / "torch_trace" / "rank0.log").read_bytes() == (
        testdata_dir / "tlparse" / "simple.log"
    ).read_bytes()


def test_manifest_covers_the_inventory_and_counts(testdata_dir: Path, tmp_path: Path) -> None:
    assert len(INVENTORY) == 36
    m = parse(testdata_dir / "tlparse" / "autotune_with_compile_id.log", tmp_path / "i").manifest
    assert m["envelope_counts"]["compilation_metrics_runtime"] == 1  # known, not "unknown"
    assert m["stats"]["unknown"] == 0
    assert "fx_graph_cache_miss" in m["artifact_counts"]
    assert (tmp_path / "i" / "by_type" / "artifact.jsonl").is_file()
    events = (
        (tmp_path / "i" / "by_compile_id" / "-_0_0_0" / "events.jsonl").read_bytes().splitlines()
    )
    assert all(orjson.loads(e)["display_id"] == "[0/0]" for e in events)


def test_unknown_types_are_kept_and_counted(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text(
        "V1206 15:18:15.925000 1 a.py:1] "
        '{"brand_new_thing": {"k": 1}, "frame_id": 3, "frame_compile_id": 0}\n'
    )
    res = parse(log, tmp_path / "i")
    assert res.stats.unknown == 1 and res.stats.unknown_types == {"brand_new_thing": 1}
    line = orjson.loads((tmp_path / "i" / "by_type" / "brand_new_thing.jsonl").read_bytes())
    assert line["metadata"] == {"k": 1} and line["display_id"] == "[3/0]"


def test_compile_id_forms() -> None:
    assert CompileId.from_envelope({"frame_id": 0, "frame_compile_id": 0}).display() == "[0/0]"
    cid = CompileId.from_envelope(
        {"compiled_autograd_id": 0, "frame_id": 1, "frame_compile_id": 0, "attempt": 2}
    )
    assert cid.display() == "[!0/1/0_2]" and cid.dirname() == "0_1_0_2"
    assert (
        CompileId.from_envelope({}).display() == "[-/-]"
        and CompileId.from_envelope({}).key() == "_none"
    )
    with pytest.raises(ValueError):
        CompileId.from_envelope({"frame_id": "0"})


def test_glog_prefix_fast_and_fallback_paths() -> None:
    p = parse_prefix(b"V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {}", 2024)
    assert p is not None and (p.timestamp, p.thread, p.pathname, p.lineno) == (
        "2024-12-06T15:18:15.925000Z",
        1500233,
        "torch/_dynamo/utils.py",
        1288,
    )
    q = parse_prefix(b"[rank3]:I0102 01:02:03.000004 7 x.py:9] {}", 2024)
    assert q is not None and q.thread == 7 and q.lineno == 9
    assert parse_prefix(b"not a glog line", 2024) is None
    assert parse_prefix(b"V1206 15:18:15.925000 1 x.py:1] ", 2024) is None


def test_highlighter_escapes_untrusted_code() -> None:
    out = highlight_python('x = "<script>alert(1)</script>"  # <b>\ndef f(): return 1 & 2\n')
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "&amp;" in out
    assert '<span class="k">def</span>' in out and '<span class="nf">f</span>' in out


def test_highlighter_marks_whole_tokens_only() -> None:
    # Keywords, numbers and string prefixes inside identifiers are not tokens; identifiers
    # stay plain text.
    code = "if_x = iffy + buf0 + rb'y' + 1e3 if x2 else None\n@torch.jit\nclass C: pass\n"
    out = highlight_python(code)
    assert out.count('<span class="k">') == 5  # if, else, None, class, pass
    assert out.startswith("if_x = iffy + buf0 + <span class=\"s\">rb'y'</span>")
    assert '<span class="m">1e3</span>' in out and '<span class="m">2' not in out
    assert '<span class="nd">@torch.jit</span>' in out and '<span class="nf">C</span>' in out


def test_module_names_cover_the_seed_set() -> None:
    for name in (
        "index",
        "compile_directory",
        "graphs",
        "inductor_code",
        "compilation_metrics",
        "failures",
    ):
        assert name in module_names()
    for name in ("guards", "chromium", "symbolic_shapes", "export", "multi_rank"):
        assert name in module_names()


def test_index_shows_stacks_logged_with_other_events(testdata_dir: Path, tmp_path: Path) -> None:
    parsed, _ = run(testdata_dir / "tlparse" / "export.log", tmp_path / "o")
    assert parsed.manifest["types_with_stack"]  # expression_created, guard_added, ... carry stacks
    index = (tmp_path / "o" / "index.html").read_text()
    assert "Other stacks" in index and "test_draft_export.py" in index
    run(testdata_dir / "tlparse" / "simple.log", tmp_path / "s")
    assert "Other stacks" not in (tmp_path / "s" / "index.html").read_text()
