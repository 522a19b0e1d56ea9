"""The framework releases the test suite ran on, and which versions of a run fall outside.

The ranges are pyproject.toml's (a dependency, or the ``vllm`` extra for the vLLM venv's
engine), read from the installed package's metadata: one source, so that widening a range
after ``make test-latest`` is one commit there and the report follows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

# The libraries whose behaviour changes what a trace contains (a status records their versions).
FRAMEWORKS = ("torch", "transformers", "vllm")


@dataclass(frozen=True)
class Untested:
    """One version a run used that the test suite did not run on."""

    library: str
    version: str
    tested: str  # the range, as pyproject.toml writes it

    def __str__(self) -> str:
        return f"{self.library} {self.version}, outside the tested range {self.tested}"


def framework_ranges() -> dict[str, SpecifierSet]:
    """Framework -> the tested range from kerneltracer's installed metadata ({} if none)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        lines = requires("kerneltracer") or []
    except PackageNotFoundError:  # run from a source tree that was never installed
        return {}
    ranges: dict[str, SpecifierSet] = {}
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name in FRAMEWORKS and req.specifier:
            ranges[req.name] = req.specifier
    return ranges


def untested(
    versions: Mapping[str, Iterable[str]], ranges: Mapping[str, SpecifierSet] | None = None
) -> list[Untested]:
    """The recorded framework versions outside their tested range, in library order."""
    ranges = framework_ranges() if ranges is None else ranges
    out: list[Untested] = []
    for library in FRAMEWORKS:
        spec = ranges.get(library)
        if spec is None:
            continue
        for version in versions.get(library, ()):
            if not _within(spec, version):
                out.append(Untested(library, version, str(_ordered(spec))))
    return out


def _within(spec: SpecifierSet, version: str) -> bool:
    try:
        # A local label (2.13.0+cpu) is the same release for the range; a dev or rc build of
        # an in-range release counts as in range too, since it is what the range names.
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _ordered(spec: SpecifierSet) -> str:
    """``>=5.19,<5.25`` rather than the set's arbitrary order."""
    return ",".join(sorted((str(s) for s in spec), key=lambda s: (s[0] != ">", s)))
