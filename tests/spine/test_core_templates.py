"""The one jinja2 environment factory (core/templates.py) and that nothing builds another."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from kerneltracer.core.templates import html_environment

ROOT = Path(__file__).resolve().parents[2] / "kerneltracer"


def test_pages_are_escaped_and_strict_about_undefined_names() -> None:
    env = html_environment("kerneltracer.report")
    page = env.from_string("<p>{{ name }}</p>").render(name="<script>x</script>")
    assert page == "<p>&lt;script&gt;x&lt;/script&gt;</p>"
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ misspelt }}").render(name="x")
    assert env.get_template("base.html.j2") is not None  # the package's templates folder


def test_trim_and_filters() -> None:
    text = "{% if x %}\n  <b>{{ x | twice }}</b>\n{% endif %}\n"
    env = html_environment("kerneltracer.report", trim=True, filters={"twice": lambda v: v * 2})
    assert env.from_string(text).render(x=2) == "  <b>4</b>\n"
    untrimmed = html_environment("kerneltracer.report", filters={"twice": lambda v: v * 2})
    assert untrimmed.from_string(text).render(x=2) == "\n  <b>4</b>\n"


def test_no_other_module_builds_a_jinja2_environment() -> None:
    found = [
        str(path.relative_to(ROOT))
        for path in sorted(ROOT.rglob("*.py"))
        if "jinja2.Environment(" in path.read_text()
    ]
    assert found == ["core/templates.py"]
