"""Fleet compile health: which models compile, where and why they break, what
recompiles, what each compile phase costs — and what changed between two runs.

Built on the structured-logs stage 1 (``kerneltracer logs parse``): each TORCH_TRACE log
becomes an intermediate, read here per compile id (``records``), summed per job
(``health``), then over the run (``fleet``); ``export`` writes the table and page, ``diff``
compares two runs.
"""
