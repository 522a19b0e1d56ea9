"""Built-in test models of the FX optimiser, by name (:data:`BUILTIN`).

Built-in specs are small on purpose (CPU tests and benchmarks on shared cores). A
``MODEL_SPEC`` is resolved by :func:`kerneltracer.worker.frameworks.huggingface.causal_lm.
load_model`, which also loads a local Hugging Face directory: fx sits below the worker (the
graph-writing tracers use its node tables), so loading models with transformers is not its job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class SimpleMLP(nn.Module):
    """Sanity check: linear → ReLU → linear → ReLU → linear."""

    def __init__(self, input_dim: int = 784, hidden_dim: int = 256, output_dim: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim)
        self.fc3 = nn.Linear(hidden_dim, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNNWithBN(nn.Module):
    """Stateful ops: BatchNorm (running stats in train mode) and dropout."""

    def __init__(self, channels: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn(self.conv(x))))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(self.drop(x))


class ResNetBlock(nn.Module):
    """Conv → BN → ReLU → Conv → BN, plus the skip connection, then ReLU."""

    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


class RedundantModel(nn.Module):
    """Copy-paste redundancy: the same conv, relu and scaling computed twice."""

    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.relu(self.conv(x))
        b = F.relu(self.conv(x))  # duplicate of a: conv, relu
        c = torch.sigmoid(x).mean() * a
        d = torch.sigmoid(x).mean() * b  # duplicate of c once b is a: sigmoid, mean, mul
        return a + b + c + d


class DeepBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(x)))


class DeepNet(nn.Module):
    """The deep 10-layer net for recomputation: residual MLP blocks."""

    def __init__(self, dim: int = 64, depth: int = 10) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[DeepBlock(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layers(x))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.short(x))


class MiniResNet(nn.Module):
    """The medium benchmark model: a stem and ``num_blocks`` basic blocks."""

    def __init__(self, num_blocks: int = 5, channels: tuple[int, ...] = (16, 32, 64)) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels[0], 3, 1, 1, bias=False), nn.BatchNorm2d(channels[0]), nn.ReLU()
        )
        blocks, cin = [], channels[0]
        for i in range(num_blocks):
            cout = channels[min(len(channels) - 1, i * len(channels) // num_blocks)]
            blocks.append(BasicBlock(cin, cout, 2 if cout != cin else 1))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DynamicControlFlow(nn.Module):
    """Untraceable: the branch depends on tensor values."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return self.a(x)
        return self.b(x)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple[Any, ...]]
    train: bool = True


def _rand(*shape: int) -> Callable[[], tuple[Any, ...]]:
    return lambda: (torch.randn(*shape),)


BUILTIN: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        ModelSpec("mlp", lambda: SimpleMLP(784, 256, 10), _rand(32, 784)),
        ModelSpec("cnn_bn", CNNWithBN, _rand(4, 3, 16, 16)),
        ModelSpec("resnet_block", ResNetBlock, _rand(2, 8, 16, 16)),
        ModelSpec("redundant", RedundantModel, _rand(2, 3, 16, 16)),
        ModelSpec("deep", DeepNet, _rand(64, 64)),
        # Eval mode = frozen BatchNorm as in fine-tuning; in train mode BN blocks recomputation.
        ModelSpec("mini_resnet", MiniResNet, _rand(8, 3, 32, 32), train=False),
        ModelSpec("dynamic", DynamicControlFlow, _rand(4, 8)),
    )
}
