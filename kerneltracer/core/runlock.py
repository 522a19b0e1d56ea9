"""Whether a run dir's orchestrator is alive, asked of its lock rather than of its pid.

The orchestrator holds its ``flock`` for as long as it runs, and the kernel (or, on a shared
file system, the lock server) drops it when the holder dies, SIGKILL and a lost node
included. So a reader on any host can tell a running shard from a killed one: the lock is
free exactly when nobody runs it. A pid means something only on its own host; the lock
means the same thing wherever the run dir is mounted.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

from kerneltracer.core import layout
from kerneltracer.core.manifest import RunManifest


def lock_held(path: Path) -> bool | None:
    """True while some process holds the lock at ``path``; None when that cannot be told
    (no lock file, or it cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        # A shared lock only: it never blocks another reader, and an orchestrator that asks
        # for the exclusive one in this instant retries (orchestrator.lock).
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops the shared lock taken above
    return False


def shard_tag(manifest: RunManifest) -> str | None:
    """``shard-2-of-3`` for a shard's manifest, None for the whole run's."""
    if manifest.shard is None:
        return None
    index, _, count = manifest.shard.partition("/")
    if not (index.isdigit() and count.isdigit()):
        return None
    return layout.shard_tag(int(index), int(count))


def orchestrator_gone(run_dir: Path, manifest: RunManifest) -> bool:
    """True only when provably gone: its lock is free (any host), or, without a lock to
    ask, it ran on this host and no process has its pid."""
    held = lock_held(layout.RunPaths(run_dir).lock(shard_tag(manifest)))
    if held is not None:
        return not held
    who = manifest.orchestrator
    if who is None or who.host != socket.gethostname() or who.pid is None or who.pid <= 0:
        return False
    try:
        os.kill(who.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
