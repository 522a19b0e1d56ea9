"""Fast in-process checks of the compiler tracers' building blocks."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
import torch

from kerneltracer.fx.nodetable import read_node_table
from kerneltracer.tracers.registry import TRACERS
from kerneltracer.worker.tracers._compiler_errors import innermost, root_cause_line
from kerneltracer.worker.tracers._graphs import (
    GraphCaptureError,
    aten_ops,
    capture_graph,
    run_methods,
    tensor_meta,
)
from kerneltracer.worker.tracers.print_aten import PrintAtenExportTracer, PrintAtenTracer
from kerneltracer.worker.tracers.print_fx import PrintFxTracer
from kerneltracer.worker.tracers.torch_compile import (
    CompileOptions,
    TorchCompileTracer,
    _is_recompile,
)
from tests.helpers import job_spec


@torch.library.custom_op("kt_unit::opaque", mutates_args=())
def _opaque(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def _uses_opaque(x: torch.Tensor) -> torch.Tensor:
    return _opaque(x.sin()) * 2


def _small_graph() -> torch.fx.GraphModule:
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.mm(x, y).relu(), x.sum()

    return make_fx(f)(torch.ones(2, 3), torch.ones(3, 4, dtype=torch.float32))


def test_capture_graph_is_a_node_table_with_shapes_and_dtypes() -> None:
    graph = capture_graph(_small_graph(), "inference", "graph_0")
    name, nodes = read_node_table(graph.table)
    assert name == "graph_0" and nodes[0].op == "placeholder"
    rows = {r["name"]: r for r in graph.table["nodes"]}
    mm = next(r for r in rows.values() if r["target"] == "torch.ops.aten.mm.default")
    assert mm["shape"] == [2, 4] and mm["dtype"] == "float32"
    assert aten_ops([graph]) == ["aten.mm.default", "aten.relu.default", "aten.sum.default"]
    assert "torch.ops.aten.mm.default" in graph.text


def test_tensor_meta_without_value_or_with_symbols() -> None:
    assert tensor_meta({}) == {}
    assert tensor_meta({"example_value": 3}) == {"shape": [], "dtype": "int"}
    # Tuple values (multi-output ops): one entry per element.
    pair = (torch.ones(2, 4), torch.zeros((), dtype=torch.int64))
    assert tensor_meta({"val": pair}) == {"shape": [[2, 4], []], "dtype": ["float32", "int64"]}


def test_root_cause_of_a_dynamo_failure_is_the_operator_and_user_line() -> None:
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(_uses_opaque, backend="eager")(torch.ones(3))
    torch._dynamo.reset()
    # Dynamo's own first line is generic; the innermost (suppressed) error names the op.
    assert "no fake impl" not in str(info.value).splitlines()[0]
    line = root_cause_line(info.value)
    assert line.startswith("RuntimeError: There was no fake impl registered"), line
    assert "kt_unit::opaque" in line and f"{Path(__file__).name}:" in line
    assert "no fake impl" in str(innermost(info.value))


def test_run_methods_falls_back_and_records_why() -> None:
    def broken() -> list:
        try:
            raise KeyError("inner cause")
        except KeyError:
            raise ValueError("wrapper") from None

    graph = capture_graph(_small_graph(), "inference", "graph_0")
    capture = run_methods([("first", broken), ("empty", list), ("third", lambda: [graph])])
    assert capture.method == "third" and capture.graphs == [graph]
    assert [(a.method, a.ok) for a in capture.attempts] == [
        ("first", False),
        ("empty", False),
        ("third", True),
    ]
    assert capture.attempts[0].error == "KeyError: 'inner cause'"
    assert capture.attempts[1].error == "no graph captured"


def test_run_methods_all_failing_names_each_method() -> None:
    def fails(msg: str):  # type: ignore[no-untyped-def]
        def run() -> list:
            raise RuntimeError(msg)

        return run

    with pytest.raises(GraphCaptureError, match=r"a: RuntimeError: one; b: RuntimeError: two"):
        run_methods([("a", fails("one")), ("b", fails("two"))])


def test_registry_and_exclusive_group() -> None:
    for name in (
        "torch_compile",
        "print_fx",
        "print_aten",
        "print_aten_export",
        "print_aten_make_fx",
    ):
        assert name in TRACERS and "huggingface" in TRACERS[name].frameworks
    group = [n for n, c in TRACERS.items() if c.exclusive_group == "print_aten"]
    # Registry order is the order the group's members are tried in.
    assert group == ["print_aten", "print_aten_export", "print_aten_make_fx"]
    assert PrintFxTracer.exclusive_group is None
    assert PrintAtenExportTracer.Options().methods == ("export", "make_fx")  # type: ignore[attr-defined]


def test_options_reject_unknown_methods_listing_valid_ones() -> None:
    with pytest.raises(pydantic.ValidationError, match="'aot', 'export' or 'make_fx'"):
        PrintAtenTracer.Options.model_validate({"methods": ["jit"]})
    with pytest.raises(pydantic.ValidationError):
        PrintAtenTracer.Options.model_validate({"methods": []})


def test_torch_compile_worker_env(tmp_path: Path) -> None:
    from kerneltracer.orchestrator.environment import worker_env

    env = TorchCompileTracer.worker_env(tmp_path, CompileOptions())
    assert env == {"TORCH_TRACE": str(tmp_path / "torch_trace")}
    job = job_spec("torch_compile", options={"cache_dir": str(tmp_path / "warm")})
    full = worker_env(job, tmp_path / "job", {}, threads=1, gpu=None)
    # A warm cache on purpose replaces the job's own cold one.
    assert full["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "warm")
    assert full["TORCH_TRACE"] == str(tmp_path / "job" / "torch_trace")


@pytest.mark.parametrize(
    ("compile_id", "recompile"),
    [("0/0", False), ("0/1", True), ("1/0_1", False), ("-/-", False), (None, False)],
)
def test_recompile_ids(compile_id: str | None, recompile: bool) -> None:
    assert _is_recompile(compile_id) is recompile
