"""core.parallel: rank numbering of a layout and the collectives line format."""

import pytest

from kerneltracer.core.parallel import (
    BadParallelRecord,
    CollectiveRecord,
    Layout,
    parse_collectives,
)


def test_rank_coords_round_trip_with_tp_fastest() -> None:
    layout = Layout(tp=4, pp=2)
    assert layout.world_size == 8
    assert layout.coords(1) == {"pp": 0, "dp": 0, "ep": 0, "tp": 1}
    assert layout.coords(4) == {"pp": 1, "dp": 0, "ep": 0, "tp": 0}
    assert [layout.rank_of(layout.coords(r)) for r in range(8)] == list(range(8))
    assert layout.label() == "tp4.pp2"
    assert Layout().label() == "single"


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_layout_refuses_bad_degrees(bad: object) -> None:
    with pytest.raises(BadParallelRecord, match=r"parallel\.tp"):
        Layout(tp=bad)  # type: ignore[arg-type]


def test_collectives_round_trip_and_bad_lines_counted() -> None:
    rec = CollectiveRecord(
        seq=0,
        kind="all_reduce",
        group="tp",
        group_size=8,
        dtype="bfloat16",
        shape=(1, 2048, 8192),
        bytes_per_rank=2 * 2048 * 8192,
        op="_c10d_functional.all_reduce.default",
        module="model.layers.0.self_attn.o_proj",
    )
    unknown = CollectiveRecord(
        seq=1,
        kind="all_to_all",
        group="ep",
        group_size=8,
        dtype="bfloat16",
        shape=(),
        bytes_per_rank=None,
        op="_c10d_functional.all_to_all_single.default",
        assumption="tokens per expert unknown without real routing",
    )
    text = b"\n".join(
        [
            rec.to_json_line(),
            unknown.to_json_line(),
            b"{",
            b"[]",
            b'{"seq": 2, "kind": "gossip", "group": "tp", "group_size": 2, '
            b'"dtype": "f", "shape": [], "op": "x"}',
        ]
    )
    read = parse_collectives(text)
    assert read.records == [rec, unknown]
    assert not read.records[1].known
    assert read.bad == {"not_json": 1, "not_an_object": 1, "unknown_kind": 1}
