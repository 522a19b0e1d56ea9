"""Input layouts read from the config, per class of model: video frames, spectrograms,
dynamic-resolution patches with their grid and image tokens, time series, detection
targets; and optional dependencies recognised as such."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.worker.dependencies import missing_dependency
from kerneltracer.worker.frameworks.huggingface.zoo import by_name
from kerneltracer.worker.inputs import InputSpec, build_inputs

SEQ = 12


def _spec(zoo_dir: Path, name: str, train: bool = False) -> tuple[InputSpec, Any]:
    import torch
    import transformers

    entry = by_name()[name]
    config = transformers.AutoConfig.from_pretrained(zoo_dir / entry.name)
    model = getattr(transformers, entry.arch).from_pretrained(zoo_dir / entry.name)
    model.train(train)
    spec = InputSpec.of(
        model,
        config=config,
        tokenizer=None,
        batch=2,
        seq_len=SEQ,
        device="cpu",
        float_dtype=torch.float32,
        train=train,
    )
    return spec, config


def test_video_pixels_have_the_configs_frames(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "videomae")
    pixels = build_inputs(spec)["pixel_values"]
    side = config.image_size
    assert list(pixels.shape) == [2, config.num_frames, config.num_channels, side, side]


def test_spectrogram_is_max_length_by_mel_bins(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "ast")
    values = build_inputs(spec)["input_values"]
    assert list(values.shape) == [2, config.max_length, config.num_mel_bins]


def test_dynamic_resolution_image_has_its_grid_and_one_token_per_merged_patch(
    zoo_dir: Path,
) -> None:
    spec, config = _spec(zoo_dir, "qwen2-vl")
    inputs = build_inputs(spec)
    vision = config.vision_config
    grid = inputs["image_grid_thw"]
    assert grid.tolist() == [grid[0].tolist()] * 2
    t, h, w = grid[0].tolist()
    row = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
    assert list(inputs["pixel_values"].shape) == [2 * t * h * w, row]
    ids = inputs["input_ids"][0]
    image = int((ids == config.image_token_id).sum())
    assert image == t * h * w // vision.spatial_merge_size**2
    # A clip beside the image, so the video tower runs too: two temporal patches on the
    # image's grid, one token per merged patch.
    vt, vh, vw = inputs["video_grid_thw"][0].tolist()
    assert (vt, vh, vw) == (2, h, w)
    assert list(inputs["pixel_values_videos"].shape) == [2 * vt * vh * vw, row]
    video = int((ids == config.video_token_id).sum())
    assert video == vt * vh * vw // vision.spatial_merge_size**2
    # Framed as the processor frames them: start, the image's tokens, end, the same for the
    # video, then the text.
    assert int(ids[0]) == config.vision_start_token_id
    assert int(ids[image + 1]) == config.vision_end_token_id
    assert int(ids[image + 2]) == config.vision_start_token_id
    assert int(ids[image + video + 3]) == config.vision_end_token_id
    assert inputs["input_ids"].shape[1] == image + video + 4 + SEQ
    types = inputs["mm_token_type_ids"][0]
    assert types.tolist().count(1) == image and types.tolist().count(2) == video


def test_text_stays_within_the_text_towers_positions(zoo_dir: Path) -> None:
    import torch
    import transformers

    entry = by_name()["owlvit"]
    model = getattr(transformers, entry.arch).from_pretrained(zoo_dir / entry.name)
    spec = InputSpec.of(
        model,
        config=model.config,
        tokenizer=None,
        batch=2,
        seq_len=32,
        device="cpu",
        float_dtype=torch.float32,
        train=False,
    )
    inputs = build_inputs(spec)
    positions = model.config.text_config.max_position_embeddings
    assert positions < 32 and list(inputs["input_ids"].shape) == [2, positions]
    with torch.no_grad():
        model(**inputs)


def test_matting_image_has_the_backbones_channels(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "vitmatte")
    pixels = build_inputs(spec)["pixel_values"]
    assert config.backbone_config.num_channels == 4  # the image and its trimap
    assert pixels.shape[1] == 4


def test_tiled_image_is_read_through_cross_attention(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "mllama")
    inputs = build_inputs(spec)
    vision = config.vision_config
    tiles = vision.max_num_tiles
    side = vision.image_size
    assert list(inputs["pixel_values"].shape) == [2, 1, tiles, 3, side, side]
    # 1-based id of the supported ratio that uses every tile
    ratio = vision.supported_aspect_ratios[int(inputs["aspect_ratio_ids"][0, 0]) - 1]
    assert ratio[0] * ratio[1] == tiles
    assert inputs["aspect_ratio_mask"].tolist() == [[[1] * tiles]] * 2
    # One placeholder for the image, then the text; every token sees every tile.
    ids = inputs["input_ids"]
    assert ids.shape[1] == SEQ + 1 and int((ids == config.image_token_index).sum()) == 2
    assert list(inputs["cross_attention_mask"].shape) == [2, SEQ + 1, 1, tiles]


def test_raw_patches_are_embedded_by_the_decoder(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "fuyu")
    inputs = build_inputs(spec)
    patches = (config.image_size // config.patch_size) ** 2
    row = config.patch_size**2 * config.num_channels
    assert list(inputs["pixel_values"].shape) == [2, patches, row]
    assert int((inputs["input_ids"][0] == config.image_token_id).sum()) == patches


def test_clip_given_as_pixel_values_gets_video_placeholders(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "instructblip-video")
    inputs = build_inputs(spec)
    frames = inputs["pixel_values"].shape[1]
    assert inputs["pixel_values"].dim() == 5 and frames > 1
    video = int((inputs["input_ids"][0] == config.video_token_index).sum())
    assert video == config.num_query_tokens * frames  # the Q-Former's queries per frame


def test_time_series_windows_come_from_the_config(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "time-series-transformer")
    inputs = build_inputs(spec)
    past = config.context_length + max(config.lags_sequence)
    assert list(inputs["past_values"].shape) == [2, past]  # univariate: 2-D
    assert list(inputs["past_time_features"].shape) == [2, past, config.num_time_features]
    assert inputs["past_observed_mask"].dtype.is_floating_point is False
    # An encoder-decoder forecaster reads the future in its decoder, eval included.
    assert list(inputs["future_values"].shape) == [2, config.prediction_length]
    assert list(inputs["future_time_features"].shape) == [
        2,
        config.prediction_length,
        config.num_time_features,
    ]

    spec, config = _spec(zoo_dir, "patchtst")
    inputs = build_inputs(spec)
    assert list(inputs["past_values"].shape) == [
        2,
        config.context_length,
        config.num_input_channels,
    ]
    assert "future_values" not in inputs  # the target: train mode only
    spec, config = _spec(zoo_dir, "patchtst", train=True)
    future = build_inputs(spec)["future_values"]
    assert list(future.shape) == [2, config.prediction_length, config.num_input_channels]


def test_detection_targets_are_per_image_classes_and_boxes(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "detr", train=True)
    targets = build_inputs(spec)["labels"]
    assert len(targets) == 2
    for target in targets:
        boxes = target["boxes"]
        assert boxes.shape[1] == 4 and bool(((boxes > 0) & (boxes < 1)).all())
        assert int(target["class_labels"].max()) < config.num_labels


def test_missing_packages_are_named_with_their_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # transformers' requires_backends wording (DETR's matcher without scipy)
    text = (
        "\nHungarianMatcher requires the scipy library but it was not found in your "
        "environment. You can install it with pip:\n`pip install scipy`."
    )
    found = missing_dependency(ImportError(text))
    assert found is not None and found.package == "scipy"
    assert found.install.endswith("-m pip install scipy")
    # several backends missing at once are named at once (pillow and timm for a timm model)
    text = (
        "\nTimmWrapperModel requires the PIL library but it was not found in your "
        "environment. You can install it with pip:\n`pip install pillow`. Please note.\n"
        "\nTimmWrapperModel requires the timm library but it was not found in your "
        "environment. You can install it with pip:\n`pip install timm`. Please note.\n"
    )
    found = missing_dependency(ImportError(text))
    assert found is not None and (found.package, found.module) == ("pillow timm", "PIL, timm")
    assert found.install.endswith("-m pip install pillow timm")
    assert found.reason("TimmWrapperModel").startswith(
        "missing dependency: PIL, timm are not installed (TimmWrapperModel)"
    )
    # a tokenizer raising its own ImportError while importing sacremoses failed
    try:
        try:
            import kt_absent_package  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            # implicit chaining, as the XLM tokenizer raises it
            raise ImportError("You need to install kt_absent_package to use X.")  # noqa: B904
    except ImportError as exc:
        found = missing_dependency(exc)
    assert found is not None and found.module == "kt_absent_package"
    # import names whose distribution is named otherwise (as if sklearn were absent here)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    found = missing_dependency(ModuleNotFoundError("x", name="sklearn.metrics"))
    assert found is not None and found.package == "scikit-learn"
    monkeypatch.undo()
    # not missing dependencies: a submodule missing from an installed package, other errors
    assert missing_dependency(ModuleNotFoundError("x", name="json.nothing_here")) is None
    assert missing_dependency(ImportError("cannot import name 'x' from 'y'")) is None
    assert missing_dependency(ValueError("requires the scipy library but it was not found")) is None


def test_conformer_features_take_mel_bins_from_the_encoder_sub_config(zoo_dir: Path) -> None:
    # Parakeet: num_mel_bins lives in encoder_config; frames first, seq_len after the stem's
    # subsampling, with the frames' mask its CTC loss reads.
    spec, config = _spec(zoo_dir, "parakeet", train=True)
    inputs = build_inputs(spec)
    encoder = config.encoder_config
    frames = SEQ * encoder.subsampling_factor
    assert list(inputs["input_features"].shape) == [2, frames, encoder.num_mel_bins]
    assert list(inputs["attention_mask"].shape) == [2, frames]
    assert int(inputs["labels"].max()) < config.vocab_size
    assert not bool((inputs["labels"] == config.pad_token_id).any())  # never the blank


def test_audio_language_prompt_has_one_placeholder_per_audio_feature(zoo_dir: Path) -> None:
    import torch

    spec, config = _spec(zoo_dir, "qwen2-audio")
    inputs = build_inputs(spec)
    audio = config.audio_config
    assert list(inputs["input_features"].shape) == [
        2,
        audio.num_mel_bins,
        2 * audio.max_source_positions,
    ]
    assert list(inputs["feature_attention_mask"].shape) == [2, 2 * audio.max_source_positions]
    placeholders = int((inputs["input_ids"][0] == config.audio_token_id).sum())
    with torch.no_grad():  # the tower's own count: conv stem and pooling each halve
        tower = spec.model.model.audio_tower(inputs["input_features"])
    assert placeholders == tower.last_hidden_state.shape[1] > 0
    assert inputs["input_ids"].shape[1] == placeholders + SEQ


def test_speech_features_from_the_feature_projection_and_codec_frames(zoo_dir: Path) -> None:
    spec, config = _spec(zoo_dir, "seamless-m4t")
    features = build_inputs(spec)["input_features"]
    assert list(features.shape) == [2, 4 * SEQ, config.feature_projection_input_dim]
    spec, config = _spec(zoo_dir, "mimi")
    values = build_inputs(spec)["input_values"]
    # a Mimi frame is sampling_rate / frame_rate samples (its conv frames downsampled again)
    assert list(values.shape) == [2, 1, SEQ * round(config.sampling_rate / config.frame_rate)]


def test_a_speech_config_without_feature_sizes_names_where_it_looked() -> None:
    import inspect

    import torch
    import transformers

    from kerneltracer.errors import UnsupportedError

    class Odd:
        def forward(self, input_features: Any) -> None:
            return None

    config = transformers.PretrainedConfig()
    config.encoder_config = transformers.PretrainedConfig()
    spec = InputSpec(
        model=Odd(),
        config=config,
        tokenizer=None,
        batch=1,
        seq_len=4,
        device="cpu",
        float_dtype=torch.float32,
        train=False,
        params=dict(inspect.signature(Odd.forward).parameters),
    )
    with pytest.raises(UnsupportedError) as info:
        build_inputs(spec)
    message = str(info.value)
    assert "Odd.forward argument 'input_features' has no builder" in message
    assert "feature_projection_input_dim" in message
    assert message.endswith("is set in config, encoder_config")
