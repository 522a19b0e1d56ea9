"""Whose failure a step's exception is: our inputs', the library's, or (else) the model's.

A model that raises on the inputs we built reads as a broken model when it is our input
builder's gap: an argument the forward takes that no builder made (the model finds it
``None``), a built tensor whose layout the model does not take, a train batch too small for
BatchNorm. Those end ``unsupported``, naming the argument or the setting to change. An
error raised inside transformers on code that reads none of the inputs (a name it never
defined, a keyword its own call does not take) is the library's: still ``failed``, but said
so, with the frame.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from typing import Any

from kerneltracer.core.rootcause import exception_line
from kerneltracer.errors import KernelTracerError, LibraryError, UnsupportedError
from kerneltracer.worker.inputs.spec import InputSpec

# Where a library's own code lives: the frames an explanation may point at.
_LIBRARIES = ("transformers",)
# torch's words when BatchNorm gets one value per channel in train mode.
_BATCHNORM = re.compile(
    r"Expected more than 1 value per channel when training, got input "
    r"size (?P<size>torch\.Size\(\[[^\]]*\]\))"
)
# Errors that mean code and not data is wrong: a name never bound, a call that does not
# match the callee.
_CODE_ERRORS = (NameError, UnboundLocalError)
_CALL_MISMATCH = re.compile(
    r"unexpected keyword argument|positional arguments? but \d+ "
    r"(?:were|was) given|missing \d+ required"
)
# Forward arguments that switch outputs on or off; never data a builder should make.
_FLAGS = frozenset(
    {
        "self",
        "kwargs",
        "args",
        "return_dict",
        "output_attentions",
        "output_hidden_states",
        "use_cache",
    }
)


@dataclass(frozen=True)
class _Frame:
    where: str  # file:line in function (the file from the library's package down)
    line: str
    local_values: dict[str, Any]


def explain(exc: BaseException, spec: InputSpec | None, built: dict[str, Any]) -> Exception | None:
    """An error that says whose ``exc`` is, or None to let it stand as the model's."""
    if spec is None or isinstance(exc, KernelTracerError) or not isinstance(exc, Exception):
        return None
    small = _batch_too_small(exc, spec)
    if small is not None:
        return UnsupportedError(small)
    frames = _library_frames(exc)
    if not frames:
        return None
    line = exception_line(exc)
    missing = _unbuilt_argument(exc, spec, built, frames)
    if missing is not None:
        name, where = missing
        return UnsupportedError(
            f"{spec.class_name}.forward argument {name!r} was not built and the model needs "
            f"it ({line}, at {where}): no input builder makes it for this config"
        )
    if isinstance(exc, ValueError | RuntimeError | IndexError | TypeError):
        misfit = _misfit_input(built, frames[0])
        if misfit is not None:
            return UnsupportedError(
                f"the input {misfit!r} built for {spec.class_name} ({_shape(built[misfit])}) "
                f"does not fit it ({line}, at {frames[0].where}): its builder does not "
                "follow this config"
            )
    if (
        isinstance(exc, _CODE_ERRORS)
        or (isinstance(exc, TypeError) and _CALL_MISMATCH.search(str(exc)))
        or (isinstance(exc, AttributeError) and "'NoneType'" not in str(exc))
    ):
        return LibraryError(
            f"{_library_version()} raised {line} at {frames[0].where}, on code that reads none "
            "of the inputs built: a bug of the library, not of the model's config or inputs"
        )
    return None


def _batch_too_small(exc: BaseException, spec: InputSpec) -> str | None:
    found = _BATCHNORM.search(str(exc))
    if found is None or not spec.train:
        return None
    return (
        f"train mode: a BatchNorm layer of {spec.class_name} gets one value per channel at "
        f"batch_size {spec.batch} (its input is {found.group('size')}: the feature map is "
        "1x1 by then) and batch statistics need two; set batch_size: 2 or more"
    )


def _library_frames(exc: BaseException) -> list[_Frame]:
    """The library's frames of the traceback, innermost first."""
    out: list[_Frame] = []
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] in _LIBRARIES:
            code = frame.f_code
            text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            short = "/".join(code.co_filename.split("/")[-3:])
            out.append(
                _Frame(f"{short}:{tb.tb_lineno} in {code.co_name}", text, dict(frame.f_locals))
            )
        tb = tb.tb_next
    return out[::-1]


def _unbuilt_argument(
    exc: BaseException, spec: InputSpec, built: dict[str, Any], frames: list[_Frame]
) -> tuple[str, str] | None:
    unbuilt = [n for n in spec.params if n not in built and n not in _FLAGS]
    text = str(exc)
    for name in unbuilt:
        # "get_image_features() missing 1 required positional argument: 'image_sizes'"
        if isinstance(exc, TypeError) and f"'{name}'" in text:
            return name, frames[0].where
    if "NoneType" not in text and "None" not in text.split():
        # Only an error about a None can be an argument left None (a shape error on a line
        # that also passes an optional argument is not).
        return None
    for frame in frames:
        for name in unbuilt:
            # The failing line reads the argument, and the model holds None for it.
            if re.search(rf"\b{re.escape(name)}\b", frame.line) and (
                name in frame.local_values and frame.local_values[name] is None
            ):
                return name, frame.where
    return None


def _misfit_input(built: dict[str, Any], frame: _Frame) -> str | None:
    """The built input the failing line reads under its own name, if any."""
    for name, value in built.items():
        if re.search(rf"\b{re.escape(name)}\b", frame.line) and (
            frame.local_values.get(name) is value
        ):
            return name
    return None


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"shape {list(shape)}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__


def _library_version() -> str:
    import transformers

    return f"transformers {transformers.__version__}"
