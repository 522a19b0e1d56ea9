"""``kerneltracer export chakra``: a run's parallel jobs exported, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kerneltracer.cli.main import root
from kerneltracer.core.layout import RunPaths
from tests.coverage.synth import dispatch_files, make_job
from tests.export.synth_ranks import Dense, dense_tp_job, moe_ep_job


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    dense = make_job(run, "meta-llama/Llama-3.1-70B", "torch_dispatch", dispatch_files({}))
    dense_tp_job(dense, Dense(), tp=8)
    moe = make_job(run, "mistralai/Mixtral-8x22B", "torch_dispatch", dispatch_files({}))
    moe_ep_job(moe, ep=8, known=False)
    make_job(run, "gpt2", "torch_dispatch", dispatch_files({}))  # one rank: not exported
    return run


def test_export_writes_every_parallel_job(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = CliRunner().invoke(root, ["export", "chakra", str(run), "--device", "A100"])
    assert out.exit_code == 0, out.output
    assert "meta-llama-Llama-3.1-70B/torch_dispatch: tp8 (inferred" in out.output
    assert "8 rank trace(s), 112 nodes (40 collectives)" in out.output
    assert "16 collective(s) of unknown size written without comm_size" in out.output
    where = RunPaths(run).report.chakra("meta-llama-Llama-3.1-70B/torch_dispatch")
    assert sorted(p.name for p in where.iterdir()) == sorted(
        ["chakra_export.json", "comm_group.json", *(f"trace.{r}.et" for r in range(8))]
    )
    assert json.loads((where / "chakra_export.json").read_text())["layout"]["tp"] == 8
    assert not RunPaths(run).report.chakra("gpt2/torch_dispatch").exists()


def test_export_one_job_into_a_dir(tmp_path: Path) -> None:
    run = _run(tmp_path)
    key = "mistralai-Mixtral-8x22B/torch_dispatch"
    et = tmp_path / "et"
    out = CliRunner().invoke(root, ["export", "chakra", str(run), "--job", key, "-o", str(et)])
    assert out.exit_code == 0, out.output
    assert (et / "trace.7.et").is_file() and (et / "comm_group.json").is_file()
    # A job dir works too; its traces go to its run's report.
    job = run / "jobs" / key
    out = CliRunner().invoke(root, ["export", "chakra", str(job)])
    assert out.exit_code == 0, out.output
    assert (RunPaths(run).report.chakra(key) / "trace.0.et").is_file()


def test_errors_are_one_line_with_the_choices(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = CliRunner().invoke(root, ["export", "chakra", str(run), "--job", "nope/x"])
    assert out.exit_code == 2
    assert "no parallel job 'nope/x'" in out.output
    assert "valid: meta-llama-Llama-3.1-70B/torch_dispatch, mistralai-" in out.output
    plain = tmp_path / "plain"
    make_job(plain, "gpt2", "torch_dispatch", dispatch_files({}))
    out = CliRunner().invoke(root, ["export", "chakra", str(plain)])
    assert out.exit_code == 2 and "has no ok job with rank dirs" in out.output
    out = CliRunner().invoke(root, ["export", "chakra", str(run), "--device", "TPUv9"])
    assert out.exit_code == 2 and "unknown device 'TPUv9' (valid:" in out.output
