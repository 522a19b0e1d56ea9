"""Every intermediate file validates against the JSON Schemas shipped in the package."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import orjson
import pytest

from kerneltracer.analysis.structured_logs import parse
from kerneltracer.analysis.structured_logs.schemas import load_schema, schema_for
from tests.structured_logs.helpers import LOGS


def _validate_tree(root: Path) -> int:
    checked = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        name = schema_for(rel)
        assert name is not None, f"no schema for intermediate file {rel}"
        validator = jsonschema.Draft202012Validator(load_schema(name))
        if rel.endswith(".jsonl"):
            lines = path.read_bytes().splitlines()
            if name == "raw_entry":
                jsonschema.validate(orjson.loads(lines[0]), load_schema("string_table"))
                lines = lines[1:]
            for line in lines:
                validator.validate(orjson.loads(line))
        else:
            validator.validate(orjson.loads(path.read_bytes()))
        checked += 1
    return checked


def test_schemas_are_valid_json_schemas() -> None:
    for name in ("manifest", "string_table", "raw_entry", "event", "summary", "chromium_events"):
        jsonschema.Draft202012Validator.check_schema(load_schema(name))


@pytest.mark.parametrize("name", [*LOGS, "multi_rank_logs"])
def test_intermediate_validates(name: str, testdata_dir: Path, tmp_path: Path) -> None:
    parse(testdata_dir / "tlparse" / name, tmp_path / "inter")
    assert _validate_tree(tmp_path / "inter") >= 5
