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


# ---------------------------------------------------------------- hostile input (issue 38)
# operator_inp logs are read with eval (PyTorch's operator_inp_utils, BackendBench's
# deserialize_args after its text edits): built from a hostile run dir, they must stay data.


def test_hostile_strings_round_trip_through_our_parser_and_backendbench_unrun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.corpus.bb_reader import deserialize_args, expected
    from tests.corpus.test_backendbench import HOSTILE_STRINGS, SENTINEL

    monkeypatch.chdir(tmp_path)
    tensor = {"shape": [2], "dtype": "float16"}
    for text in HOSTILE_STRINGS:
        for after in HOSTILE_STRINGS:  # what a broken quote would run
            entry = Entry(1, [tensor, text, after, [text, {"k": after}]], {text: after})
            line = format_entry(entry)
            assert parse_entry(line) == entry
            assert format_entry(parse_entry(line)) == line  # canonical
            args, kwargs = deserialize_args(line.split(", ", 1)[1])
            assert (list(args), kwargs) == (expected(entry.args), expected(entry.kwargs))
    assert not (tmp_path / SENTINEL).exists()


TOUCH = "__import__('os').system('touch pwned')"


@pytest.mark.parametrize(
    "value",
    [
        {"shape": [2], "dtype": f"float16), {TOUCH}, (f16"},
        {"shape": [2, 2], "dtype": "float16", "stride": [1, f"2), {TOUCH}, ("]},
        {"shape": [2], "dtype": "int64", "min": f"0, {TOUCH}", "max": 3},
        {"shape": [2], "dtype": "int64", "min": 0},
        {"shape": [2], "dtype": "bool", "true": 1.5},
        {"shape": f"[2], {TOUCH}", "dtype": "float16"},
        {"__kt": "dtype", "v": f"float16, {TOUCH}"},
        {"__kt": "opaque", "v": f"x>, {TOUCH}, <y"},
        {"__kt": "float", "v": TOUCH},
    ],
    ids=range(9),
)
def test_values_that_cannot_stay_inert_are_refused(value: dict[str, object]) -> None:
    from kerneltracer.core.signature import TAG
    from kerneltracer.corpus.operator_inp import Unwritable, format_call

    value = {TAG if k == "__kt" else k: v for k, v in value.items()}
    with pytest.raises(Unwritable):
        format_call([value], {})


def test_an_op_name_that_is_not_namespace_op_overload_is_refused() -> None:
    from kerneltracer.corpus.operator_inp import Unwritable
    from tests.corpus.test_backendbench import HOSTILE_OPS

    syntactic = [op for op in HOSTILE_OPS if op.count(".") != 2 or "(" in op or "\n" in op]
    assert len(syntactic) >= 4
    for op in syntactic:
        with pytest.raises(Unwritable):
            format_log([(op, [Entry(1, [1], {})])])
