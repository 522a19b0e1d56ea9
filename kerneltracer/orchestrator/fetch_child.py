"""``python -m kerneltracer.orchestrator.fetch_child NAME.request.json``: one download.

The hub client can wait forever on a server that accepts a connection and never answers,
so each download runs in this child, in its own process group, which the orchestrator ends
when the model's timeout is reached; the child also dies with the orchestrator
(parent-death signal). It writes ``NAME.result.json`` beside the request.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kerneltracer.environ import KtEnv
from kerneltracer.jsonio import atomic_write_bytes, read_json
from kerneltracer.orchestrator.fetch import REQUEST_SUFFIX, FetchRequest, fetch, result_path


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].endswith(REQUEST_SUFFIX):
        usage = f"usage: python -m kerneltracer.orchestrator.fetch_child NAME{REQUEST_SUFFIX}"
        print(usage, file=sys.stderr)
        return 2
    from kerneltracer.process import lifeline

    lifeline.install(KtEnv.read().orchestrator_pid)
    request_path = Path(argv[0])
    req = FetchRequest.model_validate(read_json(request_path))
    result = fetch(req)
    print(f"{req.repo_id}: {result.outcome.value}{': ' + result.reason if result.reason else ''}")
    atomic_write_bytes(result_path(request_path), result.model_dump_json().encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
