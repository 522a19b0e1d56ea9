"""`--help` is paid only by the help: listing the commands or showing one command's help
imports no framework, no array library and none of the analyses (a module check, not a timer:
bench/bench_cli_startup.py has the seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from kerneltracer.cli.main import root
from tests.conftest import REPO_ROOT
from tests.spine.test_cli_options import _commands

# Top-level modules (or our packages) that no help text needs.
HEAVY = (
    "torch",
    "transformers",
    "numpy",
    "pyarrow",
    "pandas",
    "pydantic",  # validating configs, JOB.json and status files; no help text
    "yaml",
    "rich",
    "jinja2",
    "kerneltracer.analysis",
    "kerneltracer.config",
    "kerneltracer.export",
    "kerneltracer.fx",
    "kerneltracer.costmodel",
    "kerneltracer.corpus",
    "kerneltracer.coverage",
    "kerneltracer.report",
    "kerneltracer.orchestrator",
    "kerneltracer.worker",
)

# One interpreter: each help runs in a forked child of a process that has imported only the
# CLI's root, and reports the modules it ended with.
_RUNNER = r"""
import json, os, sys
from kerneltracer.cli.main import root
out = {}
for path in json.loads(sys.argv[1]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        sys.stdout = open(os.devnull, "w")
        try:
            root.main(args=[*path, "--help"], prog_name="kerneltracer")
        except SystemExit:
            pass
        os.write(w, json.dumps(sorted(sys.modules)).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    out[" ".join(path)] = json.loads(data)
print(json.dumps(out))
"""


def _heavy(modules: list[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m.startswith(HEAVY) and (m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY)))
    )


def test_no_help_imports_a_heavy_module() -> None:
    paths = [[], *([*name.split()] for name, _ in _commands(root, click.Context(root)))]
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(paths)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
        check=True,
    )
    seen = json.loads(proc.stdout)
    assert len(seen) == len(paths) > 20
    # Every command of the table, and the sub-commands of each group, not only the groups.
    assert set(root.list_commands(click.Context(root))) <= set(seen)
    assert {"logs run", "logs parse", "config validate", "slurm submit", "fx optimize"} <= set(seen)
    heavy = {path or "(root)": _heavy(mods) for path, mods in seen.items() if _heavy(mods)}
    assert heavy == {}
    # Listing the commands loads none of them: their summaries are spelt in main.
    assert [m for m in seen[""] if m.startswith("kerneltracer.cli.")] == ["kerneltracer.cli.main"]


@pytest.mark.parametrize("width", [50, 80, 120])
def test_the_command_list_is_the_one_the_loaded_commands_give(width: int) -> None:
    ctx = click.Context(root, terminal_width=width)
    lazy, loaded = ctx.make_formatter(), ctx.make_formatter()
    root.format_commands(ctx, lazy)
    click.Group.format_commands(root, ctx, loaded)
    assert lazy.getvalue() == loaded.getvalue()
    assert "compile-health" in lazy.getvalue()


def test_what_the_help_spells_out_equals_its_source() -> None:
    from kerneltracer.cli import replay_cmd
    from kerneltracer.cli.options import BUILT_IN_DEVICES
    from kerneltracer.corpus.replay import DEVICES
    from kerneltracer.costmodel import DEFAULT_DEVICE, load_devices

    assert replay_cmd.DEVICES == DEVICES
    table = load_devices(None)
    listed = [name.removesuffix(" (default)") for name in BUILT_IN_DEVICES.split(", ")]
    assert sorted(listed) == table.names()
    assert f"{DEFAULT_DEVICE} (default)" in BUILT_IN_DEVICES


# A command on a tiny input pays only for what that input needs (issue 42: tlparse-class,
# ≤ 0.3 s): the modules it ends with, from a fresh interpreter running it as the CLI does.
_RUN = r"""
import json, sys
from kerneltracer.cli.main import root
try:
    root.main(args=json.loads(sys.argv[1]), prog_name="kerneltracer")
except SystemExit as exc:
    assert not exc.code, exc.code
print("\n" + json.dumps(sorted(sys.modules)))
"""


def _modules_of_a_run(args: list[str]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
        check=True,
    )
    modules: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return modules


def test_status_of_a_run_dir_loads_no_pydantic_and_no_array_library(tmp_path: Path) -> None:
    from tests.report.runs import make_run, status

    run = make_run(
        tmp_path / "run",
        {
            "gpt2/torch_dispatch": status("gpt2/torch_dispatch", "gpt2"),
            "bert/profiler": status("bert/profiler", "bert", status="failed", reason="boom"),
            "opt/torch_dispatch": None,
        },
    )
    for args in (["status", str(run)], ["status", "--json", str(run)]):
        heavy = _heavy(_modules_of_a_run(args))
        # rich prints the table; nothing else heavy: the status files and the manifest are
        # as written, so no pydantic model reads them (kerneltracer.core.wellformed).
        assert [m for m in heavy if not m.startswith("rich")] == [], args


# What their outputs need: the Parquet file (pyarrow, and the numpy it imports), the HTML
# page (jinja2), the trace's arrays (numpy). Nothing else heavy: no pydantic (the timeline's
# results are dataclasses; the device table is read only for a GPU it names), no yaml, no
# pandas.
_OUTPUTS_NEED = {"numpy", "pyarrow", "jinja2"}


def _heavy_tops(modules: list[str]) -> set[str]:
    heavy = [m for m in _heavy(modules) if m.split(".")[0] not in _OUTPUTS_NEED]
    # A library by its name, a package of ours by kerneltracer.<package>.
    return {".".join(m.split(".")[: 2 if m.startswith("kerneltracer.") else 1]) for m in heavy}


def test_compile_health_of_a_small_log_loads_only_what_its_files_need(
    testdata_dir: Path, tmp_path: Path
) -> None:
    log = testdata_dir / "tlparse" / "simple.log"
    modules = _modules_of_a_run(["compile-health", str(log), "-o", str(tmp_path / "out")])
    assert _heavy_tops(modules) == {"kerneltracer.analysis"}
    assert not {"pandas", "pydantic", "yaml"} & set(modules)


def test_timeline_of_a_small_cpu_trace_loads_only_what_its_files_need(
    testdata_dir: Path, tmp_path: Path
) -> None:
    trace = testdata_dir / "hta" / "call_stack" / "backward_thread.json"
    modules = _modules_of_a_run(["timeline", str(trace), "-o", str(tmp_path / "out")])
    assert _heavy_tops(modules) == {"kerneltracer.analysis", "kerneltracer.costmodel"}
    # numpy.ma (~10 ms): the first np.median or plain np.unique imports it, to ask whether
    # it was given a masked array (model/arrays.py has both without).
    assert not {"pandas", "pydantic", "yaml", "numpy.ma"} & set(modules)
    assert "kerneltracer.costmodel.devicespec" not in modules  # no GPU: no table read


def test_timeline_of_a_small_gpu_trace_reads_the_device_table_without_pydantic_or_yaml(
    testdata_dir: Path, tmp_path: Path
) -> None:
    trace = testdata_dir / "hta" / "critical_path" / "cuda_event_sync" / "event_sync_trace.json.gz"
    modules = _modules_of_a_run(["timeline", str(trace), "-o", str(tmp_path / "out")])
    assert "kerneltracer.costmodel.devices" in modules  # an H100: the table is read
    # from devices.json: neither the models nor PyYAML
    assert not {
        "pandas",
        "pydantic",
        "yaml",
        "kerneltracer.costmodel.devicespec",
        "numpy.ma",
    } & set(modules)


# How many threads numpy's OpenBLAS runs with once the command is done, from the library
# numpy loaded (None: numpy is not built on OpenBLAS here, there are none to start).
_BLAS_THREADS = r"""
import ctypes, json, sys
from kerneltracer.cli.main import root
try:
    root.main(args=json.loads(sys.argv[1]), prog_name="kerneltracer")
except SystemExit as exc:
    assert not exc.code, exc.code
with open("/proc/self/maps") as maps:
    libs = {line.split()[-1] for line in maps if "openblas" in line.split()[-1]}
threads = None
for lib in map(ctypes.CDLL, libs):
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                 "openblas_get_num_threads"):
        if hasattr(lib, name):
            threads = getattr(lib, name)()
print("\n" + json.dumps(threads))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/maps")
@pytest.mark.parametrize(("chosen", "expected"), [(None, 1), ("2", 2)])
def test_the_trace_reader_runs_numpy_without_blas_threads_unless_the_user_chose(
    testdata_dir: Path, tmp_path: Path, chosen: str | None, expected: int
) -> None:
    """OpenBLAS starts its threads when numpy is imported; the readers never multiply
    matrices, so `timeline` asks for one before numpy loads. A user's choice stands."""
    import os

    trace = testdata_dir / "hta" / "call_stack" / "backward_thread.json"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
    args = ["timeline", str(trace), "-o", str(tmp_path / "out")]
    proc = subprocess.run(
        [sys.executable, "-c", _BLAS_THREADS, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=300,
        check=True,
    )
    threads = json.loads(proc.stdout.splitlines()[-1])
    if threads is None:
        pytest.skip("numpy here is not built on OpenBLAS")
    assert threads == expected
