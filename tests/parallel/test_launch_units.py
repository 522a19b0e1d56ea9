"""The multi-rank launcher's pieces, without starting a rank: what it refuses, the variables
a rank gets, how it reads a rank's phase and stack, and which rank it names first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.jobspec import JobSpec, ModelRef
from kerneltracer.errors import ConfigError, UnsupportedError
from kerneltracer.orchestrator.planning import load_config
from kerneltracer.worker.parallel import launch
from tests.helpers import write_config


def _job(tracer: str = "torch_dispatch", framework: str = "huggingface") -> JobSpec:
    return JobSpec(
        key=f"m/{tracer}.tp2",
        model=ModelRef(display="m", slug="m", path="/m", weights="real"),
        tracer=tracer,
        tracer_version="1",
        exclusive_group=None,
        framework=framework,
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


def test_what_real_ranks_do_not_run_is_refused_in_one_line() -> None:
    assert launch.refuse(_job()).layout.world_size == 2
    with pytest.raises(UnsupportedError, match="print_aten_export on real ranks is not built yet"):
        launch.refuse(_job("print_aten_export"))
    with pytest.raises(
        UnsupportedError,
        match=r"parallel with weights real is not launched for vllm: vLLM starts its own rank",
    ):
        launch.refuse(_job(framework="vllm"))


def test_weights_real_with_parallel_is_planned_and_layers_refused(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    ok = write_config(tmp_path / "a.yaml", [{"path": "m", "parallel": {"tp": 2}}])
    load_config(ok)
    cut = write_config(tmp_path / "b.yaml", [{"path": "m", "parallel": {"tp": 2, "layers": 1}}])
    with pytest.raises(ConfigError, match=r"parallel\.layers builds a cut-down model") as err:
        load_config(cut)
    assert "\n" not in str(err.value)


def test_each_rank_gets_the_torch_distributed_variables() -> None:
    port = launch.free_port()
    env = launch.rank_env({"PATH": "/bin"}, 1, 2, port)
    assert env["RANK"] == "1" and env["LOCAL_RANK"] == "1" and env["WORLD_SIZE"] == "2"
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"] == str(port)
    assert env["PATH"] == "/bin"


def test_a_ranks_open_phase_and_collective_are_read(tmp_path: Path) -> None:
    phases = tmp_path / "phases.log"
    phases.write_text(
        "1 2 [rank 0] [init] Start\n1 2 [rank 0] [init] End\n"
        "3 2 [rank 0] [warmup] Start\n3 2 [rank 0] [warmup] End\n"
        "4 2 [rank 0] [trace] Start\n"
    )
    assert launch.current_phase(phases) == "trace"
    stacks = tmp_path / "stacks.txt"
    stacks.write_text(
        "Thread 0x00007f (most recent call first):\n"
        '  File "/x/torch/distributed/distributed_c10d.py", line 3012 in all_reduce\n'
        '  File "/x/torch/distributed/c10d_logger.py", line 81 in wrapper\n'
        '  File "/x/transformers/integrations/tensor_parallel.py", line 9 in _prepare\n'
    )
    assert launch.collective_in(stacks) == "all_reduce (distributed_c10d.py:3012)"
    # A DTensor's collective is waited for where its result is used: named with its caller.
    stacks.write_text(
        "Current thread 0x00007f (most recent call first):\n"
        '  File "/x/torch/_ops.py", line 875 in __call__\n'
        '  File "/x/torch/distributed/_functional_collectives.py", line 142 in wait_tensor\n'
        '  File "/x/torch/distributed/_functional_collectives.py", line 1122 in wait\n'
        '  File "/x/torch/distributed/tensor/_redistribute.py", line 1766 in '
        "redistribute_local_tensor\n"
        "Thread 0x00007e (most recent call first):\n"
        '  File "/x/torch/distributed/distributed_c10d.py", line 1 in barrier\n'
    )
    assert launch.collective_in(stacks) == (
        "wait_tensor, from redistribute_local_tensor (_functional_collectives.py:142)"
    )
    assert launch.current_phase(tmp_path / "none.log") is None
    assert launch.collective_in(tmp_path / "none.txt") is None


class _Done:
    def __init__(self, code: int) -> None:
        self.returncode = code
        self.pid = 0


def _rank(tmp: Path, r: int, code: int, ended: float, status: dict[str, Any] | None) -> Any:
    d = tmp / f"rank_{r}"
    d.mkdir()
    proc: Any = _Done(code)
    rank = launch._Rank(r, proc, d, ended_at=ended, status=status)
    return rank


def test_the_first_failure_is_never_the_peer_that_lost_its_connection(tmp_path: Path) -> None:
    """Rank 1 lost its peer and failed in the same poll round as rank 0's death, seen even
    earlier: rank 0 is named first, rank 1's line says the collective it was in."""
    lost = {
        "status": "failed",
        "phase": "trace",
        "collective": "all_reduce",
        "error": {"root_cause": "RuntimeError: [pair.cc:537] Read error: Connection reset by peer"},
    }
    killed = _rank(tmp_path, 0, -9, ended=2.0, status=None)
    survivor = _rank(tmp_path, 1, 1, ended=1.0, status=lost)
    err = launch._failure([killed, survivor], [killed, survivor])
    assert err.error.rank == 0  # type: ignore[attr-defined]
    assert err.error.root_cause.startswith("rank 0 failed first: killed by SIGKILL")
    assert "rank 1: failed: RuntimeError" in err.error.root_cause
    assert "(in all_reduce, during trace)" in err.error.root_cause
    assert str(err.status.value) == "failed"


def test_a_ranks_own_status_becomes_the_jobs(tmp_path: Path) -> None:
    oom = {"status": "oom", "phase": "load", "error": {"root_cause": "MemoryError"}}
    first = _rank(tmp_path, 1, 4, ended=1.0, status=oom)
    other = _rank(tmp_path, 0, -9, ended=2.0, status=None)
    other.killed_by_us, other.doing = True, "in phase load"
    err = launch._failure([other, first], [other, first])
    assert err.status.value == "oom"
    assert "rank 0: killed by the launcher after the failure (in phase load)" in str(err)


def test_ranks_fork_unless_their_tracer_reads_its_settings_at_import() -> None:
    """Forked from the launcher by default; a fresh interpreter per rank for torch_compile
    (TORCH_TRACE and inductor's cache are read when torch is imported, each rank its own),
    for any TORCH_TRACE, and when KT_RANK_START=spawn asks for it."""
    from kerneltracer.worker.parallel import start

    assert start.how_to_start(_job(), {})[0] == start.FORK
    how, why = start.how_to_start(_job("torch_compile"), {})
    assert how == start.SPAWN and "fresh_interpreter" in why
    assert start.how_to_start(_job(), {"TORCH_TRACE": "/t"})[0] == start.SPAWN
    how, why = start.how_to_start(_job(), {"KT_RANK_START": "spawn"})
    assert how == start.SPAWN and why == "KT_RANK_START=spawn"


def test_a_rank_process_is_named_for_its_rank() -> None:
    """Forked ranks share their launcher's command line: the process name tells them apart,
    and the memory ceiling's message names the rank from it."""
    import subprocess
    import sys

    import psutil

    from kerneltracer.process.supervisor import describe_process, rank_process_name

    code = (
        "import sys, time; from kerneltracer.process import lifeline; "
        f"lifeline.set_name({rank_process_name(3)!r}); print('named', flush=True); time.sleep(30)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"named\n"
        assert describe_process(psutil.Process(proc.pid)) == f"rank 3 (pid {proc.pid})"
    finally:
        proc.kill()
        proc.wait()
    assert not describe_process(psutil.Process()).startswith("rank ")


# A rank blocked in a collective whose answers come late, as on a loaded machine: its stacks
# (faulthandler, on SIGUSR1) at once, its flight recorder dump (SIGUSR2) only after a pause
# longer than the fixed 2.5 s the launcher used to wait before it read what it had.
_SLOW_RANK = """
import faulthandler, json, os, signal, sys, threading, time
from pathlib import Path
from kerneltracer.worker.parallel import flightrec
rank_dir = Path(sys.argv[1])
stacks = open(rank_dir / "stacks.txt", "w")
faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
signal.pthread_sigmask(signal.SIG_BLOCK, {flightrec.DUMP_SIGNAL})
def recorder():
    signal.sigwait({flightrec.DUMP_SIGNAL})
    time.sleep(float(sys.argv[2]))
    entry = {"record_id": 0, "collective_seq_id": 1, "profiling_name": "gloo:all_reduce",
             "process_group": ["0", ""], "retired": False, "input_sizes": [[4]],
             "input_dtypes": ["Float"]}
    doc = {"rank": 0, "groups": {"0": {"axis": "tp", "ranks": [0, 1]}},
           "trace": {"entries": [entry]}}
    tmp = rank_dir / "fr.tmp"
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, rank_dir / flightrec.FR_JSON)
threading.Thread(target=recorder, daemon=True).start()
print("ready", flush=True)
time.sleep(120)
"""


def test_the_launcher_waits_for_a_late_ranks_answers(tmp_path: Path) -> None:
    """Asked what it is doing, a rank that answers late is still heard: the launcher waits
    for the answers themselves (up to its deadline), not a fixed time."""
    import subprocess
    import sys
    import time

    rank_dir = tmp_path / "rank_0"
    rank_dir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_RANK, str(rank_dir), "3.5"], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        rank = launch._Rank(0, proc, rank_dir)
        launch._ask([rank], until=time.monotonic() + 120)
        doing = launch._doing(rank_dir)
    finally:
        proc.kill()
        proc.wait()
    assert doing is not None and "waiting in gloo:all_reduce #1 on tp" in doing, doing
    assert (rank_dir / "stacks.txt").read_text().count("most recent call first") >= 1


def test_a_rank_that_ended_is_not_waited_for(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    (tmp_path / "rank_0").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    launch._ask([launch._Rank(0, proc, tmp_path / "rank_0")], until=time.monotonic() + 600)
    assert launch._doing(tmp_path / "rank_0") is None


def test_the_launchers_deadline_counts_from_the_workers_own_start() -> None:
    """The supervisor's clock starts when it starts the worker, so the launcher's does too:
    a worker that spent a second before its launch has a second less."""
    import subprocess
    import sys

    code = (
        "import time; time.sleep(1.0); from kerneltracer.worker.parallel import launch; "
        "print(launch.supervisor_deadline(60) - time.monotonic())"
    )
    left = float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert left <= 60 - 0.99
