"""Image, video and audio inputs, sized from the config; image placeholder tokens for VLMs.

The layout follows what the config names, never the architecture's name: a config with
``num_frames`` is a video model (frames before channels), one with mel bins and a fixed
``max_length`` but no conv front end takes a spectrogram, one whose forward takes
``image_grid_thw`` takes flattened patches (:mod:`.grids`).
"""

from __future__ import annotations

import inspect
from typing import Any

from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.inputs import grids, tiles
from kerneltracer.worker.inputs.spec import InputSpec

_DEFAULT_IMAGE = 64
# Frames of a clip when the config does not fix them (processors sample 8 to 32; 4 keeps the
# tiny zoo fast, and a clip's ops do not change with its length).
_VIDEO_FRAMES = 4
# Models whose prompts mark video frames with the image token, each frame framed and
# timestamped by the processor: a layout no config field describes, so they get images only.
_VIDEO_AS_IMAGE_TOKENS = frozenset({"glm4v", "glm4v_moe", "glm46v"})
# Token ids a VLM reacts to: random text must not contain them.
_SPECIAL = (
    "image_token_id",
    "image_token_index",
    "video_token_id",
    "video_token_index",
    "audio_token_id",
    "audio_token_index",
    "vision_start_token_id",
    "vision_end_token_id",
)
# Samples per frame of wav2vec2-style conv front ends when the config does not say.
_DEFAULT_HOP = 320


def _side(value: Any) -> int:
    if isinstance(value, list | tuple):
        return int(value[0])
    if isinstance(value, dict):  # {"height": .., "width": ..} or {"shortest_edge": ..}
        return int(next(iter(value.values())))
    return int(value)


def pixel_values(spec: InputSpec, built: dict[str, Any]) -> Any:
    if grids.dynamic_resolution(spec):
        return grids.patches(spec)
    if _flat_patches(spec):
        return _patch_rows(spec)
    # Matting models take the image and its trimap: 4 channels, said by the backbone's config.
    channels = int(spec.find_in("vision_config", "num_channels", default=3))
    side = _image_side(spec)
    if tiles.tiled(spec):
        return tiles.pixel_tiles(spec, side, channels)
    if clip_as_pixels(spec):
        return spec.randn((spec.batch, _VIDEO_FRAMES, channels, side, side), salt=10)
    frames = spec.find_in("vision_config", "num_frames")
    if isinstance(frames, int) and frames > 0:
        # Video classifiers (VideoMAE, TimeSformer, ViViT): (batch, frames, channels, H, W);
        # their position tables are sized for exactly num_frames.
        return spec.randn((spec.batch, frames, channels, side, side), salt=10)
    if _any_resolution(spec):
        # LLaVA-NeXT style: per image its base view and the tiles of the best grid pinpoint.
        return spec.randn((spec.batch, _image_views(spec), channels, side, side), salt=10)
    if _split_images(spec):
        # Idefics style: per sample a list of images (here one), each with its pixel mask.
        return spec.randn((spec.batch, 1, channels, side, side), salt=10)
    return spec.randn((spec.batch, channels, side, side), salt=10)


def _flat_patches(spec: InputSpec) -> bool:
    """The decoder embeds raw patches itself, no vision tower (Fuyu): the forward documents
    its image as (batch, patches, patch x patch x channels)."""
    for name in ("pixel_values", "image_patches"):
        dims = spec.documented_shape(name) if name in spec.params else None
        if dims is not None and len(dims) == 3 and "patch" in dims[1]:
            return True
    return False


def _patch_rows(spec: InputSpec) -> Any:
    """One row per patch of a square image, each row a patch's values, as the processor
    cuts them."""
    channels = int(spec.find("num_channels", default=3))
    patch = _side(spec.find("patch_size", default=30))
    side = _image_side(spec)
    count = max(1, side // patch) ** 2
    return spec.randn((spec.batch, count, patch * patch * channels), salt=17)


def _any_resolution(spec: InputSpec) -> bool:
    """The processor sends each image's size and tiles it on the config's grid pinpoints."""
    return "image_sizes" in spec.params and bool(spec.find("image_grid_pinpoints"))


def _split_images(spec: InputSpec) -> bool:
    """The processor splits images and sends a pixel mask with them (Idefics 2/3, SmolVLM)."""
    return "pixel_attention_mask" in spec.params


def _image_views(spec: InputSpec) -> int:
    """Base view + tiles for a ``side`` x ``side`` image: the pinpoint the processor picks
    (transformers' own choice: most effective resolution, then least waste)."""
    from transformers.image_processing_utils import select_best_resolution

    side = _image_side(spec)
    pinpoints = [tuple(int(v) for v in p) for p in spec.find("image_grid_pinpoints")]
    height, width = select_best_resolution((side, side), pinpoints)
    return 1 + (height // side) * (width // side)


def image_sizes(spec: InputSpec, built: dict[str, Any]) -> Any:
    """(height, width) of each original image, as the processor reports them."""
    import torch

    side = _image_side(spec)
    return torch.tensor([[side, side]] * spec.batch, dtype=torch.long)


def pixel_attention_mask(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    pixels = built["pixel_values"]
    return torch.ones((*pixels.shape[:2], *pixels.shape[-2:]), dtype=torch.bool)


def has_pixels(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "pixel_values" in built


def wants_image_sizes(spec: InputSpec, built: dict[str, Any]) -> bool:
    # LLaVA's forward takes image_sizes too (for Pixtral towers): a CLIP tower must not get it.
    return has_pixels(spec, built) and _any_resolution(spec)


def qformer_input_ids(spec: InputSpec, built: dict[str, Any]) -> Any:
    """The instruction the Q-Former reads beside the image (InstructBLIP): its own vocab."""
    vocab = int(spec.find_in("qformer_config", "vocab_size", default=0) or spec.vocab())
    limit = spec.find_in("qformer_config", "max_position_embeddings")
    length = min(spec.seq_len, int(limit)) if isinstance(limit, int) else spec.seq_len
    return spec.randint(vocab, (spec.batch, length), salt=14)


def qformer_attention_mask(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    return torch.ones_like(built["qformer_input_ids"])


def has_qformer_ids(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "qformer_input_ids" in built


def _image_side(spec: InputSpec) -> int:
    size = spec.find_in("vision_config", "image_size", default=None)
    return _side(size) if size is not None else _DEFAULT_IMAGE


def input_values(spec: InputSpec, built: dict[str, Any]) -> Any:
    """Raw audio long enough that the conv feature extractor yields ``seq_len`` frames, or a
    spectrogram where the config has mel bins and a fixed length but no conv front end."""
    dims = spec.documented_shape("input_values")
    if dims is not None and len(dims) == 3 and ("channel" in dims[1] or dims[1].isdigit()):
        # Neural audio codecs (EnCodec, DAC, Mimi): (batch, channels, samples), a whole number
        # of codec frames, seq_len of them.
        channels = (
            int(dims[1]) if dims[1].isdigit() else int(spec.find("audio_channels", default=1) or 1)
        )
        return spec.randn((spec.batch, channels, spec.seq_len * _codec_hop(spec)), salt=11)
    if spectrogram(spec):
        # Audio-spectrogram transformers: (batch, max_length, num_mel_bins); the patch grid
        # and its position table are sized for exactly max_length frames.
        frames = int(spec.find_in("audio_config", "max_length"))
        mels = int(spec.find_in("audio_config", "num_mel_bins"))
        return spec.randn((spec.batch, frames, mels), salt=11)
    kernels = spec.find_in("audio_config", "conv_kernel")
    strides = spec.find_in("audio_config", "conv_stride")
    if kernels and strides:
        samples = spec.seq_len
        for k, s in reversed(list(zip(kernels, strides, strict=False))):
            samples = (samples - 1) * int(s) + int(k)
    else:
        samples = spec.seq_len * _DEFAULT_HOP
    return spec.randn((spec.batch, samples), salt=11)


def _codec_hop(spec: InputSpec) -> int:
    """Samples per codec frame: the config's hop, else its sampling rate over its frame rate
    (Mimi downsamples its conv frames again, to frame_rate), else the product of its conv
    strides."""
    hop = spec.find("hop_length")
    if isinstance(hop, int) and hop > 0:
        return hop
    rate, frames = spec.find("sampling_rate"), spec.find("frame_rate")
    if isinstance(rate, int | float) and isinstance(frames, int | float) and frames > 0:
        return max(1, round(rate / frames))
    ratios = spec.find("downsampling_ratios", "upsampling_ratios")
    product = 1
    for r in ratios or [_DEFAULT_HOP]:
        product *= int(r)
    return product


def spectrogram(spec: InputSpec) -> bool:
    return (
        isinstance(spec.find_in("audio_config", "num_mel_bins"), int)
        and isinstance(spec.find_in("audio_config", "max_length"), int)
        and spec.find_in("audio_config", "conv_kernel") is None
    )


def input_features(spec: InputSpec, built: dict[str, Any]) -> Any:
    """Log-mel style features in the layout the config implies."""
    mels = spec.find_in("audio_config", "num_mel_bins")
    if _mels_first(spec):
        # Whisper-style encoders take (batch, mels, frames) and require exactly
        # 2 * max_source_positions frames (the conv stem halves them).
        positions = int(spec.find_in("audio_config", "max_source_positions"))
        return spec.randn((spec.batch, int(mels), 2 * positions), salt=12)
    if mels is not None:
        # Conformer-style encoders (Parakeet, LASR) take (batch, frames, mels): seq_len
        # encoder frames after their conv stem's subsampling, where the config says one.
        factor = spec.find_in("audio_config", "subsampling_factor")
        frames = spec.seq_len * (int(factor) if isinstance(factor, int) else 1)
        return spec.randn((spec.batch, frames, int(mels)), salt=12)
    per_channel = spec.find_in("audio_config", *_FEATURE_DIMS)
    if per_channel is not None:
        channels = int(spec.find_in("audio_config", "input_channels", default=1))
        # Speech2Text-style: (batch, frames, features); its conv stem subsamples by 4
        # (SeamlessM4T's speech encoder takes stacked mel frames, feature_projection_input_dim).
        return spec.randn((spec.batch, spec.seq_len * 4, int(per_channel) * channels), salt=12)
    searched = ", ".join(spec.config_names())
    raise UnsupportedError(
        f"{spec.class_name}.forward argument 'input_features' has no builder for this config: "
        f"none of num_mel_bins, {', '.join(_FEATURE_DIMS)} is set in {searched}"
    )


# Per-frame feature sizes of speech encoders that take (batch, frames, features).
_FEATURE_DIMS = ("input_feat_per_channel", "feature_size", "feature_projection_input_dim")


def image_token_count(spec: InputSpec, built: dict[str, Any]) -> int:
    """How many placeholder tokens a VLM's prompt needs for the built image (0 if none).

    Asked of the model itself (its vision tower on the built pixels, untraced), so the count
    follows whatever feature-selection strategy and projector the architecture uses.
    """
    if "pixel_values" not in built or spec.image_token_id() is None:
        return 0
    if tiles.cross_attention(spec):
        return 1  # the text attends to the image's tiles; the prompt marks where it stands
    if "image_tokens" not in spec.asked:
        spec.asked["image_tokens"] = _ask_tokens(spec, built, "image", "pixel_values")
    return int(spec.asked["image_tokens"])


def video_token_count(spec: InputSpec, built: dict[str, Any]) -> int:
    """Placeholder tokens for the built video (0 if none), asked of the model's video
    features as :func:`image_token_count` asks its image features."""
    pixels = "pixel_values" if clip_as_pixels(spec) else "pixel_values_videos"
    if pixels not in built or video_token_id(spec) is None:
        return 0
    if "video_tokens" not in spec.asked:
        spec.asked["video_tokens"] = _ask_tokens(spec, built, "video", pixels)
    return int(spec.asked["video_tokens"])


def clip_as_pixels(spec: InputSpec) -> bool:
    """A video model that takes its clip as ``pixel_values`` (InstructBLIP-Video): video
    features and a video placeholder, no image features, no ``pixel_values_videos``."""
    return (
        "pixel_values" in spec.params
        and "pixel_values_videos" not in spec.params
        and video_token_id(spec) is not None
        and _features(spec, "video") is not None
        and _features(spec, "image") is None
    )


def _features(spec: InputSpec, what: str) -> Any:
    """The model's get_{what}_features, on the task model or the base model it wraps."""
    return getattr(spec.model, f"get_{what}_features", None) or getattr(
        getattr(spec.model, "model", None), f"get_{what}_features", None
    )


def placeholder_counts(spec: InputSpec, built: dict[str, Any]) -> tuple[int, int, int]:
    """(image, video, audio tokens) of the prompt: what input_ids' builder asks first."""
    return (
        image_token_count(spec, built),
        video_token_count(spec, built),
        audio_token_count(spec, built),
    )


def video_token_id(spec: InputSpec) -> int | None:
    value = spec.find("video_token_id", "video_token_index")
    return int(value) if isinstance(value, int) else None


def _ask_tokens(spec: InputSpec, built: dict[str, Any], what: str, pixels: str) -> int:
    get = _features(spec, what)
    if get is None:
        raise UnsupportedError(
            f"{spec.class_name} takes {what} placeholder tokens but has no get_{what}_features "
            "to count them"
        )
    return _count_feature_rows(spec, built, get, what, pixels, by_name=True)


def audio_frames(spec: InputSpec, built: dict[str, Any]) -> int:
    """The time length of the built audio features: Whisper-style features put their mel
    bins before the frames, Speech2Text-style ones after."""
    feats = built["input_features"]
    return int(feats.shape[-1] if _mels_first(spec) else feats.shape[1])


def _mels_first(spec: InputSpec) -> bool:
    """Whisper's layout: mel bins as the conv stem's channels, a position table sized in
    frames (``max_source_positions``)."""
    return isinstance(spec.find_in("audio_config", "num_mel_bins"), int) and isinstance(
        spec.find_in("audio_config", "max_source_positions"), int
    )


def feature_attention_mask(spec: InputSpec, built: dict[str, Any]) -> Any:
    """All frames valid: (batch, frames), as a speech feature extractor sends it."""
    import torch

    return torch.ones((spec.batch, audio_frames(spec, built)), dtype=torch.long)


def has_features(spec: InputSpec, built: dict[str, Any]) -> bool:
    return "input_features" in built


def audio_token_count(spec: InputSpec, built: dict[str, Any]) -> int:
    """How many audio placeholder tokens the prompt needs for the built audio (0 if none).

    Asked of the model, untraced, on the built features: its ``get_audio_features`` where it
    has one, else its audio tower (the submodule built from the config's ``audio_config``,
    Qwen2-Audio's): as many tokens as rows of features it returns per sample.
    """
    value = spec.find("audio_token_id", "audio_token_index")
    if "input_features" not in built or not isinstance(value, int):
        return 0
    if "audio_tokens" not in spec.asked:
        spec.asked["audio_tokens"] = _ask_audio_tokens(spec, built)
    return int(spec.asked["audio_tokens"])


def _ask_audio_tokens(spec: InputSpec, built: dict[str, Any]) -> int:
    get = getattr(spec.model, "get_audio_features", None) or _audio_tower(spec)
    if get is None:
        raise UnsupportedError(
            f"{spec.class_name} takes audio placeholder tokens but has no get_audio_features "
            "and no audio tower to count them"
        )
    # An audio tower names its input as it likes: the features go first, by position.
    return _count_feature_rows(spec, built, get, "audio", "input_features", by_name=False)


def _count_feature_rows(
    spec: InputSpec, built: dict[str, Any], get: Any, what: str, key: str, *, by_name: bool
) -> int:
    """Runs the feature getter untraced on the built input under ``key`` and counts the rows
    it returns per sample: the placeholder tokens the prompt needs."""
    import torch

    # Whatever else the processor sent with the input and the getter reads (the grid of
    # dynamic-resolution patches, image sizes, the Q-Former's instruction, masks).
    accepted = inspect.signature(get).parameters
    extra = {
        k: v.to(spec.device)
        for k, v in built.items()
        if k != key and k in accepted and hasattr(v, "to")
    }
    main = built[key].to(spec.device)
    with torch.no_grad():
        feats = get(**{key: main}, **extra) if by_name else get(main, **extra)
    count = _feature_rows(feats) // spec.batch
    if count <= 0:
        raise UnsupportedError(f"{spec.class_name}: could not count {what} tokens")
    return count


def _audio_tower(spec: InputSpec) -> Any:
    audio_config = getattr(spec.config, "audio_config", None)
    if audio_config is None:
        return None
    # The tower holds its own copy of the sub-config: matched by class.
    for module in spec.model.modules():
        if module is not spec.model and type(getattr(module, "config", None)) is type(audio_config):
            return module
    return None


def pixel_values_videos(spec: InputSpec, built: dict[str, Any]) -> Any:
    """A short clip beside the image, so the video tower is traced too: flattened patches
    with their grid (dynamic resolution), else (batch, frames, channels, H, W)."""
    if grids.dynamic_resolution(spec):
        return grids.video_patches(spec)
    channels = int(spec.find_in("vision_config", "num_channels", default=3))
    frames = spec.find_in("vision_config", "num_frames")
    frames = frames if isinstance(frames, int) and frames > 0 else _VIDEO_FRAMES
    side = _image_side(spec)
    return spec.randn((spec.batch, frames, channels, side, side), salt=15)


def wants_video(spec: InputSpec, built: dict[str, Any]) -> bool:
    """The config names a video placeholder: the processor sends videos under their own name."""
    model_type = getattr(spec.config, "model_type", None)
    return video_token_id(spec) is not None and model_type not in _VIDEO_AS_IMAGE_TOKENS


def _feature_rows(feats: Any) -> int:
    import torch

    if torch.is_tensor(feats):
        return int(feats.shape[0] * feats.shape[1]) if feats.dim() == 3 else int(feats.shape[0])
    if isinstance(feats, list | tuple):
        return sum(_feature_rows(f) for f in feats)
    for attr in ("pooler_output", "image_embeds", "last_hidden_state"):
        inner = getattr(feats, attr, None)
        if inner is not None:
            return _feature_rows(inner)
    return 0


def avoid_special_ids(spec: InputSpec, ids: Any) -> Any:
    """Random ids must not hit the image/video/audio placeholders a VLM reacts to."""
    special = {int(v) for name in _SPECIAL if isinstance(v := spec.find(name), int)}
    for token in special:
        ids[ids == token] = (token + 1) % max(spec.vocab(), 2)
    return ids
