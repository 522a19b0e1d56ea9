"""Set operations on id columns, with the results of ``np.unique`` / ``np.isin``.

numpy 2's ``np.unique`` hashes, and its hash does badly on the loader's columns: on a
3M-event trace the unique correlation ids took 1 s where a sort takes 0.07 s, and the
unique names with their inverse 0.4 s where counting the (few, dense) name ids is free.
``np.median`` and a plain ``np.unique`` import ``numpy.ma`` on their first call (~10 ms
on a tiny trace's run), to ask whether they were given a masked array: ours never are.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def unique_codes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for non-negative integer codes (name or
    category ids: dense, far fewer than the rows)."""
    if codes.size == 0:
        return codes[:0].copy(), np.empty(0, dtype=np.intp)
    present = np.bincount(codes) > 0
    uniq = np.flatnonzero(present).astype(codes.dtype, copy=False)
    position = np.cumsum(present, dtype=np.intp) - 1
    return uniq, position[codes]


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``: the distinct values, ascending."""
    s = np.sort(values)
    if s.size == 0:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def isin_sorted(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``np.isin(values, members)`` where ``members`` is sorted (``sorted_unique``)."""
    if members.size == 0:
        return np.zeros(values.shape, dtype=bool)
    pos = np.searchsorted(members, values)
    pos[pos == members.size] = 0
    return members[pos] == values


def code_mask(codes: np.ndarray, members: Iterable[int], size: int) -> np.ndarray:
    """``np.isin(codes, members)`` for codes in ``[0, size)`` (name or category ids), as
    a gather from a table of ``size`` flags: ``np.isin`` widened the column to int64 and
    compared it, ~9 MiB of temporaries and 16 ms on a 1.9M-row column where this takes
    the mask alone and 2.5 ms. A code of -1 reads the table's extra last flag, never set."""
    table = np.zeros(size + 1, dtype=bool)
    table[np.fromiter(members, dtype=np.intp)] = True
    return table.take(codes)


def median(values: np.ndarray) -> float:
    """``float(np.median(values))`` of a plain 1-D float array (NaN when it holds a NaN or is
    empty, as numpy gives)."""
    n = values.size
    if n == 0 or np.isnan(values).any():
        return float("nan")
    half = n // 2
    if n % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, (half - 1, half))
    return float((part[half - 1] + part[half]) / 2)
