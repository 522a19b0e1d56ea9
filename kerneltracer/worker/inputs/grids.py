"""Dynamic-resolution images (Qwen2-VL style): flattened patches plus the grid they form.

Such a vision tower takes no fixed-size image: ``pixel_values`` is one row per patch
(channels × temporal patch × patch × patch values) and ``image_grid_thw`` says how many
patches each image has in time, height and width. Everything is read from the vision
config (patch sizes, spatial merge), so every model with this forward signature works.
"""

from __future__ import annotations

import inspect
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
    return spec.randn((spec.batch * t * h * w, _row(spec)), salt=13)


def _row(spec: InputSpec) -> int:
    """Values of one patch: channels x temporal patch x patch x patch."""
    patch = int(spec.find_in("vision_config", "patch_size", default=14))
    temporal = int(spec.find_in("vision_config", "temporal_patch_size", default=1) or 1)
    channels = int(
        spec.find_in("vision_config", "in_channels", "in_chans", "num_channels", default=3)
    )
    return channels * temporal * patch * patch


def video_grid(spec: InputSpec) -> tuple[int, int, int]:
    """A clip of two temporal patches on the image's grid."""
    _, h, w = grid(spec)
    return 2, h, w


def video_patches(spec: InputSpec) -> Any:
    t, h, w = video_grid(spec)
    return spec.randn((spec.batch * t * h * w, _row(spec)), salt=16)


def video_grid_thw(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    return torch.tensor([video_grid(spec)] * spec.batch, dtype=torch.long)


def wants_video_grid(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "pixel_values_videos" in built


def image_grid_thw(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    return torch.tensor([grid(spec)] * spec.batch, dtype=torch.long)


def wants_grid(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "pixel_values" in built


def mm_token_type_ids(spec: InputSpec, built: dict[str, Any]) -> Any:
    """Per token its modality (0 text, 1 image, 2 video), which multimodal RoPE reads."""
    ids = built["input_ids"]
    types = ids.new_zeros(ids.shape)
    for kind, marker in ((1, spec.image_token_id()), (2, _video_marker(spec))):
        if marker is not None:
            types[ids == marker] = kind
    return types


def _video_marker(spec: InputSpec) -> int | None:
    value = spec.find("video_token_id", "video_token_index")
    return int(value) if isinstance(value, int) else None


def wants_token_types(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "input_ids" in built and "pixel_values" in built


def rope_positions(spec: InputSpec, built: dict[str, Any]) -> Any:
    """Multimodal RoPE positions (3, batch, tokens), from the model's own get_rope_index on
    the token layout and grids we built."""
    get = _rope_index(spec.model)
    accepted = inspect.signature(get).parameters
    extra = {k: v for k, v in built.items() if k in accepted and k != "input_ids"}
    positions, _ = get(built["input_ids"], **extra)
    return positions


def wants_rope_positions(spec: InputSpec, built: dict[str, Any]) -> bool:
    # Only where the values are kept (weights fake): the model computes them itself from the
    # token layout, with Python lists of tensors that fake tensors cannot fill
    # (torch.tensor of per-sample deltas); with real weights it does so in the trace.
    return (
        spec.keep_values is not None
        and "mm_token_type_ids" in built
        and _rope_index(spec.model) is not None
    )


def _rope_index(model: Any) -> Any:
    for owner in (model, getattr(model, "model", None)):
        get = getattr(owner, "get_rope_index", None)
        if callable(get):
            return get
    return None
