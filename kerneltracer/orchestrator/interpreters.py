"""The interpreter each framework's workers run in, checked before anything is downloaded.

A config whose vLLM jobs would run in an interpreter without vLLM used to download every
model and then end each of those jobs ``unsupported``. Now the run stops first, with one
line naming the interpreter, what it lacks and, when ``frameworks.<name>.python`` is
unset, a ``.venv-vllm`` found beside the config or in the cwd. It is never used silently:
the config says which interpreter runs which jobs.

The check reads package metadata only (no framework is imported, here or in the probe).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.config import RunConfig
from kerneltracer.errors import ConfigError, UsageError
from kerneltracer.worker.frameworks.registry import LOADERS

# A venv that `make vllm` builds; looked for when frameworks.vllm.python is unset.
_VENV_PYTHONS = {"vllm": Path(".venv-vllm") / "bin" / "python"}
PROBE_TIMEOUT_S = 60.0

# Run by the candidate interpreter: which distributions it has, whether it finds us.
_PROBE = """
import importlib.metadata as m, importlib.util as u, json, sys
def has(d):
    try:
        m.version(d)
        return True
    except m.PackageNotFoundError:
        return False
print(json.dumps({"dists": [d for d in sys.argv[1:] if has(d)],
                  "kerneltracer": u.find_spec("kerneltracer") is not None}))
"""


@dataclass(frozen=True)
class Probe:
    distributions: tuple[str, ...]  # those of the asked-for ones that are installed
    kerneltracer: bool


def _resolve_interpreter(python: str, base_dir: Path, framework: str) -> str:
    """A bare name (``python3``) is looked up on PATH; a path is relative to the config."""
    found = (
        shutil.which(python)
        if "/" not in python
        else os.path.abspath(os.path.join(base_dir, os.path.expanduser(python)))
    )
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise UsageError(
            f"frameworks.{framework}.python: {found or python} is not an executable "
            f"interpreter{_hint(framework)}"
        )
    return found


def worker_interpreters(
    cfg: RunConfig,
    config_path: Path,
    base_dir: Path,
    frameworks: Iterable[str],
    cwd: Path | None = None,
) -> dict[str, str]:
    """framework → interpreter for every configured one; each of ``frameworks`` (those the
    selected jobs use) is checked to have what its loader needs. Raises one line if not."""
    out: dict[str, str] = {
        fw: _resolve_interpreter(s.python, base_dir, fw)
        for fw, s in cfg.frameworks.items()
        if s.python
    }
    for fw in sorted(set(frameworks)):
        wanted = LOADERS[fw].distributions if fw in LOADERS else ()
        if fw in out:
            _check_configured(fw, out[fw], wanted)
        elif wanted and not _installed_here(wanted):
            raise ConfigError(_unset_message(fw, wanted, base_dir, cwd or Path.cwd()), config_path)
    return out


def _check_configured(framework: str, python: str, wanted: tuple[str, ...]) -> None:
    probe = probe_interpreter(python, wanted)
    if wanted and not probe.distributions:
        raise UsageError(
            f"frameworks.{framework}.python: {python} has none of {_names(wanted)} "
            f"installed{_hint(framework)}"
        )
    if not probe.kerneltracer:
        raise UsageError(
            f"frameworks.{framework}.python: {python} cannot import kerneltracer "
            "(install it there with `pip install -e <this repo>`, or set PYTHONPATH)"
        )


def probe_interpreter(python: str, distributions: tuple[str, ...]) -> Probe:
    """What ``python`` has, asked in a child with the environment workers get."""
    try:
        res = subprocess.run(
            [python, "-c", _PROBE, *distributions],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            # Workers run `-m` from their job dir: a checkout in our cwd must not count.
            cwd=tempfile.gettempdir(),
            env=dict(os.environ),
            check=False,
        )
        data = json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        res, data = None, None
    if not isinstance(data, dict):
        why = res.stderr.strip().splitlines()[-1][:200] if res and res.stderr.strip() else ""
        raise UsageError(
            f"{python} does not run as a Python interpreter" + (f" ({why})" if why else "")
        )
    return Probe(tuple(data.get("dists") or ()), bool(data.get("kerneltracer")))


def _installed_here(distributions: tuple[str, ...]) -> bool:
    for dist in distributions:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            importlib.metadata.version(dist)
            return True
    return False


def _found_venvs(framework: str, base_dir: Path, cwd: Path) -> list[Path]:
    """The framework's usual venv interpreter beside the config and in the cwd, if there."""
    rel = _VENV_PYTHONS.get(framework)
    if rel is None:
        return []
    found: list[Path] = []
    for root in (base_dir, cwd):
        python = (root / rel).absolute()
        if python not in found and os.access(python, os.X_OK) and python.is_file():
            found.append(python)
    return found


def _unset_message(framework: str, wanted: tuple[str, ...], base_dir: Path, cwd: Path) -> str:
    line = (
        f"frameworks.{framework}.python is not set and this interpreter ({sys.executable}) "
        f"has none of {_names(wanted)}"
    )
    venvs = _found_venvs(framework, base_dir, cwd)
    if not venvs:
        return f"{line}: set it to an interpreter that has{_hint(framework)}"
    rel = os.path.relpath(venvs[0], base_dir)
    return f"{line}; {venvs[0]} exists: set `frameworks: {{{framework}: {{python: {rel}}}}}`"


def _names(distributions: tuple[str, ...]) -> str:
    return " / ".join(distributions)


def _hint(framework: str) -> str:
    cls = LOADERS.get(framework)
    return f" ({cls.install_hint})" if cls is not None and cls.install_hint else ""
