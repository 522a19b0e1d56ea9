"""``python -m kerneltracer.worker.oplookup``: what this torch's registry has, for exports
that another tool evaluates against torch (BackendBench's ``torch.ops.<op_name>`` and
``torch.<dtype>``).

Reads ``{"ops": [names]}`` (JSON) on stdin; writes one JSON object on
stdout: ``torch`` (the version), ``ops`` (the names asked that are OpOverloads of the
registry) and ``names`` (``dtype`` / ``layout`` / ``memory_format`` -> every ``torch.<name>``
of that type). A process of its own: the analysis side never imports torch.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson


def lookup(ops: list[str]) -> dict[str, Any]:
    import torch

    from kerneltracer.worker.replay.tensors import InputError, resolve_op

    found = []
    for name in ops:
        try:
            resolve_op(name)
        except InputError:
            continue
        found.append(name)
    kinds = {"dtype": torch.dtype, "layout": torch.layout, "memory_format": torch.memory_format}
    names: dict[str, list[str]] = {kind: [] for kind in kinds}
    for attr in dir(torch):
        value = getattr(torch, attr, None)
        for kind, cls in kinds.items():
            if isinstance(value, cls) and not attr.startswith("_"):
                names[kind].append(attr)
    return {"torch": str(torch.__version__), "ops": found, "names": names}


def main() -> int:
    request = orjson.loads(sys.stdin.buffer.read())
    reply = lookup([str(n) for n in request["ops"]])
    sys.stdout.buffer.write(orjson.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
