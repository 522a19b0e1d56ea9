"""The huggingface framework: transformers models run eagerly in the worker's process.

Also home to the code that builds or loads transformers models outside a worker: the tiny
models and the zoo (``kerneltracer models``), and the causal LM of ``kerneltracer fx``.
"""

from kerneltracer.worker.frameworks.huggingface.context import HFContext, loss_of
from kerneltracer.worker.frameworks.huggingface.loader import HuggingFaceLoader

# Its face also names the model builders other packages use: ``causal_lm`` (``kerneltracer fx``),
# ``tiny`` and ``zoo`` (``kerneltracer models``).
__all__ = ["HFContext", "HuggingFaceLoader", "causal_lm", "loss_of", "tiny", "zoo"]
