"""RunPaths / JobPaths / ReportPaths own every name in a run dir; nobody else spells one."""

from __future__ import annotations

import ast
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from kerneltracer.core import layout
from kerneltracer.core.layout import JOB, REPORT, RUN, JobPaths, RunPaths

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltracer"


def test_paths_of_a_run_dir_and_a_job_dir() -> None:
    run = RunPaths(Path("/r"))
    job = run.job("org--m/torch_dispatch.decode")
    assert job.dir == Path("/r/jobs/org--m/torch_dispatch.decode")
    assert job.status == job.dir / "_TRACE_STATUS.json"
    assert (job.job_file.name, job.worker_log.name, job.phase_log.name) == (
        "JOB.json",
        "worker.log",
        "phases.log",
    )
    assert job.rpc.parent == job.inductor_cache.parent == job.tmp == job.dir / "tmp"
    assert job.analysis("timeline").dir == job.dir / "analysis" / "timeline"
    assert job.analysis("timeline").record == job.dir / "analysis/timeline/_ANALYSIS.json"
    assert job.vllm_cache.parent == job.profiler_export.parent == job.tmp
    assert run.manifest() == Path("/r/run.json") != run.manifest("shard-1-of-2")
    assert run.lock().parent == run.root and run.lock("a") != run.lock()
    assert run.report.corpus == Path("/r/report/corpus")
    assert run.report.replay == run.report.corpus / "replay"
    assert run.slurm_logs == Path("/r/slurm/logs")


def test_a_socket_dir_too_long_for_a_unix_socket_is_a_short_one_per_job() -> None:
    deep = RunPaths(Path("/" + "d" * 60)).job("m/vllm_profiler")
    other = RunPaths(Path("/" + "e" * 60)).job("m/vllm_profiler")
    assert deep.rpc.parent == Path(tempfile.gettempdir())
    assert deep.rpc.name.startswith("kt-rpc-") and deep.rpc != other.rpc


def test_only_a_vllm_job_gets_a_socket_dir(tmp_path: Path) -> None:
    """A deep job dir's socket dir lies in the system's temp dir, which a SIGKILLed run
    never cleans: made for a job that opens no socket, each killed run left one there."""
    from kerneltracer.orchestrator.environment import worker_env
    from tests.helpers import job_spec

    deep = tmp_path / ("d" * 60) / "job"
    plain = worker_env(job_spec("torch_dispatch"), deep, {}, threads=1, gpu=None)
    assert "VLLM_RPC_BASE_PATH" not in plain and not JobPaths(deep).rpc.exists()
    rpc = JobPaths(deep).rpc
    assert rpc.parent == Path(tempfile.gettempdir())  # the short one, removed below
    try:
        env = worker_env(job_spec("vllm_profiler", framework="vllm"), deep, {}, 1, None)
        assert env["VLLM_RPC_BASE_PATH"] == str(rpc) and rpc.is_dir()
    finally:
        shutil.rmtree(rpc, ignore_errors=True)


def test_relative_paths_are_the_bare_names() -> None:
    """What a status file records and a report links: relative to the job / run / report."""
    assert str(JOB.worker_log) == "worker.log" and str(JOB.analysis("x").dir) == "analysis/x"
    assert str(RUN.job("m/t").dir) == "jobs/m/t" and str(RUN.report.dir) == "report"
    assert str(REPORT.compile_health) == "compile_health"
    assert JobPaths(Path()).bookkeeping == JOB.bookkeeping


def _strings(tree: ast.AST) -> Iterator[tuple[ast.AST, str, bool]]:
    """Every string constant that is not a docstring nor an absolute path: (node, text,
    whether it is used as a path: an operand of ``/``, an argument of Path(...), or holding
    a ``/`` itself)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    as_path: set[int] = set()
    inner: set[int] = set()  # parts of an f-string after a value: "/jobs/" in f"{run}/jobs/"
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            as_path |= {id(node.left), id(node.right)}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Path":
            as_path |= {id(a) for a in node.args}
        elif isinstance(node, ast.JoinedStr):
            inner |= {id(v) for v in node.values[1:]}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            absolute = node.value.startswith("/") and id(node) not in inner  # "/tmp/x"
            if id(node) not in docstrings and not absolute:
                yield node, node.value, id(node) in as_path or "/" in node.value


def _spells_out(text: str, used_as_path: bool, name: str) -> bool:
    if "." in name:  # a file name (worker.log, JOB.json): a word of the text, used anyhow
        return name in text.replace("/", " ").split()
    return used_as_path and name in text.split("/")  # a dir name: a component of a path


def _run_dir_names_outside_core(root: Path, names: frozenset[str]) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "core":
            continue
        for node, text, as_path in _strings(ast.parse(path.read_text(), str(path))):
            for name in sorted(names):
                if _spells_out(text, as_path, name):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {name!r} in {text!r}")
    return found


def test_no_run_dir_name_is_spelt_out_outside_core() -> None:
    names = layout.owned_names()
    assert {"tmp", "report", "corpus", "JOB.json", "_TRACE_STATUS.json"} <= names
    assert "_ANALYSIS.json" in names
    assert _run_dir_names_outside_core(PACKAGE, names) == []


def test_the_check_finds_a_name_spelt_out(tmp_path: Path) -> None:
    """The check above cannot pass for want of looking: each way of spelling a name fails."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "ok.py").write_text('X = "tmp"\n')
    (tmp_path / "m.py").write_text(
        '"""Docstrings may name worker.log and report/."""\n'
        'a = job_dir / "tmp"\n'
        'b = f"{run_dir}/jobs/{key}"\n'
        'c = Path("report")\n'
        'd = "report/compile_health"\n'
        'e = {"jobs": 3, "tmp": 1}\n'  # dict keys of a JSON document are no paths
        'f = "see worker.log"\n'
        'g = f"/tmp/c{frame}.py"\n'  # an absolute path is no run-dir path
    )
    found = _run_dir_names_outside_core(tmp_path, layout.owned_names())
    assert sorted({int(f.split(":")[1]) for f in found}) == [2, 3, 4, 5, 7], found
