"""The replayable op-input corpus of a run, its replay, and backend readiness.

- ``model``: the corpus data model (one :class:`Signature` per unique op call signature);
- ``build``: read every ok torch_dispatch job of a run dir into a :class:`Corpus`;
- ``export``: write it as Parquet (typed schema in ``schema``) and operator_inp logs;
- ``operator_inp``: writer and eval-free parser of the operator_inp text format;
- ``replay``: run each signature in isolated worker subprocesses (the torch side is
  kerneltracer.worker.replay);
- ``readiness``: which ops a backend lacks, per model, and which ones to add first;
- ``costs``: each signature's cost estimated from shapes (kerneltracer.costmodel), ranked
  per op / module / model on a device.

Nothing here imports torch: the replay worker and the dispatch-key query live in
kerneltracer.worker.replay.

Its face (contract `faces`) is every module above but ``operator_inp`` (the export's), and
``backendbench``, ``logs``, ``readiness_export``, ``replay_export`` and ``support`` (the
``readiness`` / ``replay`` commands and report pages read them).
"""

__all__ = [
    "backendbench",
    "build",
    "costs",
    "export",
    "logs",
    "model",
    "readiness",
    "readiness_export",
    "replay",
    "replay_export",
    "schema",
    "support",
]
