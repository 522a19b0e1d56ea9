"""Bad input gets one clear line naming the file, line/field and the valid choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.errors import ConfigError
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.planning import load_config, planned_tracers
from kerneltracer.tracers.registry import TRACERS
from tests.helpers import kt


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    (tmp_path / "m").mkdir(exist_ok=True)
    return path


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text))
    return str(info.value)


def test_five_line_config_works(tmp_path: Path) -> None:
    cfg, base = load_config(_write(tmp_path, "models:\n  - path: m\n"))
    jobs = plan_jobs(cfg, base)
    assert [j.key for j in jobs] == [f"m/{t}" for t in TRACERS.names_for("huggingface")]
    assert jobs[0].model.path == str((tmp_path / "m").resolve())
    assert jobs[0].timeout_s == 900 and jobs[0].mode == "eval" and jobs[0].device == "auto"


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    msg = _error(tmp_path, "models:\n  - path: m\n  tracers: [a, b\n")
    assert msg.startswith(f"{tmp_path / 'config.yaml'}:")
    assert "malformed YAML" in msg
    assert msg.split(":")[1] in {"3", "4"}


def test_unknown_tracer_lists_valid_ones(tmp_path: Path) -> None:
    msg = _error(tmp_path, "models:\n  - path: m\n    tracers: [torch_dispatch, torch_dispach]\n")
    assert msg == (
        f"{tmp_path / 'config.yaml'}:3: models[0].tracers[1]: unknown tracer 'torch_dispach' "
        f"(valid: {', '.join(sorted(TRACERS))})"
    )


def test_missing_model_path(tmp_path: Path) -> None:
    msg = _error(tmp_path, "models:\n  - path: m\n  - path: nowhere/model\n")
    assert f"{tmp_path / 'config.yaml'}:3: models[1].path: model directory" in msg
    assert str((tmp_path / "nowhere/model").resolve()) in msg and "does not exist" in msg


@pytest.mark.parametrize(
    "bad_id", ["../../etc", "/etc/passwd", "org/../x", "a/b/c", "~root/x", "org--x"]
)
def test_model_id_path_tricks_are_rejected(tmp_path: Path, bad_id: str) -> None:
    msg = _error(tmp_path, f"models:\n  - id: '{bad_id}'\n")
    assert f"invalid model id '{bad_id}'" in msg
    assert "use `path:` for a local directory" in msg


def test_unknown_field_lists_valid_fields(tmp_path: Path) -> None:
    msg = _error(tmp_path, "models:\n  - path: m\n    seqlen: 4\n")
    assert ":3: models[0].seqlen: unknown field 'seqlen' (valid: " in msg
    assert "seq_len" in msg


def test_id_and_path_together(tmp_path: Path) -> None:
    msg = _error(tmp_path, "models:\n  - path: m\n    id: org/name\n")
    assert "give exactly one of `id`" in msg


def test_literal_choices_are_listed(tmp_path: Path) -> None:
    msg = _error(tmp_path, "defaults:\n  mode: training\nmodels:\n  - path: m\n")
    assert ":2: defaults.mode:" in msg and "'eval' or 'train'" in msg


def test_tracer_options_are_validated(tmp_path: Path) -> None:
    msg = _error(
        tmp_path,
        "defaults:\n  tracer_options:\n    torch_profiler: {step: 3}\nmodels:\n  - path: m\n",
    )
    assert msg.endswith(
        ":3: defaults.tracer_options.torch_profiler.step: unknown option 'step' (options of "
        "torch_profiler: gzip_level, profile_memory, record_shapes, steps, with_flops, with_stack)"
    )


def test_tracer_not_applicable_to_framework(tmp_path: Path) -> None:
    msg = _error(
        tmp_path, "models:\n  - id: org/m\n    framework: vllm\n    tracers: [torch_dispatch]\n"
    )
    assert "tracer 'torch_dispatch' does not apply to framework 'vllm'" in msg


def test_defaults_are_filtered_per_framework(tmp_path: Path) -> None:
    cfg, _ = load_config(_write(tmp_path, "models:\n  - path: m\n    framework: huggingface\n"))
    assert planned_tracers(cfg, cfg.models[0]) == TRACERS.names_for("huggingface")
    assert "torch_dispatch" in TRACERS.names_for("huggingface")


def test_duplicate_jobs_need_a_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "models:\n  - path: m\n  - path: m\n")
    # Found while loading, so the error names the line of the second entry.
    with pytest.raises(
        ConfigError,
        match=r"config.yaml:3: models\[1\]: plans job '[^']+' as models\[0\] does; "
        "give one of them a distinct `name:`",
    ):
        load_config(path)


def test_cli_prints_one_line_without_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path, "models:\n  - path: m\n    tracers: [nope]\n")
    proc = kt("run", str(path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert f"valid: {', '.join(sorted(TRACERS))}" in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = kt("run", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 2 and "config file not found" in missing.stderr
    debug = kt("--debug", "run", str(path))
    assert "Traceback" in debug.stderr


def test_config_schema_and_validate(tmp_path: Path) -> None:
    import json

    schema = json.loads(kt("config", "schema").stdout)
    assert "models" in schema["properties"] and "defaults" in schema["properties"]
    proc = kt("config", "validate", str(_write(tmp_path, "models:\n  - path: m\n")))
    assert proc.returncode == 0 and f"{len(TRACERS.names_for('huggingface'))} job(s)" in proc.stdout


def test_reading_a_config_loads_no_tracer_and_no_planning(tmp_path: Path) -> None:
    """config is the schema: parsing a file (schema errors included) needs neither the tracer
    registry nor the orchestrator (the import-linter contract config-is-schema, at run time)."""
    import subprocess
    import sys

    path = _write(tmp_path, "models:\n  - path: m\n    batch_size: 0\n")
    probe = (
        "import sys\n"
        "from kerneltracer.config import read_config\n"
        "from kerneltracer.errors import ConfigError\n"
        "try:\n"
        "    read_config(sys.argv[1])\n"
        "except ConfigError as exc:\n"
        "    print('error:', exc)\n"
        "print(*sorted(m for m in sys.modules if m.startswith(\n"
        "    ('kerneltracer.tracers', 'kerneltracer.orchestrator', 'kerneltracer.worker'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    error, loaded = proc.stdout.splitlines()
    assert "models[0].batch_size" in error and ":3" in error
    assert loaded == ""


def test_a_planning_problem_names_the_line_of_the_config(tmp_path: Path) -> None:
    message = _error(tmp_path, "models:\n  - path: m\n    tracers: [no_such]\n")
    assert ":3" in message and "unknown tracer 'no_such'" in message
