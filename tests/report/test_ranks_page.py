"""The report's per-rank page: ops x ranks, collectives per step with bytes, compute vs
communication per layer, from parallel jobs' rank dirs; drawn in headless chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kerneltracer.report.build import build_report
from kerneltracer.report.ranks_view import build_ranks_view
from tests.conftest import require
from tests.coverage.synth import dispatch_files, make_job
from tests.export.synth_ranks import Dense, dense_tp_pp_job, keep_roles, moe_ep_job
from tests.report.cdp import CHROMIUM, Browser


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("ranks") / "run"
    dense = make_job(run, "meta-llama/Llama-3.1-70B", "torch_dispatch", dispatch_files({}))
    dense_tp_pp_job(dense, Dense(layers=4), tp=8, pp=2)
    moe = make_job(run, "mistralai/Mixtral-8x22B", "torch_dispatch", dispatch_files({}))
    moe_ep_job(moe, ep=8, known=False)
    make_job(run, "gpt2", "torch_dispatch", dispatch_files({}))
    build_report(run)
    return run


def test_ranks_view_groups_ranks_running_the_same_program(run: Path) -> None:
    view = build_ranks_view(run)
    assert [j.key for j in view.jobs] == [
        "meta-llama-Llama-3.1-70B/torch_dispatch",
        "mistralai-Mixtral-8x22B/torch_dispatch",
    ]
    dense, moe = view.jobs
    assert dense.layout == "tp8.pp2"
    assert [r.role.label for r in dense.roles] == ["0–7", "8–15"]  # the two stages
    assert [r.role.label for r in moe.roles] == ["0–7"]  # experts differ, programs do not
    first = dense.roles[0]
    # Stage 0: layers 0-1, two all_reduce each (144.489 us on NVLink 4), then the send.
    assert [c.record.kind for c in first.collectives] == ["all_reduce"] * 4 + ["send"]
    assert first.collectives[0].cost.time_s == pytest.approx(144.489e-6, rel=1e-5)
    layers = first.cost.layers
    assert list(layers)[:2] == ["model.layers.0", "model.layers.1"]
    # 2,048 tokens at TP 8 on H100: the layer's GEMMs (~456 us) and norms outlast its two
    # all_reduce (2 x 144.5 us): compute bound, even with nothing overlapped.
    layer = layers["model.layers.0"]
    assert layer.comm_s == pytest.approx(2 * 144.489e-6, rel=1e-5)
    assert layer.compute.time_s > 450e-6 and layer.bound == "compute"
    assert moe.roles[0].total.comm_unknown == 2 and moe.roles[0].total.bound == "unknown"


def test_ranks_page_lists_the_jobs_and_says_what_is_unknown(run: Path) -> None:
    html = (run / "report" / "ranks.html").read_text()
    assert 'id="collectives-1-1"' in html and 'id="ops-2"' in html
    assert "33,554,432" in html  # (1, 2048, 8192) bf16 per all_reduce
    assert "bytes not known (the record says so)" in html
    assert html.count("<svg") >= 3  # a layer chart per role
    index = (run / "report" / "index.html").read_text()
    assert 'href="ranks.html"' in index


def test_a_run_without_parallel_jobs_says_how_to_get_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    make_job(run, "gpt2", "torch_dispatch", dispatch_files({}))
    build_report(run)
    assert "No parallel job in this run" in (run / "report" / "ranks.html").read_text()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    require(CHROMIUM.exists(), f"{CHROMIUM} (scripts/install-chromium.sh installs it, as root)")
    tmp = tmp_path_factory.mktemp("chromium")
    b = Browser(tmp / "profile", tmp / "chromium.log")
    try:
        yield b
    finally:
        b.close()


@pytest.mark.e2e
@pytest.mark.parametrize("width", [1400, 1024])
def test_ranks_page_in_chromium(run: Path, browser: Browser, width: int) -> None:
    browser.call(
        "Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1,
        mobile=False,
    )  # fmt: skip
    loaded = browser.load((run / "report" / "ranks.html").as_uri())
    assert loaded.errors == []
    browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert browser.evaluate("document.documentElement.scrollWidth") <= browser.evaluate(
        "window.innerWidth"
    )
    # The charts are drawn: one per role, each with compute and communication bars.
    charts = browser.evaluate(
        "[...document.querySelectorAll('figure svg.chart')]"
        ".map(s => s.getBoundingClientRect().height)"
    )
    assert len(charts) == 3 and min(charts) > 30
    segments = browser.evaluate(
        "[...document.querySelectorAll('figure svg.chart')].map(s => [...s.querySelectorAll("
        "'rect > title')].map(t => t.textContent.split(' · ')[1].split(':')[0]))"
    )
    # Stage 0 charts layers 0-1 and stage 1 layers 2-3 and lm_head, both parts each; the
    # MoE layer's communication is unknown, so only its compute is drawn.
    assert [sorted(set(s)) for s in segments] == [
        ["communication", "compute"],
        ["communication", "compute"],
        ["compute"],
    ]
    # Layers 2, 3 and lm_head both parts; the stage's recv (issued by no module) its own row.
    assert len(segments[1]) == 2 * 3 + 1
    text = browser.evaluate("document.body.innerText")
    assert "tp8.pp2" in text and "ep8" in text and "InfiniBand NDR 400G" in text
    # Sorting the collectives by bytes puts the unknown ones (sorted as -1) first.
    kinds = (
        "[...document.querySelectorAll('#collectives-2-1 tbody tr')]"
        ".map(r => r.cells[5].textContent)"
    )
    assert browser.evaluate(kinds) == ["unknown", "unknown"]
    rows = "[...document.querySelectorAll('#roles-1 tbody tr')].map(r => r.cells[0].textContent)"
    browser.evaluate("document.querySelector('#roles-1 thead th').click()")
    first = browser.evaluate(rows)
    browser.evaluate("document.querySelector('#roles-1 thead th').click()")
    assert browser.evaluate(rows) == first[::-1] and len(first) == 2


def test_role_dirs_cover_their_peers_on_the_page(tmp_path: Path) -> None:
    run = tmp_path / "run"
    job = make_job(run, "meta-llama/Llama-3.1-70B", "torch_dispatch", dispatch_files({}))
    keep_roles(job, dense_tp_pp_job(job, Dense(layers=4), tp=8, pp=2))
    (view,) = build_ranks_view(run).jobs
    assert [(r.role.label, r.role.rank) for r in view.roles] == [("0–7", 0), ("8–15", 8)]
    assert view.missing == [] and view.ranks == 2


def test_missing_and_bad_rank_files_are_said(tmp_path: Path) -> None:
    run = tmp_path / "run"
    job = make_job(run, "meta-llama/Llama-3.1-70B", "torch_dispatch", dispatch_files({}))
    dense_tp_pp_job(job, Dense(layers=4), tp=8, pp=2)
    (job / "rank_3" / "collectives.jsonl").unlink()
    with (job / "rank_5" / "dispatch_ops.jsonl").open("a") as fh:
        fh.write("{not json\n")
    build_report(run)
    html = (run / "report" / "ranks.html").read_text()
    assert "Not written: rank 3: collectives.jsonl (read as empty)." in html
    assert "rank 5 dispatch_ops.jsonl: not_json ×1" in html
