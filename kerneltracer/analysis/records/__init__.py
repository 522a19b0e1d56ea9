"""Record analysis (ada-pa's format): Start/End logs → events → tracing, summary, op statistic.

``analyse(path)`` parses a GE profiling log or a worker phase log into one
:class:`ProfilingData` per dump; the reporters in :data:`REPORTERS` turn those into files.
"""

from kerneltracer.analysis.records.analyser import Analysis, analyse
from kerneltracer.analysis.records.model import EventRecord, ProfilingData, Record

# ``model`` and ``reporters`` are its face too (``kerneltracer records``).
__all__ = ["Analysis", "EventRecord", "ProfilingData", "Record", "analyse", "model", "reporters"]
