"""The jinja2 environment for every HTML page (autoescape on; templates in the package)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2

from kerneltracer.core.templates import html_environment


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = html_environment("kerneltracer.analysis.structured_logs", trim=True)
    # Else every page (and the parent it extends) asks the disk whether its template file
    # changed: a stat each, thousands per render, for files that never change.
    env.auto_reload = False
    return env


def render_page(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
