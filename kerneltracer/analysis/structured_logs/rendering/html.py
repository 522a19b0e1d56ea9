"""The jinja2 environment for every HTML page (autoescape on; templates in the package)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kerneltracer.analysis.structured_logs", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt_float"] = lambda v: (
        f"{v:.3f}" if isinstance(v, float) else ("" if v is None else v)
    )
    return env


def render_page(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
