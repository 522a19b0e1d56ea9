"""The run's progress lines: every counted line knows the total (issue 38, item 12)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import kt, write_config


def test_jobs_that_fail_before_any_worker_are_counted_against_the_total(
    tmp_path: Path, kt_env: dict[str, str]
) -> None:
    """A model that is not ready fails its jobs before any worker starts: their lines come
    after the plan's line and count against its total, never ``[1/0]``."""
    empty = tmp_path / "empty"
    empty.mkdir()
    cfg = write_config(
        tmp_path / "config.yaml",
        [{"path": str(empty)}],
        defaults={"tracers": ["torch_dispatch", "torch_profiler"]},
    )
    proc = kt("run", str(cfg), env=kt_env, timeout=120)
    assert proc.returncode != 0
    lines = proc.stderr.splitlines()
    plan = next(i for i, line in enumerate(lines) if "2 to run" in line)
    counted = [(i, line) for i, line in enumerate(lines) if re.match(r"\[\d+/\d+\]", line)]
    assert [line.split()[0] for _, line in counted] == ["[1/2]", "[2/2]"], proc.stderr
    assert all(i > plan for i, _ in counted), proc.stderr
