"""A job's identity as every view shows it: model + tracer + mode + phase.

One model traced in several modes (eval, train) and phases (prefill, decode, generate) is
one *model* with several *variants*; every view labels a variant the same way, and counts
of models count distinct models, never variants.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MODE = "eval"
DEFAULT_PHASE = "prefill"
# The reason a member of an exclusive group is skipped: the winner's job key follows.
EXCLUSIVE_SKIP = "exclusive group satisfied by "


@dataclass(frozen=True, order=True)
class Variant:
    """How a model was run: the mode and the phase."""

    mode: str = DEFAULT_MODE
    phase: str = DEFAULT_PHASE

    @property
    def label(self) -> str:
        """Both parts, always: ``eval · prefill``, ``train · prefill``, ``eval · decode``."""
        return f"{self.mode} · {self.phase}"

    @property
    def suffix(self) -> str:
        """The parts that differ from the default, for a compact label: ``""``, ``" [train]"``,
        ``" [decode]"``, ``" [train, decode]"``."""
        parts = [p for p, d in ((self.mode, DEFAULT_MODE), (self.phase, DEFAULT_PHASE)) if p != d]
        return f" [{', '.join(parts)}]" if parts else ""

    @property
    def rank(self) -> tuple[int, int, str, str]:
        """Sort order: the defaults first, then by name."""
        return (self.mode != DEFAULT_MODE, self.phase != DEFAULT_PHASE, self.mode, self.phase)


def variant_of(mode: object, phase: object) -> Variant:
    """The variant of values read from a status file or manifest (missing: the defaults)."""
    return Variant(
        mode if isinstance(mode, str) and mode else DEFAULT_MODE,
        phase if isinstance(phase, str) and phase else DEFAULT_PHASE,
    )


def model_label(display: str, mode: object = None, phase: object = None) -> str:
    """A model variant's one-string label: the display id, plus what is not the default
    (``tiny-llama``, ``tiny-llama [decode]``, ``tiny-llama [train, decode]``)."""
    return display + variant_of(mode, phase).suffix


def satisfied_by(status: str | None, reason: str | None) -> str | None:
    """The job key of the exclusive-group member that made this one unnecessary, if any."""
    if status != "skipped" or not reason or not reason.startswith(EXCLUSIVE_SKIP):
        return None
    return reason[len(EXCLUSIVE_SKIP) :].strip() or None


def collapsed_alternatives(jobs: dict[str, tuple[str | None, str | None]]) -> dict[str, str]:
    """``jobs``: key -> (status, reason). The skipped alternatives of exclusive groups whose
    winner is among ``jobs``, mapped to that winner's key: views show them inside the
    winner's cell instead of as columns of "skipped"."""
    folded = {}
    for key, (status, reason) in jobs.items():
        winner = satisfied_by(status, reason)
        if winner is not None and winner in jobs and winner != key:
            folded[key] = winner
    return folded
