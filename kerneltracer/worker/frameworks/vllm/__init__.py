"""The vllm framework: a vLLM engine (its own processes) driven by generate()."""

from kerneltracer.worker.frameworks.vllm.context import EngineSettings, EngineTracer, VLLMContext
from kerneltracer.worker.frameworks.vllm.loader import VLLMLoader

__all__ = ["EngineSettings", "EngineTracer", "VLLMContext", "VLLMLoader"]
