"""Module paths of recorded calls: every call keeps one, in a bounded number of entries.

A call signature's module paths map the qualified name of the innermost module that made
the call to its calls (``model.layers.17.mlp.down_proj: 1``). An 80-layer model repeats each
signature once per layer, so a signature would carry one path per layer; past
:data:`MAX_PATHS` distinct paths, layer and expert indices are folded
(``model.layers.*.mlp.down_proj: 80``): the mapping stays small and every call keeps its
module, which the cost rankings (folded anyway) need. Nothing is ever dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_PATHS = 32  # distinct paths per signature kept as they are; past it, indices fold
_INDEX = re.compile(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.|$)")


def fold_indices(path: str) -> str:
    """``model.layers.17.mlp`` -> ``model.layers.*.mlp`` (layer and expert indices)."""
    return _INDEX.sub("*", path)


def bounded(paths: Mapping[str, int], limit: int = MAX_PATHS) -> dict[str, int]:
    """``paths`` as they are when at most ``limit``, else with indices folded (calls summed).

    All or none are folded, so one signature never mixes ``layers.3`` with ``layers.*``.
    The folded mapping may still hold more than ``limit`` entries (a model of that many
    distinct unnumbered modules): every call keeps its path regardless.
    """
    if len(paths) <= limit:
        return dict(paths)
    folded: dict[str, int] = {}
    for path, calls in paths.items():
        key = fold_indices(path)
        folded[key] = folded.get(key, 0) + calls
    return folded
