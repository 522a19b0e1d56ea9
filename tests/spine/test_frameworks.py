"""Framework loaders: one per framework, each giving its tracers their own context type."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.errors import UnsupportedError
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.planning import load_config
from kerneltracer.tracers.registry import FRAMEWORKS, TRACERS
from kerneltracer.worker.frameworks.huggingface import HFContext
from kerneltracer.worker.frameworks.registry import LOADERS, get_loader, version_modules
from kerneltracer.worker.frameworks.vllm import VLLMContext
from tests.helpers import write_config

REPO = Path(__file__).resolve().parents[2]


def _job(tmp_path: Path, framework: str, tracer: str) -> JobSpec:
    (tmp_path / "m").mkdir(exist_ok=True)
    cfg_path = write_config(
        tmp_path / "c.yaml", [{"path": "m", "framework": framework, "tracers": [tracer]}]
    )
    cfg, base = load_config(cfg_path)
    (job,) = plan_jobs(cfg, base)
    return job


def test_every_framework_of_the_config_has_a_loader() -> None:
    assert set(LOADERS) == set(FRAMEWORKS)
    assert version_modules() == ("torch", "transformers", "vllm")
    with pytest.raises(UnsupportedError, match=r"framework 'jax' .* \(valid: huggingface, vllm\)"):
        get_loader("jax")


def test_each_tracer_is_typed_for_the_context_of_its_frameworks() -> None:
    contexts = {cls.name: cls.context_type for cls in LOADERS.values()}
    assert contexts == {"huggingface": HFContext, "vllm": VLLMContext}
    for name, cls in TRACERS.items():
        base = next(b for c in cls.__mro__ for b in getattr(c, "__orig_bases__", ()))
        (arg,) = typing.get_args(base)
        declared = arg.__forward_arg__ if isinstance(arg, typing.ForwardRef) else arg.__name__
        assert {contexts[fw].__name__ for fw in cls.frameworks} == {declared}, name


def test_vllm_loader_refuses_a_tracer_that_drives_no_engine(tmp_path: Path) -> None:
    job = _job(tmp_path, "vllm", "vllm_profiler")
    with pytest.raises(UnsupportedError, match="tracer vllm_profiler does not drive a vLLM"):
        get_loader("vllm").load(job, tmp_path, tracer=object())


def test_vllm_loader_without_vllm_says_where_to_point(tmp_path: Path) -> None:
    """The orchestrator checks first; a JOB.json run by hand still ends unsupported."""
    pytest.importorskip("torch")  # this venv: no vLLM (the vLLM venv has its own tests)
    from kerneltracer.worker.frameworks.vllm.engine import installed_version

    if installed_version() is not None:
        pytest.skip("vLLM is installed in this interpreter")
    job = _job(tmp_path, "vllm", "vllm_profiler")
    tracer_cls = TRACERS["vllm_profiler"]
    tracer = tracer_cls(tracer_cls.Options())
    with pytest.raises(UnsupportedError, match=r"vLLM is not installed.*frameworks.vllm.python"):
        get_loader("vllm").load(job, tmp_path, tracer)


def test_no_framework_branch_in_the_worker_outside_its_loaders() -> None:
    worker = REPO / "kerneltracer" / "worker"
    hits = [
        f"{path.relative_to(REPO)}: {line.strip()}"
        for path in worker.rglob("*.py")
        # A tracer implementation declares the frameworks it is written for; the rest of
        # the worker (entry points, inputs, replay) must not branch on one.
        if not {"frameworks", "tracers"} & set(path.relative_to(worker).parts)
        for line in path.read_text().splitlines()
        if any(f'"{name}"' in line or f"'{name}'" in line for name in FRAMEWORKS)
    ]
    assert hits == []
