"""Fleet compile health: which models compile, where and why they break, what
recompiles, what each compile phase costs — and what changed between two runs.

Built on the structured-logs stage 1 (``kerneltracer logs parse``): each TORCH_TRACE log
becomes an intermediate, read here per compile id (``records``), summed per job
(``health``), then over the run (``fleet``); ``export`` writes the table and page, ``diff``
compares two runs.

Its face: ``fleet`` (a run's health), ``export`` (the table and page files), ``page``
(the report's section), ``diff`` and ``diff_files`` (two runs compared).
"""

__all__ = ["diff", "diff_files", "export", "fleet", "page"]
