"""Which graph nodes are safe to deduplicate or recompute, decided from names alone.

Torch-free on purpose: the same rules classify live ``torch.fx`` graphs (through their node
table, see :mod:`kerneltracer.fx.nodetable`) and the node tables the print_fx tracer wrote on
another machine. A node is one of:

* ``PURE``: same inputs give the same output and nothing else changes;
* ``RANDOM``: draws from the RNG (dropout, rand*): never merged, but recomputable because
  ``torch.utils.checkpoint`` restores the RNG state;
* ``CHECK``: an assertion: no value and no effect unless it fails; never merged or removed,
  but harmless to run twice;
* ``MUTATING``: writes into one of its inputs (``add_``, ``out=``, ``setitem``, ``inplace=True``);
* ``STATEFUL``: updates hidden state (BatchNorm in train mode) or has an unknown effect
  (user modules, custom ops, print, asserts). Unknown means not pure: the rules whitelist
  namespaces known to be functional (aten, prims, torch, torch.nn.functional, operator) and
  then blacklist the impure names inside them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Effect(Enum):
    PURE = "pure"
    RANDOM = "random"
    CHECK = "check"
    MUTATING = "mutating"
    STATEFUL = "stateful"


@dataclass(frozen=True)
class ModuleInfo:
    """What a ``call_module`` node's module is: its class's qualified name and flags."""

    type: str
    training: bool = False
    inplace: bool = False
    tracks_running_stats: bool = False


_FUNCTIONAL_PREFIXES = (
    "torch.ops.aten.",
    "torch.ops.prims.",
    "torch.nn.functional.",
    "torch._C._nn.",
    "torch._C._linalg.",
    "torch._C._fft.",
    "torch._C._special.",
    "torch.functional.",
    "torch.Tensor.",
    "torch.",
    "_operator.",
    "operator.",
)

# Names (after the namespace, before an aten overload) that draw random numbers.
_RANDOM = re.compile(
    r"^(rand|randn|randint|randperm|bernoulli|multinomial|normal|poisson|uniform|exponential"
    r"|geometric|cauchy|log_normal|rrelu|gumbel_softmax|seed|manual_seed|random)"
    r"(_like|_with_noise)?_?$|dropout|philox"
)
# Uninitialised allocations: merging two would alias buffers meant to be filled separately.
_ALLOCATIONS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})
# Known side effects or hidden state in otherwise functional namespaces.
_CHECKS = frozenset(
    {
        "_assert",
        "_assert_async",
        "_assert_scalar",
        "_functional_assert_async",
        "_functional_assert_scalar",
        "sym_constrain_range",
        "sym_constrain_range_for_size",
        "_assert_tensor_metadata",
        "_check_is_size",
    }
)
_SIDE_EFFECTS = frozenset(
    {
        "_set_grad_enabled",
        "set_grad_enabled",
        "_enter_autocast",
        "_exit_autocast",
        "_record_function_enter",
        "_record_function_enter_new",
        "_record_function_exit",
        "instance_norm",
        "print",
        "backward",
        "register_hook",
        "retain_grad",
        "requires_grad_",
        "setitem",
        "__setitem__",
        "_print",
        "set_",
        "resize_",
        "record_stream",
    }
)
# BatchNorm-like ops whose ``training`` flag (positional index 5 in every spelling: torch,
# F and aten) makes them update the running statistics in place.
_BATCH_NORM = frozenset(
    {
        "batch_norm",
        "native_batch_norm",
        "_native_batch_norm_legit",
        "cudnn_batch_norm",
        "miopen_batch_norm",
    }
)
_BN_TRAINING_INDEX = 5
# Module classes that are pure functions of their input and parameters.
_PURE_MODULES = frozenset(
    {
        "Linear",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "ReLU",
        "ReLU6",
        "GELU",
        "SiLU",
        "Mish",
        "Sigmoid",
        "Tanh",
        "ELU",
        "LeakyReLU",
        "Hardswish",
        "Hardsigmoid",
        "Hardtanh",
        "Softplus",
        "Softmax",
        "LogSoftmax",
        "LayerNorm",
        "GroupNorm",
        "RMSNorm",
        "LocalResponseNorm",
        "Embedding",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "Flatten",
        "Unflatten",
        "Identity",
        "Upsample",
        "PixelShuffle",
        "ZeroPad2d",
        "ConstantPad2d",
    }
)
_DROPOUT_MODULES = frozenset(
    {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
)
_BN_MODULES = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"})


@dataclass(frozen=True)
class Classification:
    effect: Effect
    reason: str
    # Positions (int) or keyword names (str) of the arguments a MUTATING node writes into.
    mutates: tuple[int | str, ...] = ()

    @property
    def pure(self) -> bool:
        return self.effect is Effect.PURE


def op_name(target: str) -> tuple[str, str]:
    """Split a qualified target into (namespace, bare op name), dropping an aten overload."""
    for prefix in _FUNCTIONAL_PREFIXES:
        if target.startswith(prefix):
            rest = target[len(prefix) :]
            if prefix.startswith("torch.ops."):
                rest = rest.split(".")[0]
            return prefix, rest
    return "", target


def classify(
    op: str,
    target: str,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    module: ModuleInfo | None = None,
) -> Classification:
    """Classify one node; ``target`` is the qualified function name, method or module path."""
    kwargs = kwargs or {}
    if op == "call_function":
        namespace, name = op_name(target)
        if not namespace or "." in name:
            return Classification(Effect.STATEFUL, f"unknown function {target}")
        return _classify_name(name, args, kwargs, is_method=False)
    if op == "call_method":
        return _classify_name(target, args, kwargs, is_method=True)
    if op == "call_module":
        return _classify_module(target, module)
    if op == "get_attr":
        return Classification(Effect.PURE, "attribute read")
    return Classification(Effect.STATEFUL, f"{op} node")


def _classify_name(
    name: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, is_method: bool
) -> Classification:
    if name in _CHECKS:
        return Classification(Effect.CHECK, f"{name} only checks")
    if name in _SIDE_EFFECTS:
        if name in ("setitem", "__setitem__"):
            return Classification(Effect.MUTATING, f"{name} writes into its input", (0,))
        return Classification(Effect.STATEFUL, f"{name} has side effects")
    if _is_inplace(name):
        return Classification(Effect.MUTATING, f"{name} is in-place", (0,))
    if "out" in kwargs:
        return Classification(Effect.MUTATING, f"{name}(out=) writes into out", ("out",))
    if kwargs.get("inplace") is True:
        return Classification(Effect.MUTATING, f"{name}(inplace=True) writes into its input", (0,))
    if _RANDOM.search(name):
        return Classification(Effect.RANDOM, f"{name} draws random numbers")
    if name in _ALLOCATIONS:
        return Classification(Effect.STATEFUL, f"{name} allocates uninitialised memory")
    if name in _BATCH_NORM and _bn_training(args, kwargs):
        return Classification(Effect.STATEFUL, f"{name} in training mode updates running stats")
    if "scaled_dot_product" in name and _nonzero_dropout(kwargs):
        return Classification(Effect.RANDOM, f"{name} with dropout_p > 0 draws random numbers")
    if (
        not is_method
        and name.startswith("_")
        and not name.startswith("__")
        and name not in (_PRIVATE_PURE)
    ):
        return Classification(Effect.STATEFUL, f"private op {name} is not known to be pure")
    return Classification(Effect.PURE, f"{name} is functional")


_PRIVATE_PURE = frozenset(
    {
        "_softmax",
        "_log_softmax",
        "_to_copy",
        "_unsafe_view",
        "_reshape_alias",
        "_native_batch_norm_legit_no_training",
        "_native_batch_norm_legit_functional",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_cudnn_attention",
        "_unsafe_index",
        "_log_softmax_backward_data",
        "_softmax_backward_data",
    }
)


def _is_inplace(name: str) -> bool:
    # PyTorch convention: a trailing underscore mutates self; dunders and the operator
    # module's i-prefixed functions (iadd, imul...) are in-place too.
    if name.startswith("__") and name.endswith("__"):
        return name[2:-2] in _OPERATOR_INPLACE
    return name.endswith("_") or name in _OPERATOR_INPLACE


_OPERATOR_INPLACE = frozenset(
    {
        "iadd",
        "isub",
        "imul",
        "itruediv",
        "ifloordiv",
        "imod",
        "ipow",
        "iand",
        "ior",
        "ixor",
        "ilshift",
        "irshift",
        "imatmul",
    }
)


def _bn_training(args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
    if "training" in kwargs:
        return kwargs["training"] is not False
    if len(args) > _BN_TRAINING_INDEX:
        return args[_BN_TRAINING_INDEX] is not False
    # F.batch_norm defaults to training=False; aten spellings always pass the flag.
    return False


def _nonzero_dropout(kwargs: Mapping[str, Any]) -> bool:
    value = kwargs.get("dropout_p", 0.0)
    return not (isinstance(value, int | float) and value == 0)


def _classify_module(path: str, module: ModuleInfo | None) -> Classification:
    if module is None:
        return Classification(Effect.STATEFUL, f"module {path} of unknown type")
    cls = module.type.rsplit(".", 1)[-1]
    is_torch_nn = module.type.startswith("torch.nn.")
    if is_torch_nn and module.inplace:
        return Classification(Effect.MUTATING, f"{cls}(inplace=True) writes into its input", (0,))
    if is_torch_nn and cls in _BN_MODULES:
        if module.training and module.tracks_running_stats:
            return Classification(Effect.STATEFUL, f"{cls} in train mode updates running stats")
        return Classification(Effect.PURE, f"{cls} without a running-stats update")
    if is_torch_nn and cls in _DROPOUT_MODULES:
        if module.training:
            return Classification(Effect.RANDOM, f"{cls} in train mode draws random numbers")
        return Classification(Effect.PURE, f"{cls} in eval mode is the identity")
    if is_torch_nn and cls in _PURE_MODULES:
        return Classification(Effect.PURE, f"{cls} is functional")
    return Classification(Effect.STATEFUL, f"module {cls} is not known to be pure")
