"""Framework loaders: one per framework, each with its own context type and step.

Its face: ``registry`` (``LOADERS``) and ``huggingface``.
"""

__all__ = ["huggingface", "registry"]
