"""Coverage reads a parallel job's rank dirs: each rank role is a model of its own, with the
per-rank calls and estimated costs (the corpus labels them alike)."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.core.ranks import rank_label
from kerneltracer.coverage import build_coverage
from tests.coverage.synth import dispatch_files, make_job
from tests.export.synth_ranks import Dense, dense_tp_pp_job, keep_roles

LLAMA = "meta-llama/Llama-3.3-70B-Instruct"


def _with_summaries(job: Path) -> None:
    """The per-rank files torch_dispatch writes beside dispatch_ops.jsonl."""
    import json

    for rank_dir in job.glob("rank_*"):
        rows = [json.loads(x) for x in (rank_dir / "dispatch_ops.jsonl").read_text().splitlines()]
        ops: dict[str, tuple[int, int]] = {}
        for r in rows:
            calls, sigs = ops.get(r["op"], (0, 0))
            ops[r["op"]] = (calls + r["count"], sigs + 1)
        for name, text in dispatch_files(ops).items():
            (rank_dir / name).write_text(str(text))


def test_each_rank_role_is_a_model_with_its_own_calls(tmp_path: Path) -> None:
    run = tmp_path / "run"
    job = make_job(run, LLAMA, "torch_dispatch", dispatch_files({}))
    keep_roles(job, dense_tp_pp_job(job, Dense(layers=4), tp=8, pp=2))
    _with_summaries(job)
    cov = build_coverage(run)
    stage0, stage1 = rank_label(LLAMA, "tp8.pp2", 0), rank_label(LLAMA, "tp8.pp2", 8)
    assert cov.models == (stage0, stage1)
    assert cov.problems == ()
    # Stage 0: 2 layers x 7 GEMMs; stage 1: the same and lm_head.
    assert cov.use("aten.mm.default", stage0).calls == 14
    mm = cov.use("aten.mm.default", stage1)
    assert mm.calls == 15 and mm.est_flops is not None
    # lm_head at TP 8: 2,048 x 8,192 @ 8,192 x 16,032, only on the last stage.
    assert mm.est_flops - cov.use("aten.mm.default", stage0).est_flops == 2 * 2048 * 8192 * 16032
    assert cov.variants[stage1][0] == LLAMA
