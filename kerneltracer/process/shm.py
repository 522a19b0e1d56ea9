"""POSIX shared-memory segments our process tree created, and removing the ones it leaves.

vLLM's engine passes messages through ``/dev/shm`` segments (``psm_*``, ``sem.mp-*``) that
are unlinked only on a graceful shutdown. A killed engine leaves them behind, where they
hold RAM until reboot. Attribution is exact rather than guessed: a segment is ours only if
one of our processes maps it (the file it maps, by inode: a named semaphore's creator maps
it under another name), and it is removed only once no live process maps it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

import psutil

_SHM_DIR = Path("/dev/shm")


def mapped_segments(procs: Iterable[psutil.Process]) -> set[str]:
    """The ``/dev/shm`` files these processes have mapped (read from /proc/PID/maps)."""
    index = _entries()
    found: set[str] = set()
    for proc in procs:
        found |= _names(_maps_of(proc.pid), index)
    return found


def _maps_of(pid: int) -> set[tuple[str, int, int]]:
    """Each ``/dev/shm`` mapping of a process: its path as mapped, device and inode."""
    prefix = f"{_SHM_DIR}/"
    found = set()
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh,
    ):
        for line in fh:
            at = line.find(prefix)
            if at >= 0:
                # address perms offset dev inode path
                fields = line[:at].split()
                major, minor = fields[3].split(":")
                dev = os.makedev(int(major, 16), int(minor, 16))
                found.add((line[at:].rstrip("\n"), dev, int(fields[4])))
    return found


def _entries() -> dict[tuple[int, int], str]:
    """The plain files of ``/dev/shm`` now, by (device, inode)."""
    index: dict[tuple[int, int], str] = {}
    with contextlib.suppress(OSError), os.scandir(_SHM_DIR) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    index[(st.st_dev, st.st_ino)] = entry.path
    return index


def _names(maps: set[tuple[str, int, int]], index: dict[tuple[int, int], str]) -> set[str]:
    """The names mappings have in ``/dev/shm`` now. By inode first: a named semaphore is
    mapped under the temporary name its creator made it under (glibc's sem_open makes
    ``sem.XXXXXX``, links it to ``sem.<name>`` and unlinks the temporary), so the creator's
    map says ``/dev/shm/sem.XXXXXX (deleted)`` of a file that lives on as ``sem.mp-...``."""
    names = set()
    for path, dev, inode in maps:
        name = index.get((dev, inode))
        if name is None and not path.endswith(" (deleted)"):
            name = path
        if name is not None:
            names.add(name)
    return names


def _still_mapped(
    paths: set[str], ignore_pids: frozenset[int] | set[int] = frozenset()
) -> set[str]:
    """Which of ``paths`` some live process (anyone's, but ``ignore_pids``) still maps."""
    if not paths:
        return set()
    index = _entries()
    busy: set[str] = set()
    for pid in psutil.pids():
        if pid not in ignore_pids:
            busy |= _names(_maps_of(pid), index) & paths
    return busy


def remove_orphans(
    paths: set[str], ignore_pids: frozenset[int] | set[int] = frozenset()
) -> list[str]:
    """Unlink the segments of ``paths`` nobody maps any more; return those removed.

    ``ignore_pids``: processes about to exit, whose mappings do not keep a segment alive.
    """
    removed = []
    for path in sorted(paths - _still_mapped(paths, ignore_pids)):
        if not path.startswith(f"{_SHM_DIR}/") or "/" in path[len(str(_SHM_DIR)) + 1 :]:
            continue  # only plain entries of /dev/shm, never anything a map line could name
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.unlink(path)
            removed.append(path)
    return removed


class SegmentWatch:
    """Notes which segments this process tree maps, every ``interval_s``, from a thread.

    An engine whose start fails may die before anyone asks what it mapped; what it had
    mapped at the last look is then still known.
    """

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kt-shm-watch", daemon=True)

    def start(self) -> SegmentWatch:
        self._thread.start()
        return self

    def look(self) -> set[str]:
        """Look once more now, and return everything seen so far."""
        with contextlib.suppress(psutil.Error):
            me = psutil.Process()
            found = mapped_segments([me, *me.children(recursive=True)])
            with self._lock:
                self._seen |= found
        with self._lock:
            return set(self._seen)

    def stop(self) -> set[str]:
        self._stop.set()
        seen = self.look()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * self.interval_s + 1)
        return seen

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.look()
