"""One small builder per input kind, keyed by the forward argument it fills.

A builder is asked for an argument the model's forward() takes when the argument is
required or when the builder says the model wants it (from the config and what was built
so far). Registry order is build order: later builders may read earlier inputs (the
attention mask follows the token ids, image tokens follow the pixel values).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kerneltracer.worker.inputs import grids, labels, media, series, tiles
from kerneltracer.worker.inputs.spec import InputSpec

Built = dict[str, Any]

_SAMPLE_TEXT = (
    "Kernel engineers want to know which operators a model really runs, with which shapes, "
    "and where the time goes. "
)


@dataclass(frozen=True)
class Builder:
    name: str  # the forward argument
    kind: str  # text | vision | audio | series | layout | label | flag
    build: Callable[[InputSpec, Built], Any]
    wanted: Callable[[InputSpec, Built], bool] = lambda spec, built: True
    train_only: bool = False
    # Its values are ours, not data (ids we drew, grids and sizes from the config): a fake
    # run keeps them real, as transformers reads them (spec.keep_values).
    known: bool = False
    # Asks the model what the build needs (spec.asked), before a known build runs apart.
    prepare: Callable[[InputSpec, Built], Any] | None = None


def _token_ids(spec: InputSpec, built: Built) -> Any:
    import torch

    vocab = spec.vocab()
    image_tokens, video_tokens, audio_tokens = media.placeholder_counts(spec, built)
    text = spec.text_length()
    length = text
    placeholders = image_tokens or video_tokens or audio_tokens
    ids = _tokenized(spec, vocab, text) if not placeholders else None
    if ids is None:
        ids = spec.randint(vocab, (spec.batch, text), salt=1)
        ids = media.avoid_special_ids(spec, ids)
    if image_tokens or video_tokens:
        # The image's placeholders, then the video's, then the text (set: counted above).
        parts = []
        for count, marker in (
            (image_tokens, spec.image_token_id()),
            (video_tokens, media.video_token_id(spec)),
        ):
            if count:
                run = torch.full((spec.batch, count), marker or 0, dtype=torch.long)
                parts += _framed(spec, run)
        ids = torch.cat([*parts, ids], dim=1)
    if audio_tokens:
        # As the processor writes an audio prompt: the audio's placeholders, then the text.
        marker = int(spec.find("audio_token_id", "audio_token_index"))
        ids = torch.cat([torch.full((spec.batch, audio_tokens), marker), ids], dim=1)
    length = int(ids.shape[1])
    if spec.choices is not None:
        ids = ids.unsqueeze(1).expand(spec.batch, spec.choices, length).contiguous()
    return ids


def _framed(spec: InputSpec, image: Any) -> list[Any]:
    """An image's or a video's placeholders between the vision start and end tokens, where
    the config names them (as the model's processor writes its prompts)."""
    start, end = spec.find("vision_start_token_id"), spec.find("vision_end_token_id")
    if not (isinstance(start, int) and isinstance(end, int)):
        return [image]
    return [image.new_full((spec.batch, 1), start), image, image.new_full((spec.batch, 1), end)]


def _tokenized(spec: InputSpec, vocab: int, length: int) -> Any:
    import torch

    tok = spec.tokenizer
    if tok is None:
        return None
    try:
        text = _SAMPLE_TEXT * (length // 8 + 1)
        enc = tok(text, add_special_tokens=False)["input_ids"][:length]
    except Exception:  # a tokenizer that cannot encode plain text: fall back to random ids
        return None
    if len(enc) != length or max(enc) >= vocab:
        return None
    return torch.tensor([enc] * spec.batch, dtype=torch.long)


def _has_text(spec: InputSpec, built: Built) -> bool:
    return "input_ids" in built


def _attention_mask(spec: InputSpec, built: Built) -> Any:
    import torch

    if "input_ids" in built:
        return _ones_like_ids(built)
    return torch.ones((spec.batch, media.audio_frames(spec, built)), dtype=torch.long)


def _wants_mask(spec: InputSpec, built: Built) -> bool:
    if "input_ids" not in built and "input_features" in built:
        # Speech encoders' feature extractors send the frames' mask, which CTC heads read
        # for their output lengths (Parakeet); it is not a text mask sdpa could drop.
        return True
    # The mask built is all ones. Given as a real tensor, transformers sees that (a value
    # check) and drops it for sdpa's is_causal path; as a fake tensor its values are unknown
    # and transformers builds the full mask instead: a different op sequence. No mask at all
    # takes the same path as the all-ones one, so a fake run leaves it out.
    return _has_text(spec, built) and not spec.omit_all_ones_mask


def _wants_token_types(spec: InputSpec, built: Built) -> bool:
    return "input_ids" in built and int(spec.find("type_vocab_size", default=0) or 0) >= 1


def _wants_bbox(spec: InputSpec, built: Built) -> bool:
    return "input_ids" in built and spec.find("max_2d_position_embeddings") is not None


def _bbox(spec: InputSpec, built: Built) -> Any:
    import torch

    shape = tuple(built["input_ids"].shape)
    corner = spec.randint(500, (*shape, 2), salt=2)
    size = spec.randint(500, (*shape, 2), salt=3)
    # (x0, y0, x1, y1) with x0 <= x1 and y0 <= y1, all within LayoutLM's 0..1000 grid.
    return torch.cat([corner, corner + size], dim=-1)


def _decoder_ids(spec: InputSpec, built: Built) -> Any:
    length = spec.decoder_length()
    vocab = int(spec.find_in("decoder", "vocab_size", default=0) or spec.vocab())
    ids = spec.randint(vocab, (spec.batch, length), salt=4)
    ids = media.avoid_special_ids(spec, ids)
    start = spec.find("decoder_start_token_id", "pad_token_id", default=0)
    ids[:, 0] = int(start if isinstance(start, int) and 0 <= start < vocab else 0)
    return ids


def _is_encoder_decoder(spec: InputSpec, built: Built) -> bool:
    return spec.encoder_decoder


BUILDERS: Mapping[str, Builder] = {
    b.name: b
    for b in (
        Builder("pixel_values", "vision", media.pixel_values),
        Builder("image_grid_thw", "vision", grids.image_grid_thw, grids.wants_grid, known=True),
        Builder("image_sizes", "vision", media.image_sizes, media.wants_image_sizes, known=True),
        Builder(
            "aspect_ratio_ids", "vision", tiles.aspect_ratio_ids, tiles.wants_tiles, known=True
        ),
        Builder(
            "aspect_ratio_mask", "vision", tiles.aspect_ratio_mask, tiles.wants_tiles, known=True
        ),
        Builder("pixel_attention_mask", "vision", media.pixel_attention_mask, media.has_pixels),
        Builder("pixel_values_videos", "vision", media.pixel_values_videos, media.wants_video),
        Builder(
            "video_grid_thw", "vision", grids.video_grid_thw, grids.wants_video_grid, known=True
        ),
        Builder("qformer_input_ids", "text", media.qformer_input_ids, media.has_pixels),
        Builder(
            "qformer_attention_mask", "text", media.qformer_attention_mask, media.has_qformer_ids
        ),
        Builder("input_values", "audio", media.input_values),
        Builder("input_features", "audio", media.input_features),
        Builder(
            "feature_attention_mask", "audio", media.feature_attention_mask, media.has_features
        ),
        Builder("past_values", "series", series.past_values),
        Builder("freq", "series", series.frequency, series.wants_frequency),
        Builder("past_time_features", "series", series.past_time_features, series.has_tensor_past),
        Builder("past_observed_mask", "series", series.observed_mask, series.has_tensor_past),
        Builder(
            "static_categorical_features",
            "series",
            series.static_categorical,
            series.wants_static_categorical,
        ),
        Builder("static_real_features", "series", series.static_real, series.wants_static_real),
        Builder("future_values", "series", series.future_values, series.wants_future),
        Builder(
            "future_time_features",
            "series",
            series.future_time_features,
            series.wants_future_features,
        ),
        Builder("input_ids", "text", _token_ids, known=True, prepare=media.placeholder_counts),
        Builder("attention_mask", "text", _attention_mask, _wants_mask),
        Builder("token_type_ids", "text", lambda s, b: _zeros_like_ids(b), _wants_token_types),
        Builder(
            "cross_attention_mask",
            "vision",
            tiles.cross_attention_mask,
            tiles.wants_cross_mask,
            known=True,
        ),
        Builder(
            "mm_token_type_ids",
            "text",
            grids.mm_token_type_ids,
            grids.wants_token_types,
            known=True,
        ),
        Builder(
            "position_ids", "text", grids.rope_positions, grids.wants_rope_positions, known=True
        ),
        Builder("bbox", "layout", _bbox, _wants_bbox),
        Builder("decoder_input_ids", "text", _decoder_ids, _is_encoder_decoder),
        # Labels are drawn by us, not data: losses read them (CTC's masked_select of the
        # non-blank targets, Wav2Vec2's `labels.max() < vocab_size` check).
        Builder("labels", "label", labels.labels, labels.wants_labels, train_only=True, known=True),
        # Dual encoders (CLIP, SigLIP) compute their contrastive loss only when asked.
        Builder("return_loss", "flag", lambda s, b: True, train_only=True),
        Builder(
            "start_positions", "label", labels.span_start, labels.is_qa, train_only=True, known=True
        ),
        Builder(
            "end_positions", "label", labels.span_end, labels.is_qa, train_only=True, known=True
        ),
    )
}


def _ones_like_ids(built: Built) -> Any:
    import torch

    return torch.ones_like(built["input_ids"])


def _zeros_like_ids(built: Built) -> Any:
    import torch

    return torch.zeros_like(built["input_ids"])
