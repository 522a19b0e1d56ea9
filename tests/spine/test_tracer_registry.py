"""The tracer registry: names and frameworks without imports, classes on demand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kerneltracer.errors import KernelTracerError
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.planning import check_semantics, load_config
from kerneltracer.tracers.base import Tracer, TraceResult
from kerneltracer.tracers.registry import BUILTIN, TRACERS, TracerEntry, TracerRegistry

_PROBE = """
import sys
from pathlib import Path
import kerneltracer.orchestrator.expand, kerneltracer.orchestrator.planning
kerneltracer.orchestrator.planning.load_config(Path(sys.argv[1]))
heavy = ("torch", "transformers", "vllm")
# The implementations live in worker/tracers/: planning reads the catalog, never them.
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy
                or m.startswith("kerneltracer.worker.tracers"))
print(",".join(loaded))
"""


def test_config_and_jobs_import_no_tracer_module_nor_framework(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    config = tmp_path / "c.yaml"
    config.write_text(
        "defaults: {tracers: [torch_dispatch, torch_profiler, print_fx]}\n"
        "models:\n  - path: m\n  - path: m\n    name: v\n    framework: vllm\n"
        "    tracers: [vllm_profiler]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(config)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_every_builtin_entry_matches_its_class() -> None:
    for entry in BUILTIN:
        cls = entry.load()
        assert (cls.name, frozenset(cls.frameworks)) == (entry.name, entry.frameworks)
    assert list(TRACERS)[: len(BUILTIN)] == [e.name for e in BUILTIN]


def test_an_entry_that_disagrees_with_its_class_is_refused() -> None:
    wrong = TracerEntry("torch_dispatch", BUILTIN[0].target, frozenset({"vllm"}))
    with pytest.raises(KernelTracerError, match="disagrees"):
        wrong.load()


class EchoTracer(Tracer):
    name: ClassVar[str] = "echo"
    version: ClassVar[str] = "7"
    frameworks: ClassVar[frozenset[str]] = frozenset({"huggingface"})

    def trace(self, ctx: Any) -> Any:
        return None

    def write(self, ctx: Any, traced: Any, job_dir: Path) -> TraceResult:
        return TraceResult(outputs=[])


def test_a_registered_tracer_is_validated_and_planned(tmp_path: Path) -> None:
    registry: TracerRegistry = TRACERS.with_tracers(EchoTracer)
    assert "echo" in registry and "echo" not in TRACERS
    assert registry.names_for("huggingface")[-1] == "echo"
    (tmp_path / "m").mkdir()
    config = tmp_path / "c.yaml"
    config.write_text("models:\n  - path: m\n    tracers: [echo]\n")
    with pytest.raises(KernelTracerError, match=r"unknown tracer 'echo' \(valid: "):
        load_config(config)
    config.write_text("models:\n  - path: m\n    tracers: [torch_dispatch]\n")
    cfg, base = load_config(config)
    cfg.models[0].tracers = ["echo"]
    assert check_semantics(cfg, base, registry) is None
    (job,) = plan_jobs(cfg, base, registry)
    assert (job.key, job.tracer_version) == ("m/echo", "7")
    problem = check_semantics(cfg, base)
    assert problem is not None and "unknown tracer 'echo'" in problem[1]


def test_no_tracer_name_literal_outside_tracers() -> None:
    """Consumers select on artefact kinds: a tracer's name as a string literal anywhere but
    the catalog (tracers/) and the implementations (worker/tracers/) would tie them to that
    tracer again (docstrings that mention one are fine)."""
    import ast

    root = Path(__file__).resolve().parents[2] / "kerneltracer"
    names = {e.name for e in BUILTIN}
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] == "tracers" or parts[:2] == ("worker", "tracers"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    assert names and found == []
