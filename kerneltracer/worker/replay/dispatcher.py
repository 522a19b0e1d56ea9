"""Which ops this torch has a kernel for under a dispatch key (own or via a composite alias)."""

from __future__ import annotations

from collections.abc import Callable

import torch


def dispatch_keys() -> list[str]:
    return sorted(torch._C.DispatchKey.__members__)


def kernel_lookup(key: str) -> tuple[str, Callable[[str], bool]]:
    """This torch's version and a predicate ``aten.name.overload`` → has a kernel for ``key``.

    ``key`` must be one of :func:`dispatch_keys` (the caller validates, to word the error).
    """
    has_kernel = torch._C._dispatch_has_computed_kernel_for_dispatch_key

    def supports(op: str) -> bool:
        parts = op.split(".")
        if len(parts) != 3:
            return False
        name = f"{parts[0]}::{parts[1]}" + ("" if parts[2] == "default" else f".{parts[2]}")
        try:
            return bool(has_kernel(name, key))
        except RuntimeError:  # not an op of this torch
            return False

    return str(torch.__version__), supports
