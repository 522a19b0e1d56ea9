"""Time-series forecasting inputs: a window of past values and what the config says goes
with it (time features, the observed mask, static features), and the future to predict.

Sizes come from the config only, so every forecaster with these forward arguments works:
GluonTS-style models (TimeSeriesTransformer, Informer, Autoformer) look back
``context_length + max(lags_sequence)`` steps of ``input_size`` variates (a univariate
series is 2-D), patch models (PatchTST, PatchTSMixer) ``context_length`` steps of
``num_input_channels`` channels.
"""

from __future__ import annotations

from typing import Any

from kerneltracer.worker.inputs.spec import InputSpec

Built = dict[str, Any]


def _channels(spec: InputSpec) -> tuple[int, ...]:
    gluon = spec.find("input_size")
    if isinstance(gluon, int):
        return () if gluon == 1 else (gluon,)
    return (int(spec.find("num_input_channels", default=1) or 1),)


def _past_length(spec: InputSpec) -> int:
    context = spec.find("context_length")
    context = int(context) if isinstance(context, int) else spec.seq_len
    lags = spec.find("lags_sequence") or [0]
    return context + max(int(v) for v in lags)


def _horizon(spec: InputSpec) -> int:
    value = spec.find("prediction_length", "horizon_length")
    return int(value) if isinstance(value, int) else max(1, spec.seq_len // 4)


def past_values(spec: InputSpec, built: Built) -> Any:
    if spec.is_sequence("past_values"):
        # Foundation forecasters (TimesFM) take one 1-D series per sample, of any length:
        # whole patches, each sample a patch shorter than the one before (as real batches
        # of series are ragged), never shorter than one patch.
        patch = int(spec.find("patch_length", default=1) or 1)
        longest = max(patch, _past_length(spec) // patch * patch)
        return [
            spec.randn((max(patch, longest - i * patch),), salt=40 + i) for i in range(spec.batch)
        ]
    return spec.randn((spec.batch, _past_length(spec), *_channels(spec)), salt=40)


def frequency(spec: InputSpec, built: Built) -> Any:
    """The frequency class of each series (TimesFM: 0 high, 1 medium, 2 low)."""
    import torch

    return torch.zeros((spec.batch,), dtype=torch.long)


def wants_frequency(spec: InputSpec, built: Built) -> bool:
    return _has_past(spec, built) and spec.find("freq_size") is not None


def _time_features(spec: InputSpec, length: int, salt: int) -> Any:
    features = int(spec.find("num_time_features", default=0) or 0)
    return spec.randn((spec.batch, length, features), salt=salt)


def past_time_features(spec: InputSpec, built: Built) -> Any:
    return _time_features(spec, _past_length(spec), 41)


def has_tensor_past(spec: InputSpec, built: Built) -> bool:
    """A window of past values in one tensor (time features and masks go with it)."""
    return _has_past(spec, built) and not isinstance(built["past_values"], list)


def observed_mask(spec: InputSpec, built: Built) -> Any:
    import torch

    return torch.ones_like(built["past_values"], dtype=torch.bool)


def future_values(spec: InputSpec, built: Built) -> Any:
    if isinstance(built["past_values"], list):
        return spec.randn((spec.batch, _horizon(spec)), salt=42)
    return spec.randn((spec.batch, _horizon(spec), *_channels(spec)), salt=42)


def future_time_features(spec: InputSpec, built: Built) -> Any:
    return _time_features(spec, _horizon(spec), 43)


def static_categorical(spec: InputSpec, built: Built) -> Any:
    count = int(spec.find("num_static_categorical_features", default=0) or 0)
    cardinality = spec.find("cardinality") or [1]
    return spec.randint(min(int(c) for c in cardinality), (spec.batch, count), salt=44)


def static_real(spec: InputSpec, built: Built) -> Any:
    count = int(spec.find("num_static_real_features", default=0) or 0)
    return spec.randn((spec.batch, count), salt=45)


def _has_past(spec: InputSpec, built: Built) -> bool:
    return "past_values" in built


def wants_future(spec: InputSpec, built: Built) -> bool:
    """The future is the target: always for encoder-decoders (their decoder reads it, as a
    seq2seq decoder reads its ids), in train mode for the others (their loss)."""
    return "past_values" in built and (spec.encoder_decoder or spec.train)


def wants_future_features(spec: InputSpec, built: Built) -> bool:
    return "future_values" in built and spec.find("num_time_features") is not None


def wants_static_categorical(spec: InputSpec, built: Built) -> bool:
    return (
        _has_past(spec, built)
        and int(spec.find("num_static_categorical_features", default=0) or 0) > 0
    )


def wants_static_real(spec: InputSpec, built: Built) -> bool:
    return _has_past(spec, built) and int(spec.find("num_static_real_features", default=0) or 0) > 0
