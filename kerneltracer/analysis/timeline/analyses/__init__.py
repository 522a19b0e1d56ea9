"""The analyses over a loaded trace: bottleneck and suggestions (interval unions),
HTA-style GPU breakdowns, multi-rank stragglers and waits, and op → kernel attribution
(``attribution``, ``cuda_graphs``, ``op_table``, ``ops``).

Its face: ``multirank`` (the Python API's typed cross-rank figures).
"""

__all__ = ["multirank"]
