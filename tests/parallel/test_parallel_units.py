"""Parallel settings: config schema, degree checks, job columns, roles, formulas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.layout import JobKey, job_key
from kerneltracer.core.parallel import Layout
from kerneltracer.core.parallelspec import ParallelSpec, degrees_problem, layout_problem
from kerneltracer.errors import ConfigError
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.planning import load_config, planned_models
from tests.helpers import FIXTURES, write_config
from tests.parallel import formulas

CONFIGS = FIXTURES / "hub_configs"


def _cfg(name: str) -> dict[str, Any]:
    return dict(json.loads((CONFIGS / name / "config.json").read_text()))


def _spec(**degrees: Any) -> ParallelSpec:
    return ParallelSpec.from_json(degrees)


def test_degrees_dividing_the_model_pass() -> None:
    llama = _cfg("meta-llama--Llama-3.3-70B-Instruct")  # 64 heads, 8 KV heads, 80 layers
    assert degrees_problem(llama, _spec(tp=8, pp=2)) is None
    assert degrees_problem(_cfg("mistralai--Mixtral-8x22B-v0.1"), _spec(ep=8)) is None
    assert degrees_problem(_cfg("deepseek-ai--DeepSeek-V3"), _spec(ep=64)) is None


@pytest.mark.parametrize(
    ("name", "degrees", "line"),
    [
        (
            "meta-llama--Llama-3.3-70B-Instruct",
            {"tp": 16},
            "parallel.tp 16 does not divide the model's 64 attention heads and 8 KV heads "
            "(valid tp: 1, 2, 4, 8)",
        ),
        (
            "mistralai--Mixtral-8x22B-v0.1",
            {"ep": 3},
            "parallel.ep 3 does not divide the model's 8 experts (valid ep: 1, 2, 4, 8)",
        ),
        (
            "meta-llama--Llama-3.1-8B",
            {"ep": 2},
            "parallel.ep: the model has no experts (its config names no expert count)",
        ),
        (
            "meta-llama--Llama-3.1-8B",
            {"pp": 3},
            "parallel.pp 3 does not divide the model's 32 layers (valid pp: 1, 2, 4, 8, 16, 32)",
        ),
        (
            "meta-llama--Llama-3.1-8B",
            {"pp": 2, "layers": 3},
            "parallel.pp 2 does not divide parallel.layers 3 layers (valid pp: 1, 3)",
        ),
    ],
)
def test_degrees_that_do_not_divide_name_the_valid_ones(
    name: str, degrees: dict[str, Any], line: str
) -> None:
    assert degrees_problem(_cfg(name), _spec(**degrees)) == line


def test_layouts_the_simulation_refuses_say_why() -> None:
    assert "not simulated yet" in (layout_problem(_spec(tp=2, ep=2), "eval") or "")
    assert "mode train" in (layout_problem(_spec(dp=8, fsdp=True), "eval") or "")
    assert layout_problem(_spec(dp=8, fsdp=True), "train") is None
    assert "needs dp > 1" in (layout_problem(_spec(fsdp=True), "train") or "")
    assert "needs fsdp: true" in (layout_problem(_spec(dp=8), "train") or "")
    assert layout_problem(_spec(dp=8), "eval") is None  # replicas: no collective in eval


def test_labels_and_job_keys_round_trip() -> None:
    assert _spec(tp=8, pp=2).label() == "tp8.pp2"
    assert _spec(dp=8, fsdp=True).label() == "fsdp8"
    assert _spec(ep=8).label() == "ep8"
    key = job_key("m", "torch_dispatch", "train", "prefill", "fsdp8")
    assert key == "m/torch_dispatch.train.fsdp8"
    parsed = JobKey.parse(key)
    assert (parsed.tracer, parsed.mode, parsed.phase, parsed.layout) == (
        "torch_dispatch",
        "train",
        "prefill",
        "fsdp8",
    )
    assert JobKey.parse("m/torch_dispatch.decode.tp8.pp2").layout == "tp8.pp2"
    assert JobKey.parse("m/torch_dispatch").layout == "single"
    assert job_key("m", "torch_dispatch", "eval", "prefill") == "m/torch_dispatch"


def test_config_plans_one_column_per_layout(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    cfg_path = write_config(
        tmp_path / "c.yaml",
        [
            {"path": "m", "name": "a", "parallel": {"tp": 8}},
            {"path": "m", "name": "b", "parallel": {"tp": 8, "pp": 2, "tp_plan": {"x": "colwise"}}},
            {"path": "m", "name": "c"},
        ],
        defaults={"weights": "fake", "tracers": ["torch_dispatch"]},
    )
    cfg, base = load_config(cfg_path)
    keys = [key for m in planned_models(cfg, base) for _, key in m.jobs]
    assert keys == ["a/torch_dispatch.tp8", "b/torch_dispatch.tp8.pp2", "c/torch_dispatch"]
    jobs = plan_jobs(cfg, base)
    assert jobs[1].parallel == {"tp": 8, "pp": 2, "tp_plan": {"x": "colwise"}}
    assert jobs[2].parallel is None
    assert "parallel" in jobs[0].request and "parallel" not in jobs[2].request


@pytest.mark.parametrize(
    ("parallel", "mode", "message"),
    [
        ({"tp": 0}, "eval", "greater than or equal to 1"),
        ({"tp": 2, "ep": 2}, "eval", "not simulated yet"),
        ({"dp": 4, "fsdp": True}, "eval", "applies to mode train"),
        ({"tp": 2, "pipeline": 2}, "eval", "unknown field 'pipeline'"),
    ],
)
def test_bad_parallel_settings_are_one_line_config_errors(
    tmp_path: Path, parallel: dict[str, Any], mode: str, message: str
) -> None:
    (tmp_path / "m").mkdir()
    cfg_path = write_config(
        tmp_path / "c.yaml",
        [{"path": "m", "mode": mode, "parallel": parallel}],
        defaults={"weights": "fake"},
    )
    with pytest.raises(ConfigError) as err:
        load_config(cfg_path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_roles_collapse_tp_and_dp_peers() -> None:
    from kerneltracer.worker.parallel.simulate import roles_of

    roles = roles_of(Layout(tp=8, pp=2))
    assert [(r.rank, r.ranks) for r in roles] == [(0, tuple(range(8))), (8, tuple(range(8, 16)))]
    roles = roles_of(Layout(ep=4, dp=2))
    assert [r.rank for r in roles] == [0, 1, 2, 3]
    assert roles[1].ranks == (1, 5)


def test_formulas_by_hand() -> None:
    llama70 = _cfg("meta-llama--Llama-3.3-70B-Instruct")
    # TP 8, 2,048 tokens in bf16: every all-reduce moves B*S*H*2 = 32 MiB per layer, twice.
    colls = formulas.tp_forward(llama70, 1, 2048, 8, 2, 1)
    assert colls[1:3] == [("all_reduce", "tp", 33_554_432)] * 2
    assert colls[-1] == ("all_gather", "tp", 2048 * 16032 * 2)
    # Llama-3.1-8B's decoder layer holds 218,112,000 parameters.
    assert formulas.fsdp_layer_params(_cfg("meta-llama--Llama-3.1-8B")) == 218_112_000


def test_tracers_that_cannot_trace_simulated_ranks_are_refused_before_loading() -> None:
    from kerneltracer.core.jobspec import JobSpec, ModelRef
    from kerneltracer.errors import UnsupportedError
    from kerneltracer.tracers.registry import TRACERS
    from kerneltracer.worker.parallel.simulate import refuse

    def job(tracer: str, weights: str) -> JobSpec:
        model = ModelRef(display="m", slug="m", path="/m", weights=weights)
        return JobSpec(
            key=f"m/{tracer}.tp2",
            model=model,
            tracer=tracer,
            tracer_version="1",
            exclusive_group=None,
            framework="huggingface",
            mode="eval",
            device="cpu",
            dtype="auto",
            batch_size=1,
            seq_len=8,
            options={},
            timeout_s=60,
            max_rss_gb=None,
            parallel={"tp": 2},
        )

    def tracer(name: str) -> Any:
        cls = TRACERS[name]
        return cls(cls.Options())

    refuse(job("torch_dispatch", "fake"), tracer("torch_dispatch"))
    refuse(job("print_fx", "fake"), tracer("print_fx"))
    with pytest.raises(UnsupportedError, match="torch_compile with parallel: compiling"):
        refuse(job("torch_compile", "fake"), tracer("torch_compile"))
    with pytest.raises(UnsupportedError, match="weights real runs one process per rank"):
        refuse(job("torch_dispatch", "real"), tracer("torch_dispatch"))
