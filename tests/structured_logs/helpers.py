"""Shared helpers for the structured-log tests: test logs and the real tlparse binary."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import require

LOGS = (
    "artifacts.log",
    "autotune_with_compile_id.log",
    "cache_hit_miss.log",
    "comp_failure.log",
    "comp_metrics.log",
    "export.log",
    "export_guard_added.log",
    "links.log",
    "simple.log",
    "simple_corrupted_json.log",
    "inductor_provenance_jit_log.txt",
    "inductor_provenance_aot_log.txt",
)


def tlparse_bin() -> str:
    found = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    require(Path(found).is_file(), "the tlparse 0.4.3 binary (pip install tlparse)")
    return found


def run_tlparse(log: Path, out: Path, *extra: str) -> None:
    subprocess.run(
        [tlparse_bin(), str(log), "-o", str(out), "--overwrite", "--no-browser", *extra],
        check=True,
        capture_output=True,
        timeout=120,
    )


def artifact_names(compile_directory: Path) -> dict[str, list[str]]:
    data: dict[str, Any] = orjson.loads(compile_directory.read_bytes())
    return {cid: sorted(a["name"] for a in v["artifacts"]) for cid, v in data.items()}
