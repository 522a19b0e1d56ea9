"""torch's flight recorder on a job's ranks: armed by the launcher, dumped by the ranks, read
back into the job's status (which collective each rank was in: name, sequence id, group,
sizes).

torch 2.13 records gloo's collectives as it records nccl's (``TORCH_FR_BUFFER_SIZE`` entries
per process, ``_dump_fr_trace_json`` / ``_dump_fr_trace``): an entry is issued with its
group's sequence id and retired when it completes, so an entry still unretired is the
collective a rank is blocked in. A rank dumps its recorder when it fails and when the
launcher asks (SIGUSR2, taken by a thread of its own: the main thread may be blocked in C++
inside the collective, where no Python signal handler runs). Each dump is written twice into
``rank_<r>/``: ``flight_recorder.json`` (torch's JSON, with the rank's group names) for the
status and readers, and ``fr_trace_<r>`` (torch's pickle) for ``torchfrtrace <job dir>
-p fr_trace_``, which walks the rank dirs. gloo's dumps name no group in ``pg_config``,
which torchfrtrace needs (KeyError on the entries' group otherwise): both files get the
rank's groups there, as nccl writes them.

On nccl (unverified here: this machine has no GPU) the launcher also sets torch's own dump
on a watchdog timeout into the same files' place (``TORCH_FR_DUMP_TEMP_FILE``).
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import threading
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_json

FR_JSON = "flight_recorder.json"
FR_PICKLE_PREFIX = "fr_trace_"  # + the rank: the names torchfrtrace reads
BUFFER_ENTRIES = "2000"
DUMP_SIGNAL = signal.SIGUSR2


def env(rank_dir: Path, base: dict[str, str]) -> dict[str, str]:
    """The variables that arm the recorder in a rank, each unless the user set it."""
    wanted = {
        "TORCH_FR_BUFFER_SIZE": BUFFER_ENTRIES,
        # nccl's watchdog dumps on a collective's timeout into <prefix><rank> (gloo has no
        # such watchdog: its ranks dump from their own failure or the launcher's ask).
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_FR_DUMP_TEMP_FILE": str(rank_dir / FR_PICKLE_PREFIX),
    }
    return {k: v for k, v in wanted.items() if k not in base}


class Recorder:
    """A rank's side: its group names, and the dump on demand (signal) or on failure."""

    def __init__(self, rank: int, rank_dir: Path) -> None:
        self.rank = rank
        self.rank_dir = rank_dir
        self.groups: dict[str, dict[str, Any]] = {}  # group name -> axis and global ranks
        self._lock = threading.Lock()

    def arm(self) -> None:
        """Before any other thread starts: every thread inherits the blocked signal, so only
        :meth:`_wait` takes it."""
        signal.pthread_sigmask(signal.SIG_BLOCK, {DUMP_SIGNAL})
        threading.Thread(target=self._wait, name="kt-flight-recorder", daemon=True).start()

    def _wait(self) -> None:
        while True:
            signal.sigwait({DUMP_SIGNAL})
            try:
                if self.dump():
                    continue
                why = "this torch build has no flight recorder"
            except Exception as exc:
                why = f"the dump failed: {type(exc).__name__}: {exc}"
            # An answer all the same: the launcher waits for this file after it asks.
            with contextlib.suppress(Exception):
                atomic_write_json(
                    self.rank_dir / FR_JSON,
                    {"rank": self.rank, "groups": self.groups, "trace": None, "unavailable": why},
                )

    def dump(self) -> bool:
        """Write the recorder's entries now; False when torch has no recorder to dump."""
        try:
            from torch._C._distributed_c10d import (  # type: ignore[attr-defined]
                _dump_fr_trace,
                _dump_fr_trace_json,
            )
        except ImportError:
            return False
        with self._lock:
            trace = orjson.loads(_dump_fr_trace_json())
            # gloo leaves pg_config empty (one '' group), where torchfrtrace looks each entry's
            # group up: filled from the rank's own groups, in nccl's shape.
            config = self._pg_config()
            if config and not any(trace.get("pg_config") or {}):
                trace["pg_config"] = config
            dump = pickle.loads(_dump_fr_trace())  # this process's own bytes
            if config and not any(dump.get("pg_config") or {}):
                dump["pg_config"] = config
            atomic_write_bytes(self.rank_dir / f"{FR_PICKLE_PREFIX}{self.rank}", pickle.dumps(dump))
            # Last: its arrival is what the launcher waits for.
            atomic_write_json(
                self.rank_dir / FR_JSON, {"rank": self.rank, "groups": self.groups, "trace": trace}
            )
        return True

    def _pg_config(self) -> dict[str, dict[str, str]]:
        return {
            name: {"name": name, "desc": str(group.get("axis")), "ranks": str(group.get("ranks"))}
            for name, group in self.groups.items()
        }


def read(rank_dir: Path) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(
            read_input(rank_dir / FR_JSON, SMALL_FILE, what="flight recorder", gzip=False)
        )
    except Exception:
        return None
    return doc if isinstance(doc, dict) else None


def in_flight(doc: dict[str, Any], failed: bool) -> dict[str, Any] | None:
    """The collective a rank's dump shows it in: its first entry not retired (blocked in
    it); for a rank whose own collective failed (gloo retires the failed entry), the last."""
    trace = doc.get("trace")
    entries = trace.get("entries") if isinstance(trace, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, dict)]
    pending = [e for e in entries if not e.get("retired")]
    if pending:
        entry, state = min(pending, key=lambda e: e.get("record_id", 0)), "waiting in"
    elif failed and entries:
        entry, state = max(entries, key=lambda e: e.get("record_id", 0)), "failed in"
    else:
        return None
    group = entry.get("process_group") or ["?", ""]
    name = str(group[0]) if isinstance(group, list) and group else "?"
    known = (doc.get("groups") or {}).get(name) or {}
    return {
        "state": state,
        "name": entry.get("profiling_name"),
        "seq": entry.get("collective_seq_id") or entry.get("p2p_seq_id"),
        "group": name,
        "axis": known.get("axis"),
        "group_ranks": known.get("ranks"),
        "input_sizes": entry.get("input_sizes"),
        "output_sizes": entry.get("output_sizes"),
        "dtypes": entry.get("input_dtypes"),
        "entries": len(entries),
    }


def describe(found: dict[str, Any]) -> str:
    """``waiting in gloo:all_reduce #7 of group tp (ranks 0, 1), sizes [[1, 16, 128]] Float``."""
    axis = found.get("axis")
    group = f"{axis} (group {found['group']})" if axis else f"group {found['group']}"
    ranks = found.get("group_ranks")
    if ranks:
        group += f" of ranks {', '.join(map(str, ranks))}"
    dtypes = "/".join(sorted(set(found.get("dtypes") or [])))
    sizes = found.get("input_sizes")
    return (
        f"{found['state']} {found['name']} #{found['seq']} on {group}, sizes {sizes}"
        + (f" {dtypes}" if dtypes else "")
        + " (flight recorder)"
    )
