"""Run configuration: YAML → pydantic, with errors that name the file, line and choices.

The schema and its parsing only: what a config plans (which tracers each model gets, its
job keys) and the checks that need the tracer registry are ``orchestrator.planning``'s, so
reading a config imports no tracer.

A five-line YAML works: everything has a default. Relative paths (``output_dir``, model
``path``, interpreters) are resolved against the config file's directory, so a config means
the same thing wherever the command is run from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kerneltracer.errors import ConfigError, InputFileError, InvalidModelIdError, choices
from kerneltracer.inputguard import SMALL_FILE, read_input_text

Framework = Literal["huggingface", "vllm"]
Mode = Literal["eval", "train"]
# What an eval step of a generating model runs: the prompt's forward, one decode step with
# a KV cache, or generate() for new_tokens tokens.
Phase = Literal["prefill", "decode", "generate"]
DType = Literal["auto", "float32", "float16", "bfloat16"]
# real: download the weights and run the model; fake: build it from its config on fake
# tensors (no weights, no storage), for op sequences, shapes and graphs at full size.
Weights = Literal["real", "fake"]

# Hub ids: "name" or "org/name" of [A-Za-z0-9._-], no "..", "--", leading dot or slash.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./:-]{1,64}")
# Longest model `name`: it names a directory, and error messages quote it.
MAX_NAME = 128
# libyaml's parser when PyYAML has it: a 5,000-job config parses ~20x faster.
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DuplicateKey(yaml.MarkedYAMLError):
    """A mapping that names a key twice (YAML would keep the last one silently)."""


class _Loader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                key_node, yaml.ScalarNode
            ):
                continue
            key = self.construct_object(key_node)
            if key in first:
                raise _DuplicateKey(
                    problem=f"duplicate key {key!r} (first at line "
                    f"{first[key].start_mark.line + 1}; YAML would keep only the last)",
                    problem_mark=key_node.start_mark,
                )
            first[key] = key_node
        return super().construct_mapping(node, deep=deep)


_LOADER = _Loader


class _Strict(BaseModel):
    # strict: YAML gives every type as written, so "yes" is no bool, true no int and 1e23 no
    # int; infinities and NaN are no timeout or memory size.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ParallelSettings(_Strict):
    """A parallel layout to simulate with ``weights: fake`` (every distinct rank role, one job)."""

    tp: int = Field(1, ge=1, le=4096, description="Tensor-parallel degree (heads split)")
    ep: int = Field(
        1,
        ge=1,
        le=4096,
        description="Expert-parallel degree: experts spread over ep ranks, each with its own "
        "batch (data-parallel attention); tokens exchanged all-to-all",
    )
    pp: int = Field(1, ge=1, le=4096, description="Pipeline stages (layers split)")
    dp: int = Field(1, ge=1, le=65536, description="Data-parallel degree")
    fsdp: bool = Field(False, description="Shard weights and gradients over dp (mode train)")
    tp_plan: dict[str, str] | None = Field(
        None,
        description="Tensor-parallel plan rules overriding the model's own, rule by rule, e.g. "
        "{'model.layers.*.mlp.down_proj': 'rowwise'}; 'sequence_parallel' rules (on norms) "
        "give sequence parallelism where the model allows it",
    )
    ep_plan: dict[str, str] | None = Field(None, description="Expert-parallel plan rules")
    fsdp_plan: dict[str, str] | None = Field(None, description="FSDP plan rules")
    layers: int | None = Field(
        None,
        ge=1,
        le=100000,
        description="Build this many layers (every layer of a stage runs the same ops: a "
        "few show a deep model's per-layer ops and collectives in seconds)",
    )

    @model_validator(mode="after")
    def _check_layout(self) -> ParallelSettings:
        from kerneltracer.core.parallelspec import ParallelSpec, layout_problem

        problem = layout_problem(ParallelSpec.from_json(self.model_dump()), "train")
        if problem is not None and "mode train" not in problem:
            raise ValueError(problem)
        return self

    def label(self) -> str:
        from kerneltracer.core.parallelspec import ParallelSpec

        return ParallelSpec.from_json(self.model_dump()).label()


class JobSettings(_Strict):
    """Per-job settings: given once in ``defaults``, overridable per model."""

    framework: Framework = "huggingface"
    mode: Mode = "eval"
    phase: Phase = Field(
        "prefill",
        description="prefill: one forward over seq_len tokens; decode: one token attending to a "
        "KV cache (key length seq_len); generate: generate() for new_tokens tokens",
    )
    new_tokens: int = Field(
        8, ge=1, le=4096, description="Tokens generate() makes (phase generate)"
    )
    device: str = Field("auto", description="auto, cpu, cuda or cuda:N")
    dtype: DType = Field(
        "auto",
        description="auto: fp32 on CPU, the model's half type on GPU; with weights fake, the "
        "config's torch_dtype",
    )
    weights: Weights = Field(
        "real",
        description="real: download and run the weights; fake: download only config and "
        "tokenizer files and trace the model at full size on fake tensors (shapes, ops and "
        "graphs; no measured times)",
    )
    tracers: list[str] | None = Field(
        None, description="Tracer names; default: every registered tracer for the framework"
    )
    batch_size: int = Field(1, ge=1, le=65536)
    seq_len: int = Field(32, ge=1, le=1 << 20)
    timeout_s: float = Field(900.0, gt=0, description="Wall-clock limit per job, download excluded")
    max_rss_gb: float | None = Field(
        None, gt=0, description="Memory ceiling on the RSS of the whole worker process tree"
    )
    trust_remote_code: bool = False
    tracer_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    parallel: ParallelSettings | None = Field(
        None,
        description="Parallel layout {tp, ep, pp, dp, fsdp, ...}; with weights fake, one job "
        "simulates every rank role (outputs in rank_<r>/, collectives per rank)",
    )

    @model_validator(mode="after")
    def _check_device(self) -> JobSettings:
        if not _DEVICE.match(self.device):
            raise ValueError(f"device {self.device!r} is not one of: auto, cpu, cuda, cuda:N")
        return self


class ModelEntry(_Strict):
    """One model: a hub ``id`` (optionally pinned by ``revision``) or a local ``path``."""

    id: str | None = None
    path: str | None = None
    revision: str | None = None
    name: str | None = Field(
        None,
        max_length=MAX_NAME,
        description="Display name; also names the model's run sub-dir",
    )
    framework: Framework | None = None
    mode: Mode | None = None
    phase: Phase | None = None
    new_tokens: int | None = Field(None, ge=1, le=4096)
    device: str | None = None
    dtype: DType | None = None
    weights: Weights | None = None
    tracers: list[str] | None = None
    batch_size: int | None = Field(None, ge=1, le=65536)
    seq_len: int | None = Field(None, ge=1, le=1 << 20)
    timeout_s: float | None = Field(None, gt=0)
    max_rss_gb: float | None = Field(None, gt=0)
    trust_remote_code: bool | None = None
    tracer_options: dict[str, dict[str, Any]] | None = None
    parallel: ParallelSettings | None = None

    @field_validator("id")
    @classmethod
    def _hub_id(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_hub_id(value)
            except InvalidModelIdError as exc:
                raise ValueError(str(exc)) from None  # so pydantic locates it (file:line)
        return value

    @model_validator(mode="after")
    def _id_xor_path(self) -> ModelEntry:
        if (self.id is None) == (self.path is None):
            raise ValueError("give exactly one of `id` (hub model) or `path` (local directory)")
        if self.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", self.name):
            raise ValueError(f"name {self.name!r} may only use letters, digits, '.', '_', '-'")
        return self

    @property
    def display(self) -> str:
        return self.name or self.id or Path(self.path or "").name


class FrameworkSettings(_Strict):
    python: str | None = Field(
        None, description="Interpreter for this framework's workers (default: the current one)"
    )
    preload: bool = Field(
        True,
        description="Fork light jobs from a server that imported the framework once "
        "(tracers that need a fresh interpreter are always spawned)",
    )


# What a tracer needs from a hub repo: configs, tokenizer files, safetensors weights (+ index),
# remote code. Duplicate weight formats (.bin, .onnx, .gguf, ...) are left out; a repo with
# no safetensors at all gets its pytorch_model*.bin instead (see core.snapshot).
DEFAULT_ALLOW_PATTERNS = [
    "*.json",
    "*.safetensors",
    "*.model",
    "*.tiktoken",
    "*.txt",
    "*.py",
    "*.jinja",
]
DEFAULT_IGNORE_PATTERNS = ["onnx/*", "openvino/*", "original/*", "coreml/*"]


class DownloadSettings(_Strict):
    """How hub models are pre-downloaded before any worker starts."""

    max_workers: int = Field(4, ge=1, le=64, description="Models downloaded at once")
    timeout_s: float = Field(
        3600.0, gt=0, description="Per-model limit; the download is killed when it is reached"
    )
    allow_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW_PATTERNS))
    ignore_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_IGNORE_PATTERNS))


class SlurmSettings(_Strict):
    """Resources of each array task of `kerneltracer slurm submit` (one task = one shard)."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    cpus_per_task: int = Field(
        4,
        ge=1,
        le=4096,
        description="CPUs per task; when not set: min(4, the partition's largest node), "
        "and a value no node of the partition has is refused before submitting",
    )
    mem: str | None = Field(None, description="Memory per task, e.g. 32G (default: the cluster's)")
    gpus: int = Field(0, ge=0, le=64, description="GPUs per task (--gres=gpu:N)")
    jobs: int = Field(1, ge=1, le=512, description="Workers per task (`run -j`)")
    time: str | None = Field(
        None, description="Time limit per task (D-HH:MM:SS); default: derived from the timeouts"
    )
    signal_s: int = Field(
        120,
        ge=0,
        le=3600,
        description="SIGTERM the task this long before its time limit (Slurm may send it up "
        "to 60 s earlier); 0: none, the task gets Slurm's own SIGTERM at the limit",
    )
    array_size: int | None = Field(None, ge=1, description="Shards; default: one per model")
    max_parallel: int | None = Field(None, ge=1, description="Array tasks running at once")
    extra_sbatch: list[str] = Field(
        default_factory=list, description="More sbatch options, one per line, e.g. --exclusive"
    )


class RunConfig(_Strict):
    output_dir: str | None = Field(None, description="Run dir; default runs/<config name>")
    defaults: JobSettings = Field(default_factory=JobSettings)
    models: list[ModelEntry] = Field(min_length=1)
    skip: list[str] = Field(default_factory=list, description="Model ids/paths/names to leave out")
    frameworks: dict[Framework, FrameworkSettings] = Field(default_factory=dict)
    download: DownloadSettings = Field(default_factory=DownloadSettings)
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)


def check_hub_id(model_id: str) -> None:
    """Reject ids that are not hub ids, in particular path tricks (``..``, ``/abs``)."""
    if ".." in model_id or "--" in model_id or not _HUB_ID.match(model_id):
        raise InvalidModelIdError(
            f"invalid model id {model_id!r}: hub ids look like 'org/name' (letters, digits, "
            "'-', '_', '.'; no '..' or '--'); use `path:` for a local directory"
        )


def settings_for(cfg: RunConfig, entry: ModelEntry) -> JobSettings:
    """The model's effective settings: defaults overlaid with the entry's own fields."""
    overrides = {
        key: getattr(entry, key)
        for key in JobSettings.model_fields
        if getattr(entry, key) is not None
    }
    if not overrides:
        return cfg.defaults
    if "tracer_options" in overrides:
        overrides["tracer_options"] = {**cfg.defaults.tracer_options, **overrides["tracer_options"]}
    # Both sides were validated with the same field constraints: a copy is enough.
    return cfg.defaults.model_copy(update=overrides)


@dataclass(frozen=True)
class ConfigFile:
    """A config file parsed and validated against the schema, with what its errors need."""

    config: RunConfig
    base_dir: Path  # relative paths in the config are relative to this directory
    path: Path
    text: str

    def error(self, loc: tuple[Any, ...], message: str) -> ConfigError:
        """A problem at ``loc`` (a pydantic location), naming the file and the line."""
        return ConfigError(f"{_loc_str(loc)}: {message}", self.path, _line_of(self.text, loc))


def read_config(path: Path | str) -> ConfigFile:
    """Parse and validate a config file against the schema (YAML, types, fields).

    What needs the tracer registry or the file system (tracer names and options, model
    directories, duplicate jobs, the run dir) is the planner's: ``orchestrator.planning``'s
    ``load_config`` runs both.
    """
    path = Path(path)
    try:
        os.stat(path)
    except FileNotFoundError:
        raise ConfigError("config file not found", path) from None
    except OSError:
        pass  # the reader below says what (permission denied, a loop...)
    try:
        text = read_input_text(path, SMALL_FILE, what="config file")
    except InputFileError as exc:
        raise ConfigError(str(exc)) from None
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        what = problem if isinstance(exc, _DuplicateKey) else f"malformed YAML: {problem}"
        raise ConfigError(what, path, mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping with at least `models:`", path, 1)
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        more = len(exc.errors()) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(
            f"{_loc_str(loc)}: {error_message(err)}{suffix}", path, _line_of(text, loc)
        ) from None
    return ConfigFile(cfg, path.resolve().parent, path, text)


def _loc_str(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _PLAIN_KEY.fullmatch(str(part)):  # a hostile key stays on one line, quoted
            out += f"[{str(part)[:40]!r}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "config"


def error_message(err: Mapping[str, Any]) -> str:
    """One pydantic error in words, with the valid fields of an unknown one."""
    if err["type"] == "extra_forbidden":
        model = _model_at(tuple(err["loc"][:-1]))
        valid = f" (valid: {choices(model.model_fields)})" if model is not None else ""
        return f"unknown field {err['loc'][-1]!r}{valid}"
    if err["type"] == "missing":
        return "field required"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"].endswith(("_type", "_parsing", "_from_float")) or err["type"] == "finite_number":
        given = repr(err.get("input"))
        msg += f" (got {given if len(given) <= 40 else given[:37] + '...'})"
    return msg


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort YAML line (1-based) for a pydantic location path.

    Composing the node tree (which keeps line marks) costs as much as parsing again, so it
    is done only here, on the error path.
    """
    node: yaml.Node | None = yaml.compose(text, Loader=_LOADER)
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == str(part)), None)
            key = next((k for k, _ in node.value if getattr(k, "value", None) == str(part)), None)
            if nxt is None:
                break
            line = (key or nxt).start_mark.line + 1
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """Which config model a location points into, to list its valid fields."""
    if loc == ():
        return RunConfig
    if loc == ("defaults",):
        return JobSettings
    if len(loc) == 2 and loc[0] == "models":
        return ModelEntry
    if len(loc) == 2 and loc[0] == "frameworks":
        return FrameworkSettings
    if loc == ("download",):
        return DownloadSettings
    return None


__all__ = [
    "ConfigFile",
    "DownloadSettings",
    "JobSettings",
    "ModelEntry",
    "ParallelSettings",
    "RunConfig",
    "check_hub_id",
    "error_message",
    "read_config",
    "settings_for",
]
