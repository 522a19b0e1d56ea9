"""Small helpers shared by the CLI's commands."""

from __future__ import annotations


def split_values(values: tuple[str, ...]) -> list[str]:
    """Values of a repeatable option that also accepts commas: ``--x a,b --x c`` → a, b, c."""
    return [v.strip() for item in values for v in item.split(",") if v.strip()]
