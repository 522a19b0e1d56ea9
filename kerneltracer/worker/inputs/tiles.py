"""Tiled images read through cross-attention (Mllama style): each image cut into up to
``max_num_tiles`` tiles on one of the config's supported aspect ratios, the prompt holding one
placeholder per image, and a cross-attention mask saying which tiles each text token sees.

Everything comes from the vision config (max_num_tiles, supported_aspect_ratios, image_size)
and the forward's arguments (aspect_ratio_ids, cross_attention_mask), never from the
architecture's name.
"""

from __future__ import annotations

from typing import Any

from kerneltracer.worker.inputs.spec import InputSpec


def tiled(spec: InputSpec) -> bool:
    return "aspect_ratio_ids" in spec.params and isinstance(
        spec.find_in("vision_config", "max_num_tiles"), int
    )


def cross_attention(spec: InputSpec) -> bool:
    """The text reads the image through cross-attention: one placeholder per image."""
    return "cross_attention_mask" in spec.params


def _ratio(spec: InputSpec) -> tuple[int, tuple[int, int]]:
    """(1-based id, (rows, cols)) of the widest supported ratio that uses every tile, else of
    the one with the most tiles: the processor's choice for a large enough image."""
    tiles = int(spec.find_in("vision_config", "max_num_tiles"))
    ratios = spec.find_in("vision_config", "supported_aspect_ratios") or [[1, 1]]
    pairs = [(int(r[0]), int(r[1])) for r in ratios]
    best = max(
        range(len(pairs)),
        key=lambda i: (pairs[i][0] * pairs[i][1] <= tiles, pairs[i][0] * pairs[i][1]),
    )
    return best + 1, pairs[best]


def used_tiles(spec: InputSpec) -> int:
    rows, cols = _ratio(spec)[1]
    return rows * cols


def pixel_tiles(spec: InputSpec, side: int, channels: int) -> Any:
    """(batch, images, max tiles, channels, side, side): one image, its unused tiles zero."""
    tiles = int(spec.find_in("vision_config", "max_num_tiles"))
    pixels = spec.randn((spec.batch, 1, tiles, channels, side, side), salt=18)
    pixels[:, :, used_tiles(spec) :] = 0
    return pixels


def aspect_ratio_ids(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    return torch.full((spec.batch, 1), _ratio(spec)[0], dtype=torch.long)


def aspect_ratio_mask(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    tiles = int(spec.find_in("vision_config", "max_num_tiles"))
    mask = torch.zeros((spec.batch, 1, tiles), dtype=torch.long)
    mask[:, :, : used_tiles(spec)] = 1
    return mask


def cross_attention_mask(spec: InputSpec, built: dict[str, Any]) -> Any:
    """Every text token sees the image's used tiles (the placeholder opens the prompt)."""
    import torch

    tiles = int(spec.find_in("vision_config", "max_num_tiles"))
    length = int(built["input_ids"].shape[-1])
    mask = torch.zeros((spec.batch, length, 1, tiles), dtype=torch.long)
    mask[:, :, :, : used_tiles(spec)] = 1
    return mask


def wants_tiles(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "pixel_values" in built and tiled(spec)


def wants_cross_mask(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "pixel_values" in built and "input_ids" in built and cross_attention(spec)
