"""The readers of rank dirs treat a real-rank job as they treat the fake simulation's: the
layout from JOB.json as the orchestrator writes it, real ranks that run one program in one
role (the values a real rank reads are not its program), and a tracer's rank dirs judged by
the files it writes. Synthetic job dirs in the shapes real runs leave (tests/parallel's end
to end runs make the real ones)."""

from __future__ import annotations

import json
from pathlib import Path

from kerneltracer.core.layout import JobPaths
from kerneltracer.core.parallel import Layout
from kerneltracer.core.ranks import FROM_SPEC, job_layout, read_rank_job
from kerneltracer.report.ranks_view import build_ranks_view, roles
from tests.coverage.synth import dispatch_files, make_job

# The embedding's vocabulary-shard mask of a real TP rank: its true count is how many of the
# prompt's tokens fall in the rank's shard (14 and 2 of 16 here), a value, not the program.
_MASKED = {
    "op": "aten.index_put_.default",
    "phase": "forward",
    "count": 1,
    "inputs": [
        {"shape": [1, 16, 128], "dtype": "float32", "device": "cpu"},
        [{"shape": [1, 16], "dtype": "bool", "device": "cpu", "true": 14}],
    ],
    "kwargs": {},
    "outputs": [{"shape": [1, 16, 128], "dtype": "float32", "device": "cpu"}],
    "modules": {"model.embed_tokens": 1},
}
_COLLECTIVE = {
    "seq": 0,
    "kind": "all_reduce",
    "group": "tp",
    "group_size": 2,
    "dtype": "float32",
    "shape": [1, 16, 128],
    "bytes_per_rank": 8192,
    "module": "model.embed_tokens",
    "phase": "forward",
}


def _job_file(job_dir: Path, parallel: dict[str, int]) -> None:
    """JOB.json as the orchestrator writes it (JobFile): the spec under ``job``."""
    JobPaths(job_dir).job_file.write_text(
        json.dumps({"attempt": "a1", "job": {"key": "m/torch_dispatch.tp2", "parallel": parallel}})
    )


def _real_rank(job_dir: Path, rank: int, true: int, dispatch: bool = True) -> None:
    rank_dir = JobPaths(job_dir).rank(rank)
    rank_dir.mkdir(parents=True, exist_ok=True)
    if dispatch:
        row = json.loads(json.dumps(_MASKED))
        row["inputs"][1][0]["true"] = true
        (rank_dir / "dispatch_ops.jsonl").write_text(json.dumps(row) + "\n")
    JobPaths(job_dir).collectives(rank).write_text(json.dumps(_COLLECTIVE) + "\n")


def test_the_layout_comes_from_job_json_as_the_orchestrator_writes_it(tmp_path: Path) -> None:
    """Was 'inferred from the collectives' groups' (dp 2 for a vLLM TP 2 job with none)."""
    for rank in (0, 1):
        JobPaths(tmp_path).rank(rank).mkdir()
    _job_file(tmp_path, {"tp": 2})
    assert job_layout(tmp_path) == (Layout(tp=2), FROM_SPEC)


def test_real_ranks_differing_only_in_values_read_are_one_role(tmp_path: Path) -> None:
    """As the simulation's one rank dir stands for both TP peers, the real TP peers share a
    role: their mask's true count differs, their program does not."""
    for rank, true in ((0, 14), (1, 2)):
        _real_rank(tmp_path, rank, true)
    _job_file(tmp_path, {"tp": 2})
    job = read_rank_job(tmp_path)
    assert job is not None
    assert [(r.ranks, r.rank) for r in roles(job)] == [((0, 1), 0)]


def test_files_a_tracer_does_not_write_are_not_said_missing(tmp_path: Path) -> None:
    """torch_profiler's real ranks record collectives and no dispatch signatures: no 'Not
    written'; vLLM's own ranks record neither: the page says so instead of an empty job."""
    run = tmp_path / "run"
    profiler = make_job(run, "m", "torch_profiler", dispatch_files({}))
    _job_file(profiler, {"tp": 2})
    for rank in (0, 1):
        _real_rank(profiler, rank, 0, dispatch=False)
    vllm = make_job(run, "v", "vllm_profiler", dispatch_files({}))
    _job_file(vllm, {"tp": 2})
    for rank in (0, 1):
        (JobPaths(vllm).rank(rank) / "profile").mkdir(parents=True)
    view = build_ranks_view(run)
    (job,) = view.jobs
    assert job.missing_files == [] and job.layout == "tp2", job
    assert [p for p in view.problems if "no dispatch signatures or collectives" in p], view
