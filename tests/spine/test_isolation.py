"""The orchestrator never imports a framework; tiny models load offline; groups chain."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import make_faulty_model, write_config


def test_orchestrator_and_cli_never_import_frameworks(tmp_path: Path) -> None:
    model = make_faulty_model(tmp_path, "none", name="m")  # config + weights, never loaded here
    cfg = write_config(tmp_path / "c.yaml", [{"path": str(model)}])
    code = f"""
import sys
from pathlib import Path
import click
import kerneltracer.cli.main, kerneltracer.orchestrator
# Sub-commands load lazily: import every one, as `kerneltracer --help` does.
ctx = click.Context(kerneltracer.cli.main.root)
for name in kerneltracer.cli.main.root.list_commands(ctx):
    assert kerneltracer.cli.main.root.get_command(ctx, name) is not None
from kerneltracer.orchestrator import RunRequest, open_run
with open_run(RunRequest(config_path=Path({str(cfg)!r}))) as session:
    assert session.plan.to_run and not session.model_failures
from kerneltracer.analysis import registry, runner
bad = sorted(m for m in ("torch", "transformers", "vllm") if m in sys.modules)
print(",".join(bad))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_worker_entry_point_loads_no_config_nor_planning() -> None:
    """A worker reads JOB.json, never the YAML config: importing config (and yaml with it),
    the orchestrator or the CLI would cost every worker start and tie the layers again."""
    code = "import sys, kerneltracer.worker.__main__\nprint('\\n'.join(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(proc.stdout.split())
    assert {"kerneltracer.worker.main", "kerneltracer.core.jobspec"} <= loaded  # it ran
    unwanted = {"yaml", "kerneltracer.config"}
    assert not unwanted & loaded, sorted(unwanted & loaded)
    layers = ("kerneltracer.orchestrator", "kerneltracer.cli", "kerneltracer.analysis")
    assert sorted(m for m in loaded if m.startswith(layers)) == []


def test_tiny_models_load_offline(
    tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    llama = AutoConfig.from_pretrained(tiny_models["tiny-llama"])
    assert llama.head_dim >= 32 and llama.model_type == "llama"
    for name, cls in (
        ("tiny-llama", AutoModelForCausalLM),
        ("tiny-gpt2", AutoModelForCausalLM),
        ("tiny-bert", AutoModelForMaskedLM),
    ):
        tok = AutoTokenizer.from_pretrained(tiny_models[name])
        model = cls.from_pretrained(tiny_models[name])
        ids = tok("which operators does a model run", return_tensors="pt")["input_ids"]
        assert ids.shape[1] > 1 and int(ids.max()) < model.config.vocab_size
        with torch.no_grad():
            logits = model(input_ids=ids).logits
        assert logits.shape == (1, ids.shape[1], model.config.vocab_size)


def test_exclusive_group_runs_alternatives_until_one_succeeds(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kerneltracer.orchestrator.expand import plan_jobs
    from kerneltracer.orchestrator.models import resolve_models
    from kerneltracer.orchestrator.planner import plan_run
    from kerneltracer.orchestrator.planning import load_config
    from kerneltracer.orchestrator.runner import RunOptions, execute

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cfg_path = write_config(
        tmp_path / "c.yaml",
        [{"path": str(tiny_models["tiny-gpt2"])}],
        defaults={"tracers": ["torch_dispatch", "torch_profiler"]},
    )
    cfg, base = load_config(cfg_path)
    first, second = resolve_models(plan_jobs(cfg, base))[0]
    # Three alternatives for one kind of data: the first cannot finish, the second can.
    # 50 ms: not even a preloaded worker (about 0.3 s for this job) can finish in it.
    doomed = first.model_copy(update={"exclusive_group": "g", "timeout_s": 0.05})
    winner = second.model_copy(update={"exclusive_group": "g"})
    never = first.model_copy(update={"exclusive_group": "g", "key": "tiny-gpt2/third"})
    run_dir = tmp_path / "run"
    result = execute(plan_run(run_dir, [doomed, winner, never]), RunOptions(kill_grace_s=1))
    assert {k: s.status.value for k, s in result.statuses.items()} == {
        doomed.key: "timeout",
        winner.key: "ok",
        never.key: "skipped",
    }
    assert result.statuses[never.key].reason == f"exclusive group satisfied by {winner.key}"
    # Next run: the group is satisfied, nothing runs.
    plan = plan_run(run_dir, [doomed, winner, never])
    assert plan.to_run == [] and set(plan.satisfied_by) == {doomed.key, never.key}
