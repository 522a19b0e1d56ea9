"""Frames of remote-code models, moved back to the user's model directory.

transformers imports a ``trust_remote_code`` model's Python files from a copy in its
modules cache (``…/huggingface/modules/transformers_modules/<name>/<hash>/modeling_x.py``;
an older transformers drops the hash, a hub model adds ``<org>/`` and a commit). Dynamo
names that copy, a path the user never edits: the frame is shown at the same file of the
model directory the job loaded, when that file is there with the same text.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, field
from pathlib import Path

_MODULES_DIR = "/transformers_modules/"


@dataclass
class ModelFrames:
    """Maps ``file:line`` frames under the modules cache to ``model_dir``."""

    model_dir: Path
    _seen: dict[str, str | None] = field(default_factory=dict)

    def file(self, path: str | None) -> str | None:
        """``path`` in the model directory, or ``path`` itself when it is no cache copy."""
        if path is None or _MODULES_DIR not in path.replace("\\", "/"):
            return path
        if path not in self._seen:
            self._seen[path] = self._find(path)
        return self._seen[path] or path

    def frame(self, frame: str | None) -> str | None:
        if frame is None:
            return None
        path, sep, line = frame.rpartition(":")
        if not sep or not line.isdigit():
            return self.file(frame)
        return f"{self.file(path)}:{line}"

    def _find(self, path: str) -> str | None:
        # The copy's path below the modules dir ends with the file's path in the model dir;
        # which leading parts are name / org / hash differs by version: try each suffix.
        parts = path.replace("\\", "/").rsplit(_MODULES_DIR, 1)[1].split("/")
        for i in range(len(parts)):
            candidate = self.model_dir.joinpath(*parts[i:])
            if candidate.is_file() and _same_text(Path(path), candidate):
                return str(candidate)
        return None


def _same_text(copy: Path, original: Path) -> bool:
    """The lines match when the copy is the original's text; a copy no longer there (the
    cache of another machine) is taken as the original."""
    try:
        return filecmp.cmp(copy, original, shallow=False)
    except OSError:
        return True
