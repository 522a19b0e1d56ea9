"""The analyses over a loaded trace: bottleneck and suggestions (interval unions),
HTA-style GPU breakdowns, multi-rank stragglers, and op → kernel attribution
(``attribution``, ``cuda_graphs``, ``op_table``, ``ops``)."""
