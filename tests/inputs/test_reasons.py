"""Whose failure a step's error is: our inputs' gap (``unsupported``, naming the argument or
the setting), the library's bug (``failed``, said so, with its frame), or the model's.

The model code here is compiled as a module of ``transformers`` (its ``__name__`` is what
the explanation reads), so each reason class is shown on a forward of a few lines."""

from __future__ import annotations

from typing import Any

import pytest

from kerneltracer.core.status import JobStatus
from kerneltracer.errors import LibraryError, UnsupportedError
from kerneltracer.worker.failure import classify_exception
from kerneltracer.worker.inputs import InputSpec, build_workload, explain

_SOURCE = """
class Callable:
    def __call__(self, **kwargs):
        return self.forward(**kwargs)


class Model(Callable):
    def forward(self, input_ids, sensor_mask=None, return_dict=None):
        return sensor_mask.to(input_ids.device)


class Codec(Callable):
    def forward(self, input_values, padding_mask=None):
        _, channels, length = input_values.shape
        return input_values


class Broken(Callable):
    def forward(self, input_ids):
        return rotary_helper(input_ids)


class Quantizer(Callable):
    def forward(self, input_ids, num_quantizers=None):
        return _project(input_ids, num_quantizers)


def _project(ids, count):
    raise RuntimeError("X1 and X2 must have the same number of columns. X1: 256 X2: 32")
"""


_FILE = "/lib/transformers/models/odd/modeling_odd.py"


def _library_module() -> dict[str, Any]:
    import linecache

    # Its source lines, as a file on disk would give them to a traceback.
    linecache.cache[_FILE] = (len(_SOURCE), None, _SOURCE.splitlines(True), _FILE)
    scope: dict[str, Any] = {"__name__": "transformers.models.odd.modeling_odd"}
    exec(compile(_SOURCE, _FILE, "exec"), scope)
    return scope


def _spec(model: Any, batch: int = 1, train: bool = False) -> InputSpec:
    import torch

    config = type("Config", (), {"vocab_size": 10})()
    return InputSpec.of(
        model,
        config=config,
        tokenizer=None,
        batch=batch,
        seq_len=4,
        device="cpu",
        float_dtype=torch.float32,
        train=train,
    )


def _failure(model: Any, spec: InputSpec) -> Exception:
    workload = build_workload(spec, "prefill", 1)
    with pytest.raises(Exception) as info:
        workload.run(model)
    explained = explain(info.value, spec, workload.inputs())
    assert explained is not None, info.value
    try:
        raise explained from info.value
    except Exception as exc:  # the chain a worker classifies
        return exc


def test_missing_forward_argument_is_unsupported_naming_it() -> None:
    model = _library_module()["Model"]()
    exc = _failure(model, _spec(model))
    assert isinstance(exc, UnsupportedError)
    status, error = classify_exception(exc, "warmup")
    assert status is JobStatus.UNSUPPORTED
    assert "Model.forward argument 'sensor_mask' was not built" in error.root_cause
    assert "modeling_odd.py:9 in forward" in error.root_cause
    assert "\n" not in error.root_cause


def test_input_the_model_cannot_take_is_unsupported_naming_it() -> None:
    model = _library_module()["Codec"]()
    exc = _failure(model, _spec(model))
    status, error = classify_exception(exc, "warmup")
    assert status is JobStatus.UNSUPPORTED
    assert "the input 'input_values' built for Codec (shape [1, 1280])" in error.root_cause
    assert "not enough values to unpack" in error.root_cause


def test_error_inside_the_library_is_said_to_be_its_bug_with_the_frame() -> None:
    model = _library_module()["Broken"]()
    exc = _failure(model, _spec(model))
    assert isinstance(exc, LibraryError)
    status, error = classify_exception(exc, "warmup")
    assert status is JobStatus.FAILED
    assert "raised NameError: name 'rotary_helper' is not defined" in error.root_cause
    assert "modeling_odd.py:20 in Broken" not in error.root_cause
    assert "models/odd/modeling_odd.py:20 in forward" in error.root_cause
    assert "a bug of the library" in error.root_cause
    assert error.location is not None and "modeling_odd.py:20" in error.location


def test_batchnorm_at_batch_one_in_train_names_batch_size() -> None:
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.norm = torch.nn.BatchNorm2d(4)

        def forward(self, pixel_values: Any) -> Any:
            pooled = torch.nn.functional.adaptive_avg_pool2d(self.conv(pixel_values), 1)
            return self.norm(pooled)

    model = Pooled().train()
    exc = _failure(model, _spec(model, batch=1, train=True))
    status, error = classify_exception(exc, "warmup")
    assert status is JobStatus.UNSUPPORTED
    assert "batch_size 1" in error.root_cause and "set batch_size: 2" in error.root_cause
    # At batch 2 the same model trains.
    build_workload(_spec(model, batch=2, train=True), "prefill", 1).run(model).sum().backward()


def test_a_plain_model_error_is_left_to_stand() -> None:
    class Plain:
        def __call__(self, **kwargs: Any) -> Any:
            return self.forward(**kwargs)

        def forward(self, input_ids: Any) -> Any:
            raise ValueError("the model's own complaint")

    model = Plain()
    spec = _spec(model)
    with pytest.raises(ValueError) as info:
        build_workload(spec, "prefill", 1).run(model)
    assert explain(info.value, spec, {}) is None


def test_a_shape_error_on_a_line_passing_an_unbuilt_argument_does_not_blame_it() -> None:
    # Mimi's encode(embeddings, num_quantizers) raising on its own weights' sizes: the
    # optional argument left None is not what failed.
    model = _library_module()["Quantizer"]()
    spec = _spec(model)
    with pytest.raises(RuntimeError) as info:
        build_workload(spec, "prefill", 1).run(model)
    explained = explain(info.value, spec, build_workload(spec, "prefill", 1).inputs())
    assert not isinstance(explained, UnsupportedError)
