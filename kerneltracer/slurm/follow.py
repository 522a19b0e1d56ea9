"""``slurm submit --wait``: poll a run's Slurm jobs until none can make progress any more.

The follow ends when no shard has a live task: each one finished, failed, or is stuck
pending for a reason that never clears by itself (a stuck task does not keep the follow
waiting forever, which is the point). Yields snapshots; the CLI renders them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.slurm import cluster
from kerneltracer.slurm.status import ShardReport, shard_reports
from kerneltracer.slurm.submit import load_record


@dataclass
class Snapshot:
    download: str | None  # the download job's state; None when the run had none
    reports: list[ShardReport]

    @property
    def done(self) -> bool:
        return not any(r.live for r in self.reports)

    @property
    def problems(self) -> list[ShardReport]:
        return [r for r in self.reports if r.problem]

    def task_counts(self) -> Counter[str]:
        """Tasks by state; pending ones by reason too (``PENDING (Priority)``)."""
        counts: Counter[str] = Counter()
        for r in self.reports:
            if r.stuck:
                counts[f"STUCK ({r.reason})"] += 1
            elif r.state == "PENDING" and r.reason and r.reason != "None":
                counts[f"PENDING ({r.reason})"] += 1
            else:
                counts[r.state] += 1
        return counts

    def jobs_done(self) -> tuple[int, int]:
        """Complete jobs (as ``run`` judges them) and all jobs."""
        total = sum(r.jobs for r in self.reports)
        return total - sum(len(r.incomplete) for r in self.reports), total


def follow(
    run_dir: Path, interval_s: float, sleep: Callable[[float], None] = time.sleep
) -> Iterator[Snapshot]:
    """One snapshot now, then one every ``interval_s`` until :attr:`Snapshot.done`."""
    record = load_record(run_dir)
    while True:
        download = cluster.job_state(record.download_job)[0] if record.download_job else None
        snapshot = Snapshot(download, shard_reports(run_dir, record))
        yield snapshot
        if snapshot.done:
            return
        sleep(interval_s)
