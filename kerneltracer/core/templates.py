"""The one way kerneltracer builds a jinja2 environment for its HTML pages.

Every page escapes what it shows (names come from models, logs and users) and fails on a
name its template misspells rather than rendering an empty string.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import jinja2


class _BestEffortCache(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept between runs: compiling a page's template is most of what a
    small report costs (0.05-0.15 s each, every run). The files live in jinja's per-user
    0700 folder of the temp dir and carry their source's checksum, so an edited template
    is compiled again; a cache that cannot be written only costs the compile."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


@lru_cache(maxsize=1)
def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return _BestEffortCache()
    except (OSError, RuntimeError):  # no temp dir of ours that only we can write
        return None


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
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(filters or {})
    return env
