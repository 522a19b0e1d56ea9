"""The big-trace paths: per-step windows, sort-based set operations, shared op args, args
texts spilled to a temp file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.nesting import Nesting
from kerneltracer.analysis.timeline.analyses.bottleneck import _analyze_window, analyze_steps
from kerneltracer.analysis.timeline.analyses.category_rows import categorize
from kerneltracer.analysis.timeline.load import events
from kerneltracer.analysis.timeline.load.events import OpArgsStore, json_list
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from kerneltracer.analysis.timeline.load.packed import PackedTexts
from kerneltracer.analysis.timeline.model.arrays import (
    code_mask,
    isin_sorted,
    median,
    sorted_unique,
    unique_codes,
)
from tests.timeline.traces import kernel, write_trace, x


@pytest.mark.parametrize("size", [0, 1, 7, 5000])
def test_set_operations_match_numpy(size: int) -> None:
    rng = np.random.default_rng(size)
    codes = rng.integers(0, 40, size).astype(np.int32)
    uniq, inv = unique_codes(codes)
    want_uniq, want_inv = np.unique(codes, return_inverse=True)
    assert uniq.dtype == codes.dtype
    assert uniq.tolist() == want_uniq.tolist() and inv.tolist() == want_inv.tolist()
    ids = rng.integers(-1, 10**12, size)
    ids[::3] = -1
    members = sorted_unique(ids[: size // 2])
    assert members.tolist() == np.unique(ids[: size // 2]).tolist()
    assert isin_sorted(ids, members).tolist() == np.isin(ids, members).tolist()
    # Name / category codes, -1 (no such code) among them, members given as any iterable.
    chosen = {c for c in range(40) if c % 3 == 0}
    marked = codes.copy()
    marked[::5] = -1
    want = np.isin(marked, list(chosen))
    assert code_mask(marked, chosen, 40).tolist() == want.tolist()
    assert code_mask(marked, iter(sorted(chosen)), 40).tolist() == want.tolist()
    assert not code_mask(marked, [], 40).any()
    durs = rng.random(size) * 1e4
    durs[::4] = np.round(durs[::4])  # ties
    if not size:
        assert np.isnan(median(durs))
    else:
        assert median(durs) == float(np.median(durs))
        durs[size // 2] = np.nan
        assert np.isnan(median(durs)) and np.isnan(np.median(durs))


def test_steps_see_every_event_that_overlaps_them(tmp_path: Path) -> None:
    # A host op spanning every step (it starts first, so the running end reaches past every
    # window), kernels straddling step borders, and events between steps.
    events = [x("long_op", "cpu_op", 0, 10_000, tid=2)]
    for s in range(6):
        t0 = 100 + s * 1500
        events.append(x(f"ProfilerStep#{s}", "user_annotation", t0, 1000))
        events.append(x("aten::mm", "cpu_op", t0 + 10, 300))
        events.append(x("cudaLaunchKernel", "cuda_runtime", t0 + 20, 30, corr=s))
        events.append(kernel(f"gemm_{s % 2}", t0 + 900, 400, corr=s))
        events.append(x("between", "cpu_op", t0 + 1100, 200))
    trace = load_chrome_trace(write_trace(tmp_path / "t.json", events))
    cats = categorize(trace)
    steps = analyze_steps(trace, cats)
    assert len(steps) == 6
    for step in steps:
        lo, hi = step.start_us, step.start_us + step.duration_us
        full = _analyze_window(trace, cats, lo, hi)  # every row of every category
        assert step.timeline_breakdown == full.timeline_breakdown
        assert step.bottleneck == full.bottleneck


def test_op_args_share_equal_values_and_ids_span_batches() -> None:
    store = OpArgsStore()
    text = b'{"Input Dims": [[2, 3], []], "Input type": ["float", ""], "External id": %d}'
    store.add([0, 4], [text % 10, text % 11])
    store.add([7], [b'{"Input Dims": [[2, 3], []], "Sequence number": 5, "External id": 1.5}'])
    a, b, c = store[0], store[4], store[7]
    assert a.input_dims == [[2, 3], []] and a.input_types == ["float", ""]
    assert a.input_dims is b.input_dims is c.input_dims  # decoded once
    assert c.input_types is None and c.concrete_inputs is None
    assert a == msgspec.json.decode(text % 10, type=type(a))
    ext_rows, ext, seq_rows, seq = store.int_ids()
    assert ext_rows.tolist() == [0, 4] and ext.tolist() == [10, 11]
    assert seq_rows.tolist() == [7] and seq.tolist() == [5]


def test_external_id_rows_decode_only_the_batches_that_can_hold_a_wanted_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded: list[bytes] = []

    class Counting:
        def decode(self, text: bytes) -> Any:
            decoded.append(text)
            return events.OP_IDS_LIST_DECODER.decode(text)

    monkeypatch.setattr(events, "OP_IDS_LIST_DECODER", events.OP_IDS_LIST, raising=False)
    monkeypatch.setattr(events, "OP_IDS_LIST", Counting())
    store = OpArgsStore()
    store.add([0, 1], [b'{"External id": 5}', b'{"External id": 6, "Input Dims": [[5]]}'])
    store.add([2, 3], [b'{"External id":\n 7}', b'{"Call stack": "a;b", "External id": 12.5}'])
    store.add([4], [b'{"External id": -0}'])
    store.add([5], [b'{"External\\u0020id": 9}'])  # an escaped key: decoded, not skipped
    store.add([6, 7], [b'{"External id": 70}', b'{"Sequence number": 7}'])

    rows, ids = store.external_id_rows({7, 12})
    assert rows.tolist() == [2] and ids.tolist() == [7]
    # the batch with a 7 and a 12.5 after the key, and the escaped one; never the rest
    assert len(decoded) == 2
    assert all(b"70" not in t and b"-0" not in t for t in decoded)
    decoded.clear()
    assert store.external_id_rows({0, 9, 6})[0].tolist() == [1, 4, 5]
    assert store.external_id_rows({8})[0].size == 0
    assert len(decoded) == 3 + 1  # rows 0-1, 4, 5; then only the escaped batch
    # the same answer as from every op's decoded ids, which it then reuses
    ext_rows, ext, _, _ = store.int_ids()
    decoded.clear()
    assert store.external_id_rows({7, 0, 9})[0].tolist() == [2, 4, 5]
    assert not decoded and ext_rows.tolist() == [0, 1, 2, 4, 5, 6]
    assert ext.tolist() == [5, 6, 7, 0, 9, 70]


def test_nesting_refuses_a_row_it_does_not_hold() -> None:
    ts = np.array([0.0, 1.0, 2.0, 50.0])
    end = np.array([10.0, 5.0, 3.0, 60.0])
    nest = Nesting(np.array([0, 1, 2]), ts, end, np.zeros(4, dtype=np.int64))
    assert nest.parent(2) == 1 and nest.parent(1) == 0 and nest.parent(0) == -1
    assert nest.ancestors(2) == [1, 0]
    with pytest.raises(KeyError):
        nest.parent(3)


def _nested_spans(
    rng: np.random.Generator, lo: float, hi: float, depth: int
) -> list[tuple[float, float]]:
    """Properly nested spans inside [lo, hi): some children, each with its own."""
    out: list[tuple[float, float]] = []
    if depth == 0:
        return out
    cuts = np.sort(rng.uniform(lo, hi, size=2 * int(rng.integers(0, 4))))
    for s, e in zip(cuts[::2].tolist(), cuts[1::2].tolist(), strict=True):
        out.append((s, e))
        out += _nested_spans(rng, s, e, depth - 1)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_nesting_innermost_is_the_latest_enclosing_span_of_the_querys_thread(seed: int) -> None:
    rng = np.random.default_rng(seed)
    spans: list[tuple[float, float]] = []
    threads: list[int] = []
    for key in (7, 3, 11):  # keys out of order; thread 5 is never held
        made = _nested_spans(rng, 0.0, 1000.0, 4)
        spans += made
        threads += [key] * len(made)
    mixed = rng.permutation(len(spans))  # rows interleave threads, as a trace's do
    ts = np.array([spans[i][0] for i in mixed])
    end = np.array([spans[i][1] for i in mixed])
    thread = np.array([threads[i] for i in mixed], dtype=np.int64)
    nest = Nesting(np.arange(ts.size), ts, end, thread)
    q_thread = rng.choice([3, 5, 7, 11], size=300)
    q_ts = rng.uniform(-10.0, 1010.0, size=300)
    q_end = q_ts + rng.exponential(20.0, size=300)
    got = nest.innermost(q_thread, q_ts, q_end)
    for q in range(300):
        around = np.flatnonzero((thread == q_thread[q]) & (ts <= q_ts[q]) & (end >= q_end[q]))
        # nested: the enclosing spans form a chain, the innermost starts last
        want = int(around[np.lexsort((-end[around], ts[around]))[-1]]) if around.size else -1
        assert got[q] == want, q


@pytest.mark.parametrize("spill_bytes", [0, 40, 1 << 30])
def test_packed_texts_read_the_same_spilled_or_held(spill_bytes: int) -> None:
    # 0: in the temp file from the first batch; 40: from the second; 1 GiB: never.
    texts = PackedTexts(spill_bytes=spill_bytes)
    batches = [
        ([0, 3, 4], [b'{"a": 1}', b'{"b": [1, 2]}', b'{"c": "x"}']),
        ([9], [b'{"d": null}']),
        ([10, 12], [b'{"e": 2.5}', b'{"f": {"g": 1}}']),
    ]
    for rows, items in batches:
        texts.add(rows, items)
    held = {r: t for rows, items in batches for r, t in zip(rows, items, strict=True)}
    assert texts.rows() == sorted(held) and len(texts) == len(held)
    for row in [12, 0, 9, 3, 10, 4]:  # out of order: each blob read back as needed
        assert texts.text(row) == held[row]
    assert texts.text(5) is None and texts.text(13) is None
    arrays = list(texts.json_arrays())
    assert [r.tolist() for r, _ in arrays] == [rows for rows, _ in batches]
    assert [t for _, t in arrays] == [json_list(items) for _, items in batches]


def test_packed_mapping_get_is_the_mapping_get() -> None:
    """``get`` (its own, without a KeyError per missing row) answers as ``Mapping.get``:
    decoded values for packed rows, ``direct`` values first, the default for any other row
    (numpy ints included), and ``[]`` still raises for a missing row."""
    from collections.abc import Mapping

    from kerneltracer.analysis.timeline.load.packed import PackedMapping, decode_object

    args: PackedMapping[dict[str, Any]] = PackedMapping(decode_object)
    args.texts.add([2, 5], [b'{"a": 1}', b'{"b": 2}'])
    args.direct[7] = {"c": 3}
    args.direct[5] = {"direct": True}
    for row in [0, 2, 5, 7, 8, np.int64(2), np.int32(7)]:
        assert args.get(row) == Mapping.get(args, row)
        assert args.get(row, {}) == Mapping.get(args, row, {})
    assert args.get(2) == {"a": 1} and args.get(5) == {"direct": True} and args.get(3) is None
    with pytest.raises(KeyError):
        args[3]


def test_no_room_for_the_spilled_args_says_so_not_that_the_trace_is_bad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from kerneltracer.analysis.timeline.load import packed
    from kerneltracer.errors import TraceLoadError

    class FullDisk:
        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            pass

    monkeypatch.setattr(packed.tempfile, "TemporaryFile", lambda **_: FullDisk())
    monkeypatch.setattr(PackedTexts.__init__, "__defaults__", (0,))  # spill from the start
    path = write_trace(
        tmp_path / "t.json",
        [
            x("aten::mm", "cpu_op", 0, 10, **{"External id": 1, "Input Dims": [[2, 2], [2, 2]]}),
            kernel("gemm", 2, 5, corr=1, grid=[1, 1, 1], **{"External id": 1}),
        ],
    )
    with pytest.raises(TraceLoadError, match=r"no space left for the temporary file.*TMPDIR"):
        load_chrome_trace(path, op_args=True)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        # Texts with commas of their own too: the runs come from the offsets, not the text.
        st.tuples(st.binary(min_size=1, max_size=6), st.booleans()),
        max_size=25,
    )
)
def test_joined_ranges_are_the_picked_texts_comma_separated(
    items: list[tuple[bytes, bool]],
) -> None:
    """Texts picked out of a JSON array's text come out as their own join, each end where
    it is: neighbours copied together, the others apart."""
    from kerneltracer.analysis.timeline.load.packed import joined_ranges

    texts = [t for t, _ in items]
    blob = json_list(texts)
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    ends = np.cumsum(lengths) + np.arange(1, lengths.size + 1)
    picked = np.array([i for i, (_, keep) in enumerate(items) if keep], dtype=np.int64)
    text, got_ends = joined_ranges(blob, (ends - lengths)[picked], ends[picked])
    want = [texts[i] for i in picked.tolist()]
    assert text == b",".join(want)
    starts = np.concatenate(([0], got_ends[:-1] + 1)) if want else got_ends
    assert [text[s:e] for s, e in zip(starts.tolist(), got_ends.tolist(), strict=True)] == want


def test_a_trim_hands_back_only_a_free_heap_worth_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``release_free_heap`` trims when the heap holds at least ``TRIM_MIN_FREE`` free
    bytes, or when it cannot tell; fewer are left (re-faulting them costs more)."""
    from kerneltracer.core import heap

    trims: list[int] = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: trims.append)
    for free, trimmed in [
        (heap.TRIM_MIN_FREE - 1, False),
        (heap.TRIM_MIN_FREE, True),
        (None, True),
    ]:
        monkeypatch.setattr(heap, "_free_heap_bytes", lambda free=free: free)
        trims.clear()
        heap.release_free_heap()
        assert trims == ([0] if trimmed else []), free
    import platform

    libc, version = platform.libc_ver()
    if libc == "glibc" and tuple(map(int, version.split("."))) >= (2, 33):
        real = heap._mallinfo2.__wrapped__()  # the glibc of CI's Debian can tell
        assert real is not None and real().fordblks >= 0


def test_a_pause_to_the_end_freezes_what_it_made_instead_of_collecting_it() -> None:
    """``no_cyclic_gc(freeze=True)`` (a CLI command's, until the process ends) enables the
    collector again with the objects made meanwhile out of its reach (a collection of them
    all started at the next allocation); without ``freeze`` they stay collectable."""
    import gc

    from kerneltracer.core.heap import no_cyclic_gc

    before = gc.get_freeze_count()  # an in-process CLI run (main()) freezes too
    assert gc.isenabled()
    with no_cyclic_gc():
        made = [[i] for i in range(50_000)]
    assert gc.isenabled() and gc.get_freeze_count() == before
    with no_cyclic_gc(freeze=True):
        assert not gc.isenabled()
        made = [[i] for i in range(50_000)]  # tracked containers
    assert gc.isenabled() and gc.get_freeze_count() >= before + len(made)


def _intervals(rng: Any, nested: bool) -> list[tuple[int, float, float]]:
    """Host-op-like intervals on up to three threads: trees (children inside their parent,
    empty ones among them, many at a sibling's or the parent's end, ties) or, without
    ``nested``, spans at random that cross."""
    out: list[tuple[int, float, float]] = []

    def tree(t: int, lo: float, hi: float, depth: int) -> None:
        cur = lo
        for _ in range(rng.randrange(0, 4) if depth < 4 else 0):
            if cur >= hi:
                break
            s = min(hi, rng.choice([cur, cur + rng.randrange(0, 3), rng.uniform(cur, hi)]))
            e = rng.choice([s, min(hi, s + rng.randrange(0, 6)), rng.uniform(s, hi), hi])
            out.append((t, s, e))
            tree(t, s, e, depth + 1)
            cur = e if rng.random() < 0.7 else s

    for t in rng.sample([1, 2, 3], rng.randrange(1, 4)):
        top = 0.0
        for _ in range(rng.randrange(1, 4)):
            s = top + rng.randrange(0, 3)
            e = s + rng.randrange(0, 20)
            out.append((t, s, e))
            if nested:
                tree(t, s, e, 1)
            else:
                out += [(t, rng.uniform(0, 30), rng.uniform(0, 40)) for _ in range(3)]
            top = e
    return [(t, s, max(s, e)) for t, s, e in out]


@pytest.mark.parametrize("nested", [True, False])
def test_nesting_parents_by_levels_are_the_stack_walks(nested: bool) -> None:
    """Nesting's parents from whole-array levels are what the stack walk gives, on seeded
    trees with empty intervals at their parent's or a sibling's end (inside, not after)
    and ties; intervals that cross go to the walk itself, with the same answer."""
    import random

    from kerneltracer.analysis import nesting
    from kerneltracer.analysis.nesting import Nesting, stack_pass

    by_levels = 0
    for seed in range(400):
        rng = random.Random(seed)
        spans = _intervals(rng, nested)
        thread = np.array([t for t, _, _ in spans], dtype=np.int64)
        ts = np.array([s for _, s, _ in spans])
        end = np.array([e for _, _, e in spans])
        got = Nesting(np.arange(ts.size), ts, end, thread)
        walk = stack_pass(
            memoryview(got.ts), memoryview(got.end), memoryview(thread[got.rows])
        ).parent
        assert got.parent_pos.tolist() == list(walk), seed
        by_levels += nesting._nested_parents(got.ts, got.end, got._bounds) is not None
    assert by_levels >= (300 if nested else 1)  # the trees go by levels, nearly all
