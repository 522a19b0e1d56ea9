"""Chrome trace files into numpy columns: ``loader`` (streamed batches, input guard,
``ChromeTrace``) and ``builder`` (events folded into column chunks, every unused event
counted by kind).

Its face: ``loader`` (the report's pictures and ``timeline --count`` read traces with it).
"""

__all__ = ["loader"]
