"""The run report: one static, self-contained HTML page set for a whole batch.

``build_report(run_dir)`` writes ``RUN_DIR/report/``: ``index.html`` (run summary and the
models x tracers status grid), ``models/<slug>.html`` (each model's jobs, files, analyses
and phase times), ``coverage.html`` plus the coverage exports, ``run_summary.json`` and
``jobs.csv``.
"""

from kerneltracer.report.build import ReportResult, build_report

__all__ = ["ReportResult", "build_report"]
