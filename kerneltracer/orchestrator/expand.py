"""How a validated config expands into jobs (:class:`~kerneltracer.core.jobspec.JobSpec`).

Planning needs the config and the tracer registry; the spec it produces lives in
:mod:`kerneltracer.core`, so the worker reads ``JOB.json`` without loading either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltracer.config import RunConfig
from kerneltracer.core.jobspec import JobSpec, ModelRef
from kerneltracer.errors import ConfigError
from kerneltracer.jsonio import stable_hash
from kerneltracer.orchestrator.planning import planned_models
from kerneltracer.tracers.registry import TRACERS, TracerRegistry


def plan_jobs(cfg: RunConfig, base_dir: Path, registry: TracerRegistry = TRACERS) -> list[JobSpec]:
    """Expand a validated config into jobs, in config order (models, then their tracers).

    Imports the module of every planned tracer (its version and options schema are there).
    """
    jobs: list[JobSpec] = []
    validated: dict[tuple[str, str], dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for planned in planned_models(cfg, base_dir, registry):
        entry, path, settings, index = planned.entry, planned.path, planned.settings, planned.index
        model = ModelRef(
            display=entry.display,
            slug=planned.slug,
            id=entry.id,
            path=path,
            local_dir=path,
            revision=entry.revision,
            trust_remote_code=settings.trust_remote_code,
            weights=settings.weights,
        )
        for tracer, key in planned.jobs:
            cls = registry[tracer]
            raw = settings.tracer_options.get(tracer, {})
            cache_key = (tracer, stable_hash(raw))
            if cache_key not in validated:
                validated[cache_key] = cls.Options.model_validate(raw).model_dump(mode="json")
            options = validated[cache_key]
            if key in seen:  # configs built in code skip check_semantics
                raise ConfigError(
                    f"models[{index}] and models[{seen[key]}] both plan job {key!r}; "
                    "give one of them a distinct `name:`"
                )
            seen[key] = index
            # Every value below comes from validated config models: skip re-validation, which
            # would dominate planning a run of thousands of jobs.
            jobs.append(
                JobSpec.model_construct(
                    key=key,
                    model=model,
                    tracer=tracer,
                    tracer_version=cls.version,
                    exclusive_group=cls.exclusive_group,
                    framework=settings.framework,
                    mode=settings.mode,
                    device=settings.device,
                    dtype=settings.dtype,
                    batch_size=settings.batch_size,
                    seq_len=settings.seq_len,
                    options=options,
                    timeout_s=settings.timeout_s,
                    max_rss_gb=settings.max_rss_gb,
                    phase=settings.phase,
                    new_tokens=settings.new_tokens,
                    parallel=(
                        settings.parallel.model_dump(mode="json", exclude_defaults=True)
                        if settings.parallel is not None
                        else None
                    ),
                )
            )
    return jobs
