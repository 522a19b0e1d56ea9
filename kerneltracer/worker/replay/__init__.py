"""The torch side of the op corpus: the isolated replay worker, the tensors it builds from a
recorded signature, and the dispatcher query behind ``readiness --dispatch-key``.

Like the tracing worker, this is the only place the corpus touches torch; planning, batching
and reading results (kerneltracer/corpus/) stay framework-free.

Its face: ``dispatcher`` (``readiness --dispatch-key``).
"""

__all__ = ["dispatcher"]
