"""Options many commands share are declared once (kerneltracer/cli/options.py), so they read
and behave the same everywhere; each command keeps its own help text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kerneltracer.cli.main import root
from kerneltracer.cli.options import out_option, strict_option


def _commands(group: click.Group, ctx: click.Context) -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield name, command
        if isinstance(command, click.Group):
            for sub, cmd in _commands(command, click.Context(command, parent=ctx)):
                yield f"{name} {sub}", cmd


def _options(flag: str) -> dict[str, click.Option]:
    ctx = click.Context(root)
    return {
        name: p
        for name, command in _commands(root, ctx)
        for p in command.params
        if isinstance(p, click.Option) and flag in p.opts
    }


def test_every_out_is_the_shared_dash_o_directory_option() -> None:
    outs = _options("--out")
    # The commands that write reports (logs has three sub-commands).
    assert {"report", "coverage", "corpus", "diff", "timeline", "records", "replay"} <= set(outs)
    assert {"compile-health", "readiness", "logs run", "logs parse", "logs render"} <= set(outs)
    for name, opt in outs.items():
        assert opt.opts == ["-o", "--out"], name
        assert isinstance(opt.type, click.Path) and not opt.type.file_okay, name
        assert opt.help and opt.help[0].isupper(), name


def test_every_strict_is_a_flag_with_its_own_help() -> None:
    stricts = _options("--strict")
    assert {"coverage", "corpus", "timeline", "records", "replay", "logs run"} <= set(stricts)
    for name, opt in stricts.items():
        assert opt.is_flag and isinstance(opt.type, click.types.BoolParamType), name
    helps = {opt.help for opt in stricts.values()}
    assert len(helps) >= 5  # says what each command fails on, not one generic line


@pytest.mark.parametrize("required", [False, True])
def test_out_option_parses_a_directory_and_refuses_a_file(tmp_path: Path, required: bool) -> None:
    @click.command()
    @out_option("Where it goes.", required=required)
    @strict_option("Fail on anything.")
    def cmd(out_dir: Path | None, strict: bool) -> None:
        click.echo(f"{out_dir} {strict}")

    runner = CliRunner()
    ok = runner.invoke(cmd, ["-o", str(tmp_path / "new"), "--strict"])
    assert ok.exit_code == 0 and ok.output == f"{tmp_path / 'new'} True\n"
    (tmp_path / "f").write_text("x")
    refused = runner.invoke(cmd, ["--out", str(tmp_path / "f")])
    assert refused.exit_code == 2 and "is a file" in refused.output
    missing = runner.invoke(cmd, [])
    if required:
        assert missing.exit_code == 2 and "Missing option '-o' / '--out'" in missing.output
    else:
        assert (missing.exit_code, missing.output) == (0, "None False\n")
    assert "Where it goes." in runner.invoke(cmd, ["--help"]).output
