"""Writes kerneltracer/costmodel/devices.json, the built-in device table as the code reads it,
from devices.yaml, the table as people edit it (datasheet figures with their sources in
comments).

Reading the YAML cost every run that estimates costs ~12 ms (PyYAML's import and parse),
where the same data as JSON is read in well under one. The YAML stays the source: edit it,
then run this; tests/costmodel/test_devices_roofline.py fails while the two differ.

    python scripts/gen_devices_json.py          write devices.json
    python scripts/gen_devices_json.py --check  exit 1 when the committed file is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
YAML = ROOT / "kerneltracer" / "costmodel" / "devices.yaml"
JSON = YAML.with_suffix(".json")


def render() -> bytes:
    """devices.json's text: the YAML's data, in its order."""
    data = yaml.safe_load(YAML.read_text())
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv[1:]:
        if JSON.read_bytes() != text:
            print(f"{JSON.relative_to(ROOT)} is stale: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    JSON.write_bytes(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
