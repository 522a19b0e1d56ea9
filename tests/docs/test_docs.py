"""The documentation site: its reference pages match the code (every command, config field
and public API name documented), and it builds with mkdocs --strict (no broken link)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_pages_match_the_code() -> None:
    gen = _gen()
    for name, build in gen.PAGES.items():
        committed = (DOCS / "reference" / name).read_text()
        assert committed == build(), f"docs/reference/{name} is stale: run scripts/gen_docs.py"


def test_every_command_is_documented() -> None:
    from kerneltracer.cli.main import root

    gen = _gen()
    page = (DOCS / "reference" / "cli.md").read_text()
    headings = set(re.findall(r"^#+ `([^`]+)`$", page, re.MULTILINE))
    paths = [" ".join(p) for p, _, _ in gen.iter_commands(root, ("kerneltracer",))]
    assert len(paths) > 25  # the walk reaches the sub-commands of groups
    missing = [p for p in paths if p not in headings]
    assert not missing, f"undocumented commands: {missing}"
    for path, command, _ in gen.iter_commands(root, ("kerneltracer",)):
        for param in command.params:  # every option of every command, by its flag
            for flag in getattr(param, "opts", []):
                if flag.startswith("-"):
                    assert flag in page, f"{' '.join(path)} {flag} undocumented"


def test_every_config_field_is_documented() -> None:
    gen = _gen()
    page = (DOCS / "reference" / "config.md").read_text()
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", page, re.MULTILINE | re.DOTALL))
    fields = gen.config_fields()
    assert ("JobSettings", "weights") in fields and ("RunConfig", "models") in fields
    missing = [(m, f) for m, f in fields if f"| `{f}` |" not in sections.get(m, "")]
    assert not missing, f"undocumented config fields: {missing}"


def test_every_public_api_name_is_documented() -> None:
    import kerneltracer

    page = (DOCS / "reference" / "api.md").read_text()
    for name in kerneltracer.__all__:
        if name != "__version__":
            assert f"`kt.{name}`" in page, name


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")]
    assert not [p for p in pages if p not in nav]


@pytest.mark.slow
def test_site_builds_strict(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    out = subprocess.run(
        [str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "WARNING" not in out.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_readme_is_short_starts_with_the_two_commands_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 200
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [ln.split()[1] for ln in first_block.splitlines()] == ["demo", "test"]
    assert lines[0] == "# kerneltracer" and lines[2] == "```bash"
    for target in re.findall(r"\]\(([^)#]+)(?:#([^)]+))?\)", readme):
        path, anchor = target
        if path.startswith("http"):
            continue
        assert (ROOT / path).exists(), path
        if anchor:
            slugs = {
                re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", h.strip().lower()))
                for h in re.findall(r"^#+ (.*)$", (ROOT / path).read_text(), re.MULTILINE)
            }
            assert anchor in slugs, f"{path}#{anchor}"


def test_every_output_column_has_a_meaning() -> None:
    gen = _gen()
    columns = {c for _, _, spec, _ in gen.format_tables() for c, _ in gen._columns_of(spec)}
    assert len(columns) > 100
    assert not sorted(columns - set(gen.COLUMN_MEANINGS)), "columns without a meaning"
    assert not sorted(set(gen.COLUMN_MEANINGS) - columns), "meanings of no column"
