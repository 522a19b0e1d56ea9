"""The worker: one process, one model, one tracer. Owns all framework state.

Other packages import only ``frameworks`` (the loaders' registry; the huggingface model
builders behind ``kerneltracer models`` and ``fx``) and ``replay`` (the dispatcher query);
the orchestrator starts the rest by module name (``python -m kerneltracer.worker``).
"""

__all__ = ["frameworks", "replay"]
