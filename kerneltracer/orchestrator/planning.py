"""What a config plans: each model's tracers and job keys, and the checks that need the
tracer registry or the file system (tracer names and options, model directories,
duplicate jobs, the run dir).

``kerneltracer.config`` is the schema and its parsing; :func:`load_config` is both, the
way every command that runs or submits a config reads it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kerneltracer.config import (
    JobSettings,
    ModelEntry,
    RunConfig,
    error_message,
    read_config,
    settings_for,
)
from kerneltracer.core.jobspec import slugify
from kerneltracer.core.layout import job_key
from kerneltracer.core.rundir import run_dir_problem
from kerneltracer.errors import choices
from kerneltracer.tracers.registry import TRACERS, TracerRegistry


def load_config(path: Path | str, check_output_dir: bool = True) -> tuple[RunConfig, Path]:
    """Parse and check a config file; returns it with its base dir for relative paths.

    ``check_output_dir=False`` when the run dir comes from elsewhere (``run --output-dir``).
    Imports no tracer module but those whose options the config sets (to validate them).
    """
    parsed = read_config(path)
    problem = check_semantics(parsed.config, parsed.base_dir, check_output_dir=check_output_dir)
    if problem is not None:
        raise parsed.error(*problem)
    return parsed.config, parsed.base_dir


def check_semantics(
    cfg: RunConfig,
    base_dir: Path,
    registry: TracerRegistry = TRACERS,
    check_output_dir: bool = True,
) -> tuple[tuple[Any, ...], str] | None:
    """Cross-field checks pydantic cannot do alone; returns (location, message) or None.

    Imports no tracer module but those whose options the config sets (to validate them).
    """
    checks = [
        _check_tracer_names(("defaults",), cfg.defaults.tracers, registry),
        _check_options(("defaults",), cfg.defaults.tracer_options, registry),
    ]
    for i, entry in enumerate(cfg.models):
        loc = ("models", i)
        checks.append(_check_tracer_names(loc, entry.tracers, registry))
        checks.append(_check_options(loc, entry.tracer_options or {}, registry))
        checks.append(_check_applicable(loc, cfg, entry, registry))
        checks.append(_check_parallel(loc, settings_for(cfg, entry)))
        if entry.path is not None and not os.path.isdir(os.path.join(base_dir, entry.path)):
            resolved = os.path.abspath(os.path.join(base_dir, entry.path))
            what = "is a file, not a directory" if os.path.lexists(resolved) else "does not exist"
            checks.append(((*loc, "path"), f"model directory {resolved} {what}"))
    checks.append(_check_unique_jobs(cfg, base_dir, registry))
    if check_output_dir and cfg.output_dir is not None:
        run_dir = Path(os.path.join(base_dir, cfg.output_dir))
        problem = run_dir_problem(run_dir)
        if problem is not None:
            checks.append((("output_dir",), f"run dir {os.path.abspath(run_dir)}: {problem}"))
    return next((c for c in checks if c is not None), None)


@dataclass(frozen=True)
class PlannedModel:
    """One model entry as a run expands it: where it lives, its settings and its job keys."""

    index: int  # in `models:`
    entry: ModelEntry
    path: str | None  # absolute local directory for `path:` models
    settings: JobSettings
    slug: str  # the model's directory under jobs/, the first half of its job keys
    jobs: tuple[tuple[str, str], ...]  # (tracer, job key), in plan order


def planned_models(
    cfg: RunConfig, base_dir: Path, registry: TracerRegistry = TRACERS
) -> Iterator[PlannedModel]:
    """Every model the run does not skip, in config order, with its tracers' job keys.

    Paths use abspath, not resolve: the user's symlinks are kept and no syscall is made per
    model. The one expansion planning and the duplicate-job check both read.
    """
    skip = set(cfg.skip)
    for index, entry in enumerate(cfg.models):
        path = (
            os.path.abspath(os.path.join(base_dir, entry.path)) if entry.path is not None else None
        )
        if skip & ({entry.id, entry.path, entry.name, path} - {None}):
            continue
        settings = settings_for(cfg, entry)
        slug = slugify(entry.name or entry.id or Path(path or "").name)
        layout = settings.parallel.label() if settings.parallel is not None else "single"
        jobs = tuple(
            (tracer, job_key(slug, tracer, settings.mode, settings.phase, layout))
            for tracer in planned_tracers(cfg, entry, registry)
        )
        yield PlannedModel(index, entry, path, settings, slug, jobs)


def _check_unique_jobs(
    cfg: RunConfig, base_dir: Path, registry: TracerRegistry
) -> tuple[tuple[Any, ...], str] | None:
    seen: dict[str, int] = {}
    for model in planned_models(cfg, base_dir, registry):
        for _, key in model.jobs:
            if key in seen:
                return ("models", model.index), (
                    f"plans job {key!r} as models[{seen[key]}] does; give one of them a "
                    "distinct `name:`"
                )
            seen[key] = model.index
    return None


def _check_tracer_names(
    loc: tuple[Any, ...], names: Sequence[str] | None, registry: TracerRegistry
) -> tuple[tuple[Any, ...], str] | None:
    for j, name in enumerate(names or []):
        if name not in registry:
            return (*loc, "tracers", j), f"unknown tracer {name!r} (valid: {choices(registry)})"
    return None


def _check_options(
    loc: tuple[Any, ...], options: Mapping[str, Any], registry: TracerRegistry
) -> tuple[tuple[Any, ...], str] | None:
    for name, opts in options.items():
        if name not in registry:
            return (*loc, "tracer_options", name), (
                f"options for unknown tracer {name!r} (valid: {choices(registry)})"
            )
        try:
            registry[name].Options.model_validate(opts)
        except ValidationError as exc:
            err = exc.errors()[0]
            valid = choices(registry[name].Options.model_fields) or "none"
            what = (
                f"unknown option {err['loc'][-1]!r}"
                if err["type"] == "extra_forbidden"
                else error_message(err)
            )
            where = (*loc, "tracer_options", name, *err["loc"])
            return where, f"{what} (options of {name}: {valid})"
    return None


def _check_parallel(
    loc: tuple[Any, ...], settings: JobSettings
) -> tuple[tuple[Any, ...], str] | None:
    """What a layout needs of the job's mode (the degrees are checked against the model's
    config in the worker, before anything is built)."""
    if settings.parallel is None:
        return None
    if settings.weights != "fake" and settings.parallel.layers is not None:
        # Real ranks load the checkpoint as it is: a cut-down model has no weights to read.
        return (*loc, "parallel", "layers"), (
            "parallel.layers builds a cut-down model: it needs weights fake"
        )
    from kerneltracer.core.parallelspec import ParallelSpec, layout_problem

    problem = layout_problem(ParallelSpec.from_json(settings.parallel.model_dump()), settings.mode)
    return ((*loc, "parallel"), problem) if problem is not None else None


def _check_applicable(
    loc: tuple[Any, ...], cfg: RunConfig, entry: ModelEntry, registry: TracerRegistry
) -> tuple[tuple[Any, ...], str] | None:
    framework = entry.framework or cfg.defaults.framework
    valid = registry.names_for(framework)
    for j, name in enumerate(entry.tracers or []):
        if name in registry and framework not in registry.frameworks(name):
            return (*loc, "tracers", j), (
                f"tracer {name!r} does not apply to framework {framework!r} "
                f"(tracers for {framework}: {', '.join(valid) or 'none'})"
            )
    if not planned_tracers(cfg, entry, registry):
        return loc, (
            f"no configured tracer applies to framework {framework!r} "
            f"(tracers for {framework}: {', '.join(valid) or 'none'})"
        )
    return None


def planned_tracers(
    cfg: RunConfig, entry: ModelEntry, registry: TracerRegistry = TRACERS
) -> list[str]:
    """Tracers a model gets: its own list, else the defaults, filtered by framework.

    Defaults name tracers for every framework, so a vLLM entry simply inherits the ones that
    apply to it; a tracer a model names explicitly must apply (checked by the caller).
    Without any list, every registered tracer of the framework runs.
    """
    framework = entry.framework or cfg.defaults.framework
    if entry.tracers is not None:
        names = entry.tracers
    elif cfg.defaults.tracers is not None:
        names = cfg.defaults.tracers
    else:
        names = list(registry)
    seen: dict[str, None] = {}
    for name in names:
        if name in registry and framework in registry.frameworks(name):
            seen.setdefault(name)
    return list(seen)
