"""What a child forked from a process that has its framework imported does to become a job's
process: the preloaded worker server's children (:mod:`kerneltracer.worker.forkserver`) and
the ranks a launcher forks (:mod:`kerneltracer.worker.parallel.start`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn


def redirect_output(log: str) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def apply_env_to_preloaded() -> None:
    """What imported modules read from the environment once, set again from the job's."""
    import tempfile

    tempfile.tempdir = None  # TMPDIR: the job's own scratch dir
    torch = sys.modules.get("torch")
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        # OpenMP read the variable when torch was imported; its pool starts at the first op.
        torch.set_num_threads(int(threads))


def run_then_exit(become: Callable[[], int]) -> NoReturn:
    """Run the child's whole life (``become`` returns its exit code), then leave without
    interpreter teardown: the parent's atexit handlers, threads and buffers are not the
    child's to run or flush."""
    code = 1
    try:
        code = become()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
