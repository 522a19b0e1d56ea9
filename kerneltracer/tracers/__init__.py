"""Tracers: static descriptions (orchestrator side) with worker-side trace/write methods.

Modules here must not import torch, transformers or vllm at import time: the orchestrator
imports tracer modules to plan. Framework imports live inside the methods. The registry
(:mod:`.registry`) imports no tracer module until a tracer's class is needed, so config
validation loads none.
"""
