"""The one way kerneltracer builds a jinja2 environment for its HTML pages.

Every page escapes what it shows (names come from models, logs and users) and fails on a
name its template misspells rather than rendering an empty string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jinja2


def html_environment(
    package: str,
    folder: str = "templates",
    *,
    trim: bool = False,
    filters: Mapping[str, Callable[..., Any]] | None = None,
) -> jinja2.Environment:
    """Templates of ``package``'s ``folder``: autoescaped, strict about undefined names;
    ``trim`` drops the newline after a block tag and the blanks before it."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=trim,
        lstrip_blocks=trim,
    )
    env.filters.update(filters or {})
    return env
