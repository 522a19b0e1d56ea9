"""torch's flight recorder on gloo ranks (torch 2.13 records gloo's collectives): what the
launcher arms, what a rank's dump says it was blocked in, and the one line made of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from kerneltracer.worker.parallel import flightrec, launch
from tests.helpers import wait_until

# Rank 0 blocks in an all_reduce rank 1 never joins; rank 0's recorder thread is signalled.
_BLOCKED = textwrap.dedent(
    """
    import os, signal, sys, time
    from datetime import timedelta
    from pathlib import Path
    from kerneltracer.worker.parallel import flightrec
    rank = int(os.environ["RANK"])
    rec = flightrec.Recorder(rank, Path(sys.argv[1]))
    rec.arm()
    import torch, torch.distributed as dist
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rec.groups["0"] = {"axis": "tp", "ranks": [0, 1]}
    dist.all_reduce(torch.ones(4, 3))
    if rank == 1:
        time.sleep(8)
        os._exit(0)
    Path(sys.argv[1], "ready").touch()  # armed, and about to block
    dist.all_reduce(torch.ones(2, 8))  # blocks: rank 1 sleeps
    """
)


def test_the_launcher_arms_the_recorder_unless_the_user_did(tmp_path: Path) -> None:
    env = flightrec.env(tmp_path, {"TORCH_FR_BUFFER_SIZE": "7"})
    assert "TORCH_FR_BUFFER_SIZE" not in env
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == str(tmp_path / "fr_trace_")


def _entry(seq: int, retired: bool, group: str = "0", name: str = "gloo:all_reduce") -> Any:
    return {
        "record_id": seq - 1,
        "collective_seq_id": seq,
        "profiling_name": name,
        "process_group": [group, "default_pg"],
        "retired": retired,
        "input_sizes": [[1, 16, 128]],
        "output_sizes": [[1, 16, 128]],
        "input_dtypes": ["Float"],
    }


def test_the_first_unretired_entry_is_where_a_rank_waits() -> None:
    doc = {
        "groups": {"0": {"axis": "tp", "ranks": [0, 1]}},
        "trace": {"entries": [_entry(1, True), _entry(2, False), _entry(3, False)]},
    }
    found = flightrec.in_flight(doc, failed=False)
    assert found is not None
    assert (found["state"], found["name"], found["seq"], found["axis"]) == (
        "waiting in",
        "gloo:all_reduce",
        2,
        "tp",
    )
    assert flightrec.describe(found) == (
        "waiting in gloo:all_reduce #2 on tp (group 0) of ranks 0, 1, sizes [[1, 16, 128]] "
        "Float (flight recorder)"
    )
    # gloo retires the entry whose collective failed: a failed rank was in its last one.
    done = {"groups": {}, "trace": {"entries": [_entry(1, True), _entry(2, True, group="5")]}}
    assert flightrec.in_flight(done, failed=False) is None
    failed = flightrec.in_flight(done, failed=True)
    assert failed is not None and failed["state"] == "failed in" and failed["group"] == "5"
    assert "on group 5," in flightrec.describe(failed)


def test_a_blocked_gloo_rank_dumps_its_recorder_when_signalled(tmp_path: Path) -> None:
    port = launch.free_port()
    procs = []
    for rank in (0, 1):
        rank_dir = tmp_path / f"rank_{rank}"
        rank_dir.mkdir()
        env = launch.rank_env(dict(os.environ), rank, 2, port)
        env.update(flightrec.env(rank_dir, env))
        procs.append(
            subprocess.Popen([sys.executable, "-c", _BLOCKED, str(rank_dir)], env=env, cwd=tmp_path)
        )
    rank_dir = tmp_path / "rank_0"
    found = None
    try:
        assert wait_until(lambda: (rank_dir / "ready").exists(), timeout=60), "rank 0 never ran"
        for _ in range(20):  # the signal may come before the collective's entry is issued
            procs[0].send_signal(flightrec.DUMP_SIGNAL)
            time.sleep(0.5)
            doc = flightrec.read(rank_dir)
            found = flightrec.in_flight(doc, failed=False) if doc else None
            if found is not None:
                break
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert found is not None, (rank_dir / flightrec.FR_JSON).exists()
    assert found["name"] == "gloo:all_reduce" and found["seq"] == 2, found
    assert found["input_sizes"] == [[2, 8]] and found["axis"] == "tp"
    raw = json.loads((rank_dir / flightrec.FR_JSON).read_text())["trace"]
    assert [e["collective_seq_id"] for e in raw["entries"]] == [1, 2]
    assert (rank_dir / "fr_trace_0").stat().st_size > 0  # torchfrtrace's pickle
