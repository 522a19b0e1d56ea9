"""Dynamic-resolution images (Qwen2-VL style): flattened patches plus the grid they form.

Such a vision tower takes no fixed-size image: ``pixel_values`` is one row per patch
(channels × temporal patch × patch × patch values) and ``image_grid_thw`` says how many
patches each image has in time, height and width. Everything is read from the vision
config (patch sizes, spatial merge), so every model with this forward signature works.
"""

from __future__ import annotations

from typing import Any

from kerneltracer.worker.inputs.spec import InputSpec

_DEFAULT_SIDE = 64


def dynamic_resolution(spec: InputSpec) -> bool:
    return "image_grid_thw" in spec.params


def grid(spec: InputSpec) -> tuple[int, int, int]:
    """(temporal, height, width) patches of one image: a square image, whole merge blocks."""
    patch = int(spec.find_in("vision_config", "patch_size", default=14))
    merge = int(spec.find_in("vision_config", "spatial_merge_size", default=1) or 1)
    size = spec.find_in("vision_config", "image_size")
    side = int(size) if isinstance(size, int) else _DEFAULT_SIDE
    blocks = max(1, round(side / patch / merge))
    return 1, blocks * merge, blocks * merge


def patches(spec: InputSpec) -> Any:
    t, h, w = grid(spec)
    patch = int(spec.find_in("vision_config", "patch_size", default=14))
    temporal = int(spec.find_in("vision_config", "temporal_patch_size", default=1) or 1)
    channels = int(spec.find_in("vision_config", "in_channels", "in_chans", "num_channels",
                                default=3))
    row = channels * temporal * patch * patch
    return spec.randn((spec.batch * t * h * w, row), salt=13)


def image_grid_thw(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    return torch.tensor([grid(spec)] * spec.batch, dtype=torch.long)


def wants_grid(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "pixel_values" in built


def mm_token_type_ids(spec: InputSpec, built: dict[str, Any]) -> Any:
    """Per token its modality (0 text, 1 image), which multimodal RoPE reads."""
    ids = built["input_ids"]
    marker = spec.image_token_id()
    return (ids == marker).long() if marker is not None else ids.new_zeros(ids.shape)


def wants_token_types(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "input_ids" in built and "pixel_values" in built
