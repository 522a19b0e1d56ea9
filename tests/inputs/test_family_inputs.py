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
    spec = InputSpec.of(model, config=config, tokenizer=None, batch=2, seq_len=SEQ,
                        device="cpu", float_dtype=torch.float32, train=train)
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
    # Framed as the processor frames it: start, the image's tokens, end, then the text.
    assert int(ids[0]) == config.vision_start_token_id
    assert int(ids[image + 1]) == config.vision_end_token_id
    assert inputs["input_ids"].shape[1] == image + 2 + SEQ
    types = inputs["mm_token_type_ids"][0]
    assert int(types.sum()) == image and types.shape == ids.shape


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
        2, config.prediction_length, config.num_time_features]

    spec, config = _spec(zoo_dir, "patchtst")
    inputs = build_inputs(spec)
    assert list(inputs["past_values"].shape) == [2, config.context_length,
                                                 config.num_input_channels]
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
    text = ("\nHungarianMatcher requires the scipy library but it was not found in your "
            "environment. You can install it with pip:\n`pip install scipy`.")
    found = missing_dependency(ImportError(text))
    assert found is not None and found.package == "scipy"
    assert found.install.endswith("-m pip install scipy")
    # several backends missing at once are named at once (pillow and timm for a timm model)
    text = ("\nTimmWrapperModel requires the PIL library but it was not found in your "
            "environment. You can install it with pip:\n`pip install pillow`. Please note.\n"
            "\nTimmWrapperModel requires the timm library but it was not found in your "
            "environment. You can install it with pip:\n`pip install timm`. Please note.\n")
    found = missing_dependency(ImportError(text))
    assert found is not None and (found.package, found.module) == ("pillow timm", "PIL, timm")
    assert found.install.endswith("-m pip install pillow timm")
    assert found.reason("TimmWrapperModel").startswith(
        "missing dependency: PIL, timm are not installed (TimmWrapperModel)")
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
    assert missing_dependency(ValueError("requires the scipy library but it was not found")) \
        is None


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
    assert list(inputs["input_features"].shape) == [2, audio.num_mel_bins,
                                                     2 * audio.max_source_positions]
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
    spec = InputSpec(model=Odd(), config=config, tokenizer=None, batch=1, seq_len=4,
                     device="cpu", float_dtype=torch.float32, train=False,
                     params=dict(inspect.signature(Odd.forward).parameters))
    with pytest.raises(UnsupportedError) as info:
        build_inputs(spec)
    message = str(info.value)
    assert "Odd.forward argument 'input_features' has no builder" in message
    assert "feature_projection_input_dim" in message
    assert message.endswith("is set in config, encoder_config")
