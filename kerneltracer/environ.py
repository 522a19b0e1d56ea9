"""Every ``KT_*`` environment variable kerneltracer reads: its name and its one reader.

:meth:`KtEnv.read` is the only code that looks these names up (tests/spine/test_environ.py
fails on another ``os.environ`` read of a ``KT_`` name). An entry point (the CLI, the worker
and its fork server, a download child) reads it once and passes the values down, as
huggingface_hub's ``constants`` does for ``HF_*``. Here, in core, because both sides use it:
the orchestrator sets the worker's variables, the worker and its helpers read them, and
none of them may load planning or config.

Framework variables (``TORCH_*``, ``CUDA_*``, ``HF_*``) are not here: they are set for the
libraries of a child process, which read them themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

# The orchestrator's pid: a worker whose orchestrator is gone stops its own process group.
ENV_ORCHESTRATOR_PID = "KT_ORCHESTRATOR_PID"
# The GPU slot the orchestrator gave the job (also its CUDA_VISIBLE_DEVICES).
ENV_GPU_SLOT = "KT_GPU_SLOT"
# Full tracebacks on errors (the CLI's --debug).
ENV_DEBUG = "KT_DEBUG"
# Bounds on every input file a command reads (kerneltracer.inputguard; the CLI's
# --max-input-size and --max-events set them, so they reach the processes it starts too).
ENV_MAX_INPUT_SIZE = "KT_MAX_INPUT_SIZE"
ENV_MAX_EVENTS = "KT_MAX_EVENTS"
# Test hook of multi-rank jobs (kerneltracer.worker.parallel.rank): ``<rank>:load``,
# ``<rank>:forward``, ``<rank>:hang`` or ``<rank>:memory`` makes that rank fail there (or
# hang, or hold 1 GiB more).
ENV_RANK_FAULT = "KT_RANK_FAULT"
# ``spawn``: every rank of a multi-rank job starts as a fresh interpreter, never forked from
# its launcher (kerneltracer.worker.parallel.start); for a comparison, or a library that
# misbehaves after a fork.
ENV_RANK_START = "KT_RANK_START"


@dataclass(frozen=True, slots=True)
class KtEnv:
    """The ``KT_*`` variables of one process, read once at its entry point."""

    orchestrator_pid: int | None = None  # absent or not a pid: no parent to outlive
    gpu_slot: str | None = None
    debug: bool = False
    # As written: a malformed bound is an error only where an input file is read
    # (InputLimits.from_env), never for a worker that reads none.
    max_input_size: str = ""
    max_events: str = ""
    rank_fault: str | None = None
    rank_spawn: bool = False

    @classmethod
    def read(cls, env: Mapping[str, str] | None = None) -> KtEnv:
        env = os.environ if env is None else env
        pid = env.get(ENV_ORCHESTRATOR_PID, "").strip()
        return cls(
            orchestrator_pid=int(pid) if pid.isdigit() else None,
            gpu_slot=env.get(ENV_GPU_SLOT) or None,
            debug=env.get(ENV_DEBUG, "") not in ("", "0"),
            max_input_size=env.get(ENV_MAX_INPUT_SIZE, "").strip(),
            max_events=env.get(ENV_MAX_EVENTS, "").strip(),
            rank_fault=env.get(ENV_RANK_FAULT) or None,
            rank_spawn=env.get(ENV_RANK_START, "").strip() == "spawn",
        )
