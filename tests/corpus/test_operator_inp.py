"""The operator_inp writer and its eval-free parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.corpus.operator_inp import (
    Entry,
    ParseError,
    format_entry,
    format_log,
    parse_entry,
    parse_log,
)

TENSOR = {"shape": [2, 3], "dtype": "float16", "device": "cpu", "stride": [1, 2]}
INDEX = {
    "shape": [1, 16],
    "dtype": "int64",
    "device": "cpu",
    "stride": [16, 1],
    "min": 0,
    "max": 511,
}
EVERY_KIND = Entry(
    7,
    [
        TENSOR,
        INDEX,
        [{"shape": [4], "dtype": "bfloat16", "device": "cpu"}, None],
        -1,
        0.125,
        1e-05,
        {"$": "float", "v": "-inf"},
        "it's a \\ path\n",
        True,
        {"$": "opaque", "v": "Generator"},
    ],
    {
        "dtype": {"$": "dtype", "v": "float32"},
        "device": {"$": "device", "v": "cpu"},
        "layout": {"$": "layout", "v": "strided"},
        "memory_format": {"$": "memory_format", "v": "channels_last"},
        "shape": [2, 3],
        "min": 0.5,
    },
)


def test_every_value_kind_round_trips() -> None:
    line = format_entry(EVERY_KIND)
    back = parse_entry(line)
    assert back.count == 7
    assert back.kwargs == EVERY_KIND.kwargs
    # the log has no devices, and contiguous strides are implied; everything else is equal
    assert back.args[0] == {k: v for k, v in TENSOR.items() if k != "device"}
    assert back.args[1] == {k: v for k, v in INDEX.items() if k not in ("device", "stride")}
    assert back.args[2] == [{"shape": [4], "dtype": "bfloat16"}, None]
    assert back.args[3:] == EVERY_KIND.args[3:]
    assert format_entry(back) == line


def test_single_argument_is_a_one_tuple_and_strides_match_python() -> None:
    t = {"shape": [3], "dtype": "float32", "device": "cpu", "stride": [2]}
    line = format_entry(Entry(1, [t], {}))
    assert line == "cnt: 1, ((T([3], f32, stride=(2,)),), {})"
    assert parse_entry(line).args == [{"shape": [3], "dtype": "float32", "stride": [2]}]


def test_log_round_trips_byte_identical() -> None:
    text = format_log(
        [("aten.addmm.default", [EVERY_KIND, Entry(1, [], {})]), ("aten.mm.default", [])]
    )
    log = parse_log(text)
    assert not log.malformed and log.entries == 2
    assert format_log(log.blocks) == text


def test_parser_never_evaluates(tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    text = (
        "Operator: aten.add.Tensor\n"
        f"cnt: 1, ((__import__('os').system('touch {target}'),), {{}})\n"
        f"cnt: 1, ((T([2], f32),), {{'x': open('{target}', 'w')}})\n"
    )
    log = parse_log(text)
    assert not target.exists()
    assert log.malformed == {"entry": 2}
    assert log.blocks == [("aten.add.Tensor", [])]


def test_malformed_lines_are_counted_by_kind() -> None:
    text = "\n".join(
        [
            "cnt: 1, ((), {})",  # before any operator
            "Operator: aten.mm.default",
            "cnt: 2, ((T([2, 2], f32), T([2, 2], f32)), {})",
            "cnt: x, ((), {})",
            "cnt: 1, ((T([2, 2], f32, min=1),), {})",  # min without max
            "cnt: 1, ((1,), {}) trailing",
            "garbage line",
            "Operator: ",
            "cnt: 1, ((), {})",  # after a bad operator header: orphan
        ]
    )
    log = parse_log(text)
    assert log.malformed == {"orphan_count": 2, "entry": 3, "unknown_line": 1, "operator": 1}
    assert log.entries == 1
    assert len(log.first_errors) == 7 and log.first_errors[0].startswith("line 1: orphan_count")


@pytest.mark.parametrize(
    "line",
    ["cnt: 1, ((1,), [])", "cnt: 1, ((0x10,), {})", "cnt: 1, (('unterminated), {})", "cnt: 1"],
)
def test_bad_entries_raise_parse_errors(line: str) -> None:
    with pytest.raises(ParseError):
        parse_entry(line)
