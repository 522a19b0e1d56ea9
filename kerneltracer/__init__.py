"""kerneltracer: trace what deep-learning models really run.

The Python API (the same engine as the ``kerneltracer`` CLI; tables are pandas DataFrames)::

    import kerneltracer as kt

    run = kt.open_run("runs/demo")        # or kt.trace("configs/demo.yaml")
    run.jobs                              # model, tracer, status, reason, times, RSS
    run.coverage()                        # ops x models, calls and times
    kt.timeline("trace.json.gz").ops      # op -> kernel attribution of a profile

Everything public is in ``__all__``; other modules are internal. Errors are the CLI's
one-line messages, raised as :mod:`kerneltracer.errors` exceptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kerneltracer._public import API_NAMES
from kerneltracer._version import __version__

if TYPE_CHECKING:
    from kerneltracer.api import (
        CompileHealth as CompileHealth,
    )
    from kerneltracer.api import (
        Diff as Diff,
    )
    from kerneltracer.api import (
        LogsResult as LogsResult,
    )
    from kerneltracer.api import (
        ProgressEvent as ProgressEvent,
    )
    from kerneltracer.api import (
        Run as Run,
    )
    from kerneltracer.api import (
        TimelineResult as TimelineResult,
    )
    from kerneltracer.api import (
        compile_health as compile_health,
    )
    from kerneltracer.api import (
        logs as logs,
    )
    from kerneltracer.api import (
        open_run as open_run,
    )
    from kerneltracer.api import (
        timeline as timeline,
    )
    from kerneltracer.api import (
        trace as trace,
    )

# Lazy: `import kerneltracer` (every CLI start-up, every worker) must not load pandas.
_API = API_NAMES
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from kerneltracer import api

        return getattr(api, name)
    raise AttributeError(f"module 'kerneltracer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
