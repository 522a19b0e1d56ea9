"""Compile ids: the ``(compiled_autograd_id, frame_id, frame_compile_id, attempt)`` tuple.

Two spellings are kept, both compatible with tlparse: the display form (``[0/0]``,
``[0/0_1]``, ``[!0/1/0]``, ``[-/-]``) used as keys of ``compile_directory.json`` and the
directory form (``-_0_0_0``) used in output paths. Envelopes without any id fields map to
the all-``None`` id, whose intermediate directory is ``_none``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ID_FIELDS = ("compiled_autograd_id", "frame_id", "frame_compile_id", "attempt")
_NONE_DIR = "_none"


@dataclass(frozen=True, slots=True)
class CompileId:
    compiled_autograd_id: int | None = None
    frame_id: int | None = None
    frame_compile_id: int | None = None
    attempt: int | None = None

    @classmethod
    def from_envelope(cls, env: dict[str, Any]) -> CompileId:
        """Read the id fields; old logs omit ``attempt``, which means attempt 0."""
        vals = [env.get(f) for f in _ID_FIELDS]
        for v in vals:
            if v is not None and (type(v) is not int or v < 0):
                raise ValueError(f"compile id field is not a non-negative int: {v!r}")
        ca, frame, fcid, attempt = vals
        if fcid is not None and attempt is None:
            attempt = 0
        return cls(ca, frame, fcid, attempt)

    @property
    def is_none(self) -> bool:
        return (
            self.frame_id is None
            and self.frame_compile_id is None
            and self.compiled_autograd_id is None
        )

    def display(self) -> str:
        ca = f"!{self.compiled_autograd_id}/" if self.compiled_autograd_id is not None else ""
        frame = "-" if self.frame_id is None else str(self.frame_id)
        fcid = "-" if self.frame_compile_id is None else str(self.frame_compile_id)
        attempt = f"_{self.attempt}" if self.attempt else ""
        return f"[{ca}{frame}/{fcid}{attempt}]"

    def dirname(self) -> str:
        """tlparse's output directory name: ``-_0_0_0``."""
        return "_".join("-" if v is None else str(v) for v in self.as_tuple())

    def key(self) -> str:
        """Directory name inside ``by_compile_id/`` of the intermediate."""
        return _NONE_DIR if self.is_none and self.attempt is None else self.dirname()

    def as_tuple(self) -> tuple[int | None, int | None, int | None, int | None]:
        return (self.compiled_autograd_id, self.frame_id, self.frame_compile_id, self.attempt)

    def collapsed(self) -> CompileId:
        """Attempt folded to 0: stacks are logged once per frame compile, not per attempt."""
        if self.frame_compile_id is None:
            return self
        return CompileId(self.compiled_autograd_id, self.frame_id, self.frame_compile_id, 0)
