"""Status files and run manifests read without pydantic, when they are written as we write them.

``kerneltracer status`` reads every job's ``_TRACE_STATUS.json`` and the run's manifests;
validating them with their pydantic models (:class:`~kerneltracer.core.status.TraceStatus`,
:class:`~kerneltracer.core.manifest.RunManifest`) imports pydantic and builds the models,
~0.1 s of a command that otherwise takes ~0.2 s. A file whose every field already has
exactly the type our writers give it (a str where the model says ``str``, an int or float
where it says ``float``, ...) is one those models accept as it is: these checks say so
without pydantic. Anything else, including what pydantic's lax mode would coerce (``"3"``
for an int), is left to the models themselves, so what a reader concludes is what the
models conclude. tests/spine/test_wellformed.py holds each check to its model's fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.core import layout
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input

SCHEMA_VERSION = 1  # _TRACE_STATUS.json's schema_version

# JobStatus's values (kerneltracer.core.status), for a status read without its module.
STATUS_VALUES = frozenset(
    {"ok", "failed", "oom", "timeout", "crashed", "unsupported", "skipped", "interrupted"}
)

Check = Callable[[Any], bool]

# A float field takes an int exactly only within a double's integers.
_EXACT_FLOAT_INT = 2**53


def is_str(v: Any) -> bool:
    return type(v) is str


def is_int(v: Any) -> bool:
    return type(v) is int


def is_float(v: Any) -> bool:
    return type(v) is float or (type(v) is int and abs(v) < _EXACT_FLOAT_INT)


def _optional(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _dict_of(check: Check) -> Check:
    return lambda v: type(v) is dict and all(is_str(k) and check(x) for k, x in v.items())


def _list_of(check: Check) -> Check:
    return lambda v: type(v) is list and all(check(x) for x in v)


def _anything(_: Any) -> bool:
    return True


def _fields(required: Mapping[str, Check], optional: Mapping[str, Check]) -> Check:
    """An object with every ``required`` field and any ``optional`` one, each passing its
    check; other fields are the models' extras (they allow them)."""

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return False
        if not all(name in v and ok(v[name]) for name, ok in required.items()):
            return False
        return all(name not in v or ok(v[name]) for name, ok in optional.items())

    return check


_OPT_STR = _optional(is_str)
_OPT_INT = _optional(is_int)

# Per model, its fields: required, then optional (those with a default).
ERROR_FIELDS: tuple[dict[str, Check], dict[str, Check]] = (
    {"type": is_str, "message": is_str, "root_cause": is_str},
    {"location": _OPT_STR, "phase": _OPT_STR},
)
OUTPUT_FIELDS: tuple[dict[str, Check], dict[str, Check]] = (
    {"path": is_str, "size": is_int, "sha256": is_str, "mtime_ns": is_int},
    {"kind": _OPT_STR},
)
STATUS_FIELDS: tuple[dict[str, Check], dict[str, Check]] = (
    {
        "status": lambda v: is_str(v) and v in STATUS_VALUES,
        **dict.fromkeys(("job_key", "attempt", "request_hash", "tracer", "tracer_version"), is_str),
        **dict.fromkeys(("framework", "device", "mode", "dtype", "options_hash"), is_str),
        "request": _dict_of(_anything),
        "model": _dict_of(_anything),
    },
    {
        "schema_version": lambda v: is_int(v) and v == SCHEMA_VERSION,
        "resolved_device": _OPT_STR,
        "phase": is_str,
        "weights": is_str,
        "started_at": _OPT_STR,
        "finished_at": _OPT_STR,
        "duration_s": _optional(is_float),
        "phases": _dict_of(is_float),
        "peak_rss_bytes": _OPT_INT,
        "tree_peak_rss_bytes": _OPT_INT,
        "exit_code": _OPT_INT,
        "signal": _OPT_STR,
        "reason": _OPT_STR,
        "error": _optional(_fields(*ERROR_FIELDS)),
        "log_path": is_str,
        "versions": _dict_of(_OPT_STR),
        "host": is_str,
        "pid": _OPT_INT,
        "outputs": _list_of(_fields(*OUTPUT_FIELDS)),
        "summary": _dict_of(_anything),
        "inputs": _list_of(_dict_of(_anything)),
    },
)
# After manifest_data: the top-level fields it keeps have their types already.
MANIFEST_JOB_FIELDS: tuple[dict[str, Check], dict[str, Check]] = (
    {"key": is_str},
    dict.fromkeys(("model", "tracer", "mode", "phase"), _OPT_STR),
)
ORCHESTRATOR_FIELDS: tuple[dict[str, Check], dict[str, Check]] = (
    {},
    {"pid": _OPT_INT, "host": _OPT_STR},
)

status_wellformed = _fields(*STATUS_FIELDS)
_manifest_job = _fields(*MANIFEST_JOB_FIELDS)
_orchestrator = _optional(_fields(*ORCHESTRATOR_FIELDS))


def manifest_wellformed(data: Mapping[str, Any]) -> bool:
    """``data`` (from :func:`manifest_data`) is a RunManifest as it stands."""
    return _orchestrator(data.get("orchestrator")) and all(
        _manifest_job(j) for j in data.get("jobs", ())
    )


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_FIELD_CHECKS: dict[str, Check] = {
    "kerneltracer_version": is_str,
    "shard": is_str,
    "config": is_str,
    "argv": lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
    "orchestrator": lambda v: isinstance(v, dict),
    "started_at": is_str,
    "finished_at": is_str,
    "interrupted": lambda v: isinstance(v, bool),
    "wall_s": _is_number,
}


def _lenient(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the fields a reader cannot use (so the rest of the file still counts)."""
    out = dict(data)
    for name, check in _FIELD_CHECKS.items():
        if name in out and out[name] is not None and not check(out[name]):
            del out[name]
    if "jobs" in out:
        jobs = out["jobs"] if isinstance(out["jobs"], list) else []
        out["jobs"] = [j for j in jobs if isinstance(j, dict) and isinstance(j.get("key"), str)]
    return out


def manifest_data(path: Path) -> dict[str, Any] | None:
    """The manifest at ``path`` as a JSON object, less the top-level fields of a wrong type;
    None if it is missing, not JSON or not an object."""
    try:
        data = orjson.loads(read_input(path, SMALL_FILE, what="run manifest", gzip=False))
    except (InputFileError, orjson.JSONDecodeError):
        return None
    return _lenient(data) if isinstance(data, dict) else None


def manifest_paths(run_dir: Path) -> list[Path]:
    """``run.json`` and every shard's manifest in ``run_dir``, sorted by name."""
    try:
        names = [p.name for p in run_dir.iterdir()]
    except OSError:
        return []
    return [run_dir / n for n in sorted(names) if layout.is_manifest_name(n)]
