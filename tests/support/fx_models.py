"""Test models for the FX optimiser that only tests and benchmarks use."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from kerneltracer.worker.frameworks.huggingface.tiny import build_tiny_models


class ImpureRepeats(nn.Module):
    """Repeated ops that must all stay: dropout, BatchNorm in train mode, RNG, in-place."""

    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.bn(x) + self.bn(x)
        b = self.drop(x) + self.drop(x)
        c = F.dropout(x, 0.5) + F.dropout(x, 0.5)
        y = x.clone()
        r1 = torch.relu(y)
        y.add_(1.0)  # relu(y) after this line is a new value
        r2 = torch.relu(y)
        return a + b + c + r1 + r2 + torch.rand_like(x) * 0 + torch.rand_like(x) * 0


def build_tiny_llama(root: Path) -> Path:
    """The tiny random-weight Llama of ``kerneltracer models build-tiny``, under ``root``."""
    ((path, _),) = build_tiny_models(root, ["tiny-llama"]).values()
    return path
