"""The reporter interface: built from the list of ProfilingData, never changing it.

``report(prefix)`` writes one file per dump, named ``<prefix>_<type>_<index>.<ext>``, where
``prefix`` is a directory plus a file-name prefix (``out/phases`` → ``out/phases_summary_0.csv``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from kerneltracer.analysis.records.model import ProfilingData


class Reporter(ABC):
    name: ClassVar[str]
    ext: ClassVar[str]
    description: ClassVar[str] = ""

    def __init__(self, pds: Sequence[ProfilingData]) -> None:
        # A tuple copy: the caller's list may change later; ProfilingData itself is read-only.
        self._pds = tuple(pds)

    def path_for(self, prefix: Path, index: int) -> Path:
        prefix = Path(prefix)
        return prefix.with_name(f"{prefix.name}_{self.name}_{index}.{self.ext}")

    def report(self, prefix: Path) -> list[Path]:
        """Write one file per dump; return the paths written."""
        written = []
        for pd in self._pds:
            path = self.path_for(prefix, pd.index)
            self.write(pd, path)
            written.append(path)
        return written

    @abstractmethod
    def write(self, pd: ProfilingData, path: Path) -> None:
        """Write the report of one dump to ``path`` (atomically)."""
