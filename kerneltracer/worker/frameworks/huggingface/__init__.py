"""The huggingface framework: transformers models run eagerly in the worker's process."""

from kerneltracer.worker.frameworks.huggingface.context import HFContext, loss_of
from kerneltracer.worker.frameworks.huggingface.loader import HuggingFaceLoader

__all__ = ["HFContext", "HuggingFaceLoader", "loss_of"]
