"""Tracers: static descriptions (orchestrator side) with worker-side trace/write methods.

Modules here must not import torch, transformers or vllm at import time: the orchestrator
imports the registry to plan and validate. Framework imports live inside the methods.
"""
