"""Generated sbatch scripts: golden files, and outside text that cannot run as commands."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kerneltracer.errors import UsageError
from kerneltracer.slurm import submit as sub
from kerneltracer.slurm.scripts import format_time
from kerneltracer.slurm.submit import array_spec

GOLDEN = Path(__file__).parent / "golden"
KT = "/opt/venv/bin/kerneltracer"


def _config(path: Path, models: list[dict[str, object]], **top: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"models": models, **top}, sort_keys=False))
    return path


def _normalised(text: str, tmp_path: Path) -> str:
    return text.replace(str(tmp_path), "<TMP>")


@pytest.fixture
def fixed_kt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sub, "kerneltracer_argv", lambda: (KT,))


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden file"


def test_scripts_match_golden(tmp_path: Path, fixed_kt: None) -> None:
    config = _config(
        tmp_path / "cfg" / "sweep.yaml",
        [{"id": f"org/m{i}", "timeout_s": 600} for i in range(5)],
        output_dir="../runs/sweep",
        defaults={"tracers": ["torch_dispatch", "torch_profiler"]},
        download={"timeout_s": 1800, "max_workers": 2},
        slurm={
            "partition": "gpu",
            "account": "proj-42",
            "qos": "normal",
            "cpus_per_task": 8,
            "mem": "64G",
            "gpus": 1,
            "jobs": 2,
            "signal_s": 180,
            "extra_sbatch": ["--exclusive", "--constraint=a100"],
        },
    )
    prepared = sub.prepare(config, array_size=2, max_parallel=1)
    # 2 shards: the worst one has 3 models x 2 tracers x 600 s, 2 at once, + 180 s + 300 s.
    assert prepared.spec.task_time == format_time(3 * 2 * 600 / 2 + 180 + 300) == "0-00:38:00"
    assert prepared.array_args([1, 2], "77") == ["--array=1-2%1", "--dependency=afterok:77"]
    _check_golden("download.sbatch", _normalised(prepared.download_script, tmp_path))
    _check_golden("array.sbatch", _normalised(prepared.array_script, tmp_path))


def test_defaults_one_shard_per_model_and_explicit_time(tmp_path: Path, fixed_kt: None) -> None:
    config = _config(tmp_path / "c.yaml", [{"id": "a/b"}, {"id": "c/d"}], slurm={"time": "45"})
    prepared = sub.prepare(config, partition="short")
    assert prepared.spec.shards == 2
    assert "#SBATCH --time=45\n" in prepared.array_script
    assert "#SBATCH --partition=short\n" in prepared.array_script
    assert prepared.array_args([1, 2]) == ["--array=1-2"]
    assert array_spec([5, 1, 2, 3, 7, 8]) == "1-3,5,7-8"


@pytest.mark.parametrize(
    ("slurm", "message"),
    [
        ({"extra_sbatch": ["--x\necho pwned"]}, "one sbatch option"),
        ({"extra_sbatch": ["echo pwned"]}, "one sbatch option"),
        ({"partition": "gpu\necho pwned"}, "newlines are not allowed"),
        ({"time": "1; echo"}, "expected minutes"),
    ],
)
def test_unsafe_sbatch_options_are_refused(
    tmp_path: Path, fixed_kt: None, slurm: dict[str, object], message: str
) -> None:
    config = _config(tmp_path / "c.yaml", [{"id": "a/b"}], slurm=slurm)
    with pytest.raises(UsageError, match=message):
        sub.prepare(config)


EVIL = "x; rm -rf ~ $(touch PWNED) `touch PWNED2` 'q \\"
# Model dirs never enter a script, so they may hold what sbatch paths may not (a double quote).
EVIL_MODEL = EVIL + '"'


def test_hostile_names_are_inert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model dir, config dir and run dir named like shell commands reach kerneltracer as
    plain arguments: run the generated scripts with a recorder in kerneltracer's place."""
    recorder = tmp_path / "bin" / "kerneltracer"
    recorder.parent.mkdir()
    log = tmp_path / "argv.jsonl"
    recorder.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    recorder.chmod(recorder.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sub, "kerneltracer_argv", lambda: (str(recorder),))
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary").write_text("still here")
    evil_dir = tmp_path / EVIL
    (evil_dir / EVIL_MODEL).mkdir(parents=True)
    config = _config(
        evil_dir / "c.yaml",
        [{"path": EVIL_MODEL}, {"path": EVIL_MODEL, "name": "again", "mode": "train"}],
        output_dir=f"runs/{EVIL}",
    )
    prepared = sub.prepare(config, array_size=3)
    sub.write_scripts(prepared)
    run_dir = str(evil_dir / "runs" / EVIL)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "SLURM_ARRAY_TASK_ID": "2"}
    for script in (prepared.download_path, prepared.array_path):
        assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
        proc = subprocess.run(
            ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls == [
        ["download", str(config)],
        [
            "run", str(config), "--output-dir", run_dir,
            "--jobs", "1", "--kill-grace", "5", "--shard", "2/3",
        ],
    ]  # fmt: skip
    assert not list(tmp_path.rglob("PWNED*"))
    assert (home / "canary").read_text() == "still here"
    assert "again" not in prepared.array_script + prepared.download_script


def test_run_dir_sbatch_cannot_represent_is_refused(tmp_path: Path, fixed_kt: None) -> None:
    config = _config(tmp_path / "c.yaml", [{"id": "a/b"}], output_dir='runs/a"b')
    with pytest.raises(UsageError, match="double quotes are not allowed"):
        sub.prepare(config)


def _directives(script: str) -> list[str]:
    return [
        line.removeprefix("#SBATCH ") for line in script.splitlines() if line.startswith("#SBATCH")
    ]


def test_a_multi_rank_job_asks_for_its_ranks_on_one_node(tmp_path: Path, fixed_kt: None) -> None:
    """CPU ranks: a core per rank; GPU ranks: a GPU per rank; all on the task's one node.
    Unset values are raised (with a note); a single-rank config asks as before."""
    cpu = _config(
        tmp_path / "cpu.yaml",
        [{"id": "org/m", "parallel": {"tp": 4, "dp": 2}, "device": "cpu"}, {"id": "org/n"}],
        defaults={"tracers": ["torch_dispatch"], "timeout_s": 600},
        slurm={"jobs": 2},
    )
    prepared = sub.prepare(cpu, array_size=1)
    lines = _directives(prepared.array_script)
    assert "--nodes=1" in lines and "--cpus-per-task=8" in lines, lines
    assert not any(line.startswith("--gres") for line in lines)
    assert prepared.notes == ["slurm.cpus_per_task not set: asking 8 (one per rank of tp4.dp2)"]
    # The TP 4 x DP 2 job holds both -j slots for its 600 s, the other job one.
    assert prepared.spec.task_time == format_time((600 * 2 + 600) / 2 + 120 + 300)

    gpu = _config(
        tmp_path / "gpu.yaml",
        [{"id": "org/m", "parallel": {"tp": 2}, "device": "cuda"}],
        defaults={"tracers": ["torch_dispatch"]},
    )
    lines = _directives(sub.prepare(gpu).array_script)
    assert {"--nodes=1", "--gres=gpu:2", "--cpus-per-task=4"} <= set(lines), lines

    single = _config(tmp_path / "one.yaml", [{"id": "org/m"}])
    lines = _directives(sub.prepare(single).array_script)
    assert "--nodes=1" not in lines and "--cpus-per-task=4" in lines


@pytest.mark.parametrize(
    ("slurm", "device", "message"),
    [
        (
            {"gpus": 1},
            "auto",
            "slurm.gpus 1: parallel tp4 needs 4 GPUs on one node (one per rank); set "
            "slurm.gpus to at least that, or device: cpu",
        ),
        (
            {"cpus_per_task": 2},
            "cpu",
            "slurm.cpus_per_task 2: parallel tp4 needs 4 CPUs on one node (one per rank)",
        ),
    ],
)
def test_a_task_too_small_for_its_ranks_is_refused_before_submitting(
    tmp_path: Path, fixed_kt: None, slurm: dict[str, int], device: str, message: str
) -> None:
    config = _config(
        tmp_path / "c.yaml",
        [{"id": "org/m", "parallel": {"tp": 4}, "device": device}],
        defaults={"tracers": ["torch_dispatch"]},
        slurm=slurm,
    )
    with pytest.raises(UsageError) as err:
        sub.prepare(config)
    assert str(err.value) == message
