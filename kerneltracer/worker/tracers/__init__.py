"""The tracer implementations the worker runs: each traces a model under one framework and
writes its artefacts. What they declare is catalogued in :mod:`kerneltracer.tracers`; a
module here is imported only when its class is needed (a job runs it, its options are
validated), and imports torch, transformers or vllm only inside its methods.
"""
