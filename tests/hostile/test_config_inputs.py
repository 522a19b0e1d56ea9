"""Hostile configs: each refused by ``load_config`` with file:line and what is wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kerneltracer.errors import ConfigError
from kerneltracer.orchestrator.planning import load_config

M = "models:\n  - path: m\n"

# (config text, line, message regex); ``{dir}`` is the config's directory.
CASES = {
    "duplicate_top_key": (
        M + "models:\n  - path: m\n",
        3,
        r"duplicate key 'models' \(first at line 1; YAML would keep only the last\)",
    ),
    "duplicate_nested_key": (
        "defaults:\n  seq_len: 8\n  mode: eval\n  seq_len: 16\n" + M,
        4,
        r"duplicate key 'seq_len' \(first at line 2",
    ),
    "invalid_utf8": (
        "models:\n  - path: m\n    name: caf\udce9\n",
        3,
        r"not UTF-8 text \(byte 0xe9 at column 14\)",
    ),
    "name_5000_chars": (
        M + "    name: " + "a" * 5000 + "\n",
        3,
        r"models\[0\]\.name: String should have at most 128 characters",
    ),
    "output_dir_a_file": (
        "output_dir: afile\n" + M,
        1,
        r"output_dir: run dir {dir}/afile: it exists and is not a directory",
    ),
    "output_dir_dev_null": (
        "output_dir: /dev/null\n" + M,
        1,
        r"output_dir: run dir /dev/null: it exists and is not a directory",
    ),
    "output_dir_proc_self": (
        "output_dir: /proc/self\n" + M,
        1,
        r"output_dir: run dir /proc/self: it is a non-empty directory that is not a "
        r"kerneltracer run dir",
    ),
    "output_dir_root": (
        "output_dir: /\n" + M,
        1,
        r"output_dir: run dir /: it is a non-empty directory that is not a kerneltracer run dir .*"
        r"choose a new or empty directory",
    ),
    "output_dir_name_too_long": (
        "output_dir: " + "d" * 300 + "\n" + M,
        1,
        r"output_dir: run dir {dir}/d{300}: a path component is 300 bytes long \(at most 255\)",
    ),
    "bool_from_string": (
        "defaults:\n  trust_remote_code: 'yes'\n" + M,
        2,
        r"defaults\.trust_remote_code: Input should be a valid boolean \(got 'yes'\)",
    ),
    "int_from_bool": (
        "defaults:\n  batch_size: true\n" + M,
        2,
        r"defaults\.batch_size: Input should be a valid integer \(got True\)",
    ),
    "int_from_float": (
        "defaults:\n  seq_len: 1.0e+23\n" + M,
        2,
        r"defaults\.seq_len: Input should be a valid integer \(got 1e\+23\)",
    ),
    "int_too_big": (
        "defaults:\n  seq_len: 100000000000000000000000\n" + M,
        2,
        r"defaults\.seq_len: Input should be less than or equal to 1048576",
    ),
    "infinite_timeout": (
        "defaults:\n  timeout_s: .inf\n" + M,
        2,
        r"defaults\.timeout_s: Input should be a finite number \(got inf\)",
    ),
    "duplicate_job": (
        M + "  - path: m\n",
        3,
        r"models\[1\]: plans job 'm/torch_dispatch' as models\[0\] does; give one of them a "
        r"distinct `name:`",
    ),
    "hub_id_escape": (
        M + "  - id: ../../etc\n",
        3,
        r"models\[1\]\.id: invalid model id '\.\./\.\./etc'",
    ),
    "path_is_a_file": (
        "models:\n  - path: afile\n",
        2,
        r"models\[0\]\.path: model directory {dir}/afile is a file, not a directory",
    ),
    "hostile_key": (
        M + '"evil\\nkey": 1\n',
        3,
        r"\['evil\\nkey'\]: unknown field 'evil\\nkey'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_config_is_refused_with_its_line(tmp_path: Path, case: str) -> None:
    text, line, pattern = CASES[case]
    (tmp_path / "m").mkdir()
    (tmp_path / "afile").write_text("x")
    path = tmp_path / "c.yaml"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    where = f"{re.escape(str(path))}:{line}: "
    expected = where + pattern.replace("{dir}", re.escape(str(tmp_path)))
    assert re.match(expected, message), message


def test_an_empty_dir_and_an_existing_run_dir_are_fine(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "old" / "jobs").mkdir(parents=True)
    for out in ("empty", "old", "new/deeper"):
        path = tmp_path / "c.yaml"
        path.write_text(f"output_dir: {out}\n" + M)
        cfg, _ = load_config(path)
        assert cfg.output_dir == out
