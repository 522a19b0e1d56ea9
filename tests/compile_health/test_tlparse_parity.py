"""Per compile id, compile health says what tlparse 0.4.3 says: the compile ids and which
are recompiles (compile_directory.json), graphs and graph breaks (its artifacts per id),
restart reasons, failure type and the compile times of its compilation_metrics pages."""

from __future__ import annotations

import html
import re
from pathlib import Path

import orjson
import pytest

from kerneltracer.analysis.compile_health.health import breaks_of
from kerneltracer.analysis.compile_health.records import CompileRecord
from kerneltracer.analysis.compile_health.sources import read_sources
from tests.structured_logs.helpers import run_tlparse

LOGS = (
    "comp_metrics.log",
    "comp_failure.log",
    "cache_hit_miss.log",
    "autotune_with_compile_id.log",
    "simple.log",
    "artifacts.log",
    "links.log",
    "multi_rank_logs/dedicated_log_torch_trace_rank_1.log",
    "multi_rank_logs/dedicated_log_torch_trace_rank_3.log",
)
# Page label -> our raw cumulative field.
TIMES = {
    "Entire Frame": "entire_frame_s",
    "Backend": "backend_s",
    "Inductor": "inductor_s",
    "Code Gen Time": "code_gen_s",
    "Dynamo Time Before Restart": "dynamo_before_restart_s",
}
_TIME = re.compile(
    r"(Entire Frame|Backend|Inductor|Dynamo Time Before Restart) <abbr[^>]*>\[\?\]</abbr>:"
    r" *([^<\s]*)|(Code Gen Time): *([^<\s]*)"
)
_RESTARTS = re.compile(r"Restart Reasons:(.*?)<h2>", re.S)
_ITEM = re.compile(r"<li> <code>(.*?)</code> </li>", re.S)
_FAIL = re.compile(r"Failure Exception: <pre>(.*?)</pre>", re.S)


def _page(path: Path) -> dict[str, object]:
    text = path.read_text()
    times: dict[str, float] = {}
    for m in _TIME.finditer(text):
        label, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if value:
            times[label] = float(value)
    block = _RESTARTS.search(text)
    restarts = [html.unescape(x).strip() for x in _ITEM.findall(block.group(1))] if block else []
    fail = _FAIL.search(text)
    return {"times": times, "restarts": restarts, "fail": fail and html.unescape(fail.group(1))}


@pytest.mark.parametrize("name", LOGS)
def test_per_compile_id_equals_tlparse(name: str, testdata_dir: Path, tmp_path: Path) -> None:
    log = testdata_dir / "tlparse" / name
    run_tlparse(log, tmp_path / "tl")
    directory = orjson.loads((tmp_path / "tl" / "compile_directory.json").read_bytes())
    logs, problems = read_sources(log)
    assert not problems
    ours: dict[str, CompileRecord] = {r.compile_id: r for r in logs[0].records}
    theirs = {cid for cid in directory if cid != "[-/-]"}
    assert set(ours) - {"[-/-]"} == theirs

    recompiles = {cid for cid in theirs if int(cid.strip("[]").split("/")[-1].split("_")[0])}
    assert {cid for cid, r in ours.items() if r.is_recompile} == recompiles

    compared = 0
    for cid in theirs:
        names = [a["name"] for a in directory[cid]["artifacts"]]
        r = ours[cid]
        assert r.graphs == sum(n.startswith("dynamo_output_graph") for n in names), cid
        pages = [
            _page(tmp_path / "tl" / a["url"])
            for a in directory[cid]["artifacts"]
            if a["name"].startswith("compilation_metrics")
        ]
        restarts = [x for p in pages for x in p["restarts"]]  # type: ignore[attr-defined]
        assert r.restart_reasons == restarts, cid
        artifact_breaks = sum(n.startswith("dynamo_graph_break_reason") for n in names)
        expected_breaks = artifact_breaks if not r.restarts_are_breaks else len(restarts)
        assert len(breaks_of(r)) == expected_breaks, cid
        fails = [p["fail"] for p in pages if p["fail"]]
        assert r.fail_type == (fails[-1] if fails else None), cid
        for label, attr in TIMES.items():
            shown = [p["times"][label] for p in pages if label in p["times"]]  # type: ignore[index,operator]
            if r.time_source == "s" and shown:
                assert getattr(r, attr) == pytest.approx(sum(shown), rel=1e-9, abs=1e-12), (
                    cid,
                    label,
                )
                compared += 1
            elif not shown and label != "Dynamo Time Before Restart":
                assert r.time_source != "s" or getattr(r, attr) is None, (cid, label)
    if any(
        p
        for cid in theirs
        for p in directory[cid]["artifacts"]
        if p["name"].startswith("compilation_metrics")
    ):
        assert compared or all(r.time_source != "s" for r in ours.values())
