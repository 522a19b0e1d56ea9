"""A full disk during ``run``: the job ends failed naming the directory, the run stops with
exit 1 and one line, and nothing is left half-written (no tmp/, no temp files).

The run dir lives on a 16 KiB tmpfs mounted in a private mount namespace (``unshare -m``),
so the mount disappears with the command; this needs root, as CI has.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltracer.core.oserrors import os_error_text, stops_run
from tests.conftest import require
from tests.helpers import KT, write_config


def _can_mount() -> bool:
    if os.geteuid() != 0:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


def test_os_errors_read_as_one_line_with_the_directory() -> None:
    where = Path("/runs/x/jobs/m/t")
    assert os_error_text(OSError(errno.ENOSPC, "No space left on device"), where) == (
        "no space left on /runs/x/jobs/m/t"
    )
    assert os_error_text(OSError(errno.EDQUOT, "Disk quota exceeded"), where) == (
        "disk quota exceeded on /runs/x/jobs/m/t"
    )
    named = OSError(errno.ENAMETOOLONG, "File name too long", "/r/" + "a" * 300)
    assert os_error_text(named).startswith("file name too long: /r/aaa")
    assert os_error_text(OSError(errno.ECHILD, "No child processes"), where) == (
        "No child processes: /runs/x/jobs/m/t"
    )
    assert stops_run(OSError(errno.ENOSPC, "x")) and stops_run(OSError(errno.EROFS, "x"))
    assert not stops_run(OSError(errno.EACCES, "x"))


def test_full_disk_fails_the_job_and_stops_the_run_cleanly(tmp_path: Path) -> None:
    require(_can_mount(), "root with mount namespaces (unshare -m) for a tiny tmpfs")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (model / "pytorch_model.bin").write_bytes(b"not weights")  # complete enough to start
    run_dir = tmp_path / "full" / "run"
    run_dir.parent.mkdir()
    config = write_config(
        tmp_path / "c.yaml",
        [{"path": str(model), "name": "m1"}, {"path": str(model), "name": "m2"}],
        defaults={"tracers": ["torch_dispatch"], "device": "cpu"},
    )
    config.write_text(config.read_text().replace(str(tmp_path / "run"), str(run_dir)))
    mount = f"mount -t tmpfs -o size=16k tmpfs {shlex.quote(str(run_dir.parent))}"
    command = f"{mount} && exec {shlex.join([*KT, 'run', str(config)])}"
    env = {**os.environ, "COLUMNS": "300", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    job_dir = run_dir / "jobs" / "m1" / "torch_dispatch"
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: no space left on {job_dir}: the run stopped (running jobs were marked "
        "interrupted); free space and run again to finish it"
    )
    row = next(line for line in done.stdout.splitlines() if "m1/torch_dispatch" in line)
    assert "failed" in row and f"no space left on {job_dir}" in row
    # The second model never started: the run stopped instead of failing it the same way.
    assert "m2/torch_dispatch" not in done.stderr
    # The namespace is gone with its mount: the run dir's files went with it, so what was
    # left behind is checked inside a namespace of its own in the next test.


def test_full_disk_leaves_no_scratch_or_temp_files(tmp_path: Path) -> None:
    require(_can_mount(), "root with mount namespaces (unshare -m) for a tiny tmpfs")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (model / "pytorch_model.bin").write_bytes(b"not weights")  # complete enough to start
    run_dir = tmp_path / "full" / "run"
    run_dir.parent.mkdir()
    config = write_config(
        tmp_path / "c.yaml",
        [{"path": str(model), "name": "m1"}],
        defaults={"tracers": ["torch_dispatch"], "device": "cpu"},
    )
    config.write_text(config.read_text().replace(str(tmp_path / "run"), str(run_dir)))
    mount = f"mount -t tmpfs -o size=16k tmpfs {shlex.quote(str(run_dir.parent))}"
    run = shlex.join([*KT, "run", str(config)])
    listing = f"find {shlex.quote(str(run_dir))} -print"
    command = f"{mount} && {{ {run} >/dev/null 2>&1; {listing}; }}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    left = [Path(p).relative_to(run_dir) for p in done.stdout.split() if p != str(run_dir)]
    assert left, done.stderr
    assert not [p for p in left if p.name == "tmp" or p.name.endswith(".tmp")], left
    job = Path("jobs/m1/torch_dispatch")
    kept = ("JOB.json", "worker.log", "phases.log", "_TRACE_STATUS.json")
    assert {p for p in left if p.parent == job} <= {job / n for n in kept}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_code_in_the_table_has_its_words(code: int) -> None:
    assert "on /d" in os_error_text(OSError(code, os.strerror(code)), "/d")


# --- analysis commands: all outputs or none, and the error names the directory ----------
# Each size fits part of the command's outputs (measured), so a writer that made each file
# visible at once would leave some behind.
FULL_AT = {
    "report": ("report {run} -o {out}", "96k"),
    "compile-health": ("compile-health {run} -o {out}", "16k"),
    "corpus": ("corpus {run} -o {out}", "24k"),
    "readiness": ("readiness {run} --support {support} -o {out}", "8k"),
    "diff": ("diff {run} {run_b} -o {out}", "12k"),
    "timeline": ("timeline {trace} -o {out}", "64k"),
    "logs": ("logs {log} -o {out}", "128k"),
}


@pytest.fixture(scope="module")
def analysis_inputs(tmp_path_factory: pytest.TempPathFactory, testdata_dir: Path) -> dict[str, str]:
    """A run with two dispatch jobs and two compile jobs (a copy of it for diff), a
    support list, a chrome trace and a TORCH_TRACE log."""
    import shutil

    from tests.coverage.synth import dispatch_files, make_job
    from tests.report.runs import make_run

    root = tmp_path_factory.mktemp("disk-full-inputs")
    log = testdata_dir / "tlparse" / "simple.log"

    def t(shape: list[int]) -> dict[str, object]:
        return {"shape": shape, "dtype": "float32", "device": "cpu"}

    def row(op: str, n: int) -> str:
        return json.dumps(
            {
                "op": op,
                "phase": "forward",
                "count": n,
                "inputs": [t([2, 4]), t([4, 4])],
                "kwargs": {},
                "outputs": [t([2, 4])],
                "modules": {"model.x": n},
            }
        )

    run = make_run(root / "run", {})
    for model in ("org/a", "org/b"):
        files = dispatch_files({"aten.mm.default": (3, 1), "aten.add.Tensor": (2, 1)})
        files["dispatch_ops.jsonl"] = row("aten.mm.default", 3) + "\n" + row("aten.add.Tensor", 2)
        make_job(run, model, "torch_dispatch", files)
        (run / "jobs" / model.replace("/", "-") / "torch_compile" / "torch_trace").mkdir(
            parents=True
        )
        make_job(run, model, "torch_compile", {"torch_trace/t.log": log.read_bytes()})
    shutil.copytree(run, root / "run_b")
    (root / "support.yaml").write_text("- aten.mm.default\n")
    (trace,) = (testdata_dir / "hta" / "critical_path" / "alexnet").glob("*.json.gz")
    return {
        "run": str(run),
        "run_b": str(root / "run_b"),
        "support": str(root / "support.yaml"),
        "trace": str(trace),
        "log": str(log),
    }


def _in_full_disk(size: str, mount: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a mount namespace with a ``size`` tmpfs at ``mount``."""
    command = f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(mount))} && {script}"
    env = {**os.environ, "COLUMNS": "300", "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.parametrize("command", sorted(FULL_AT))
def test_full_disk_leaves_no_output_and_names_the_directory(
    analysis_inputs: dict[str, str], tmp_path: Path, command: str
) -> None:
    require(_can_mount(), "root with mount namespaces (unshare -m) for a tiny tmpfs")
    args, size = FULL_AT[command]
    mount = tmp_path / "full"
    mount.mkdir()
    out = mount / "out"
    argv = [a.format(out=out, **analysis_inputs) for a in args.split()]
    listing = f"find {shlex.quote(str(mount))} -mindepth 1 -print"
    script = f"{shlex.join([*KT, *argv])} 2>/tmp/kt-err.$$; rc=$?; {listing}; " + (
        "cat /tmp/kt-err.$$ >&2; rm -f /tmp/kt-err.$$; exit $rc"
    )
    done = _in_full_disk(size, mount, script)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    # The output directory (or the one under it being written), never a temp file's name
    # nor "the file system".
    assert last.startswith(f"error: no space left on {out}"), last
    assert ".tmp" not in last, last
    left = [line for line in done.stdout.splitlines() if line.startswith(str(mount))]
    assert left == [], left  # all outputs or none: nothing, not even an empty dir


def test_full_disk_keeps_the_previous_outputs_whole(
    analysis_inputs: dict[str, str], tmp_path: Path
) -> None:
    require(_can_mount(), "root with mount namespaces (unshare -m) for a tiny tmpfs")
    mount = tmp_path / "full"
    mount.mkdir()
    out = mount / "out"
    health = shlex.join([*KT, "compile-health", analysis_inputs["run"], "-o", str(out)])
    # Every file, the compile ids' texts in their folders too.
    sums = f"find {shlex.quote(str(out))} -type f -exec sha256sum {{}} + | sort"
    fill = f"cat /dev/zero > {shlex.quote(str(mount / 'filler'))} 2>/dev/null"
    # Write once, fill the disk (leaving 4 KiB free), write again: the second write fails.
    script = (
        f"{health} >/dev/null && {sums} && {fill}; rm -f {mount / 'filler'}; "
        f"head -c $(( $(stat -f -c '%a*%S' {mount}) - 4096 )) /dev/zero > {mount / 'filler'}; "
        f"{health} >/dev/null; echo rc=$?; {sums}"
    )
    done = _in_full_disk("128k", mount, script)
    before, _, after = done.stdout.partition("rc=")
    rc, _, after = after.partition("\n")
    assert rc == "1", done.stdout + done.stderr
    assert before.strip() and before.strip() == after.strip(), done.stdout
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: no space left on {out}")
