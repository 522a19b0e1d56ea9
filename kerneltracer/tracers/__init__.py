"""The tracer catalog: what each tracer declares (name, frameworks, options, artefact kinds)
and the registry that finds them, for config validation, planning and reports.

The implementations live beside the worker that runs them (:mod:`kerneltracer.worker.tracers`);
the registry names them by "module:attr" string and imports one only when its class is
needed, so planning imports no implementation and no framework.

Its face is both modules: ``base`` (what a tracer declares), ``registry`` (``TRACERS``).
"""

__all__ = ["base", "registry"]
