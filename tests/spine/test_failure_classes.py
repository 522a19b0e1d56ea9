"""An allocation larger than the device is not `oom` (issue 38, item 12): no memory ran out,
and the reason says the size asked for; one that could have fit still is `oom`."""

from __future__ import annotations

import psutil
import pytest

from kerneltracer.core.status import JobStatus
from kerneltracer.worker.failure import classify_exception


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_a_cpu_allocation_beyond_the_machine_is_failed_with_its_size() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as info:
        torch.empty(1 << 50, dtype=torch.uint8)  # 1 PiB: the allocator refuses at once
    status, error = classify_exception(info.value, "load")
    assert status == JobStatus.FAILED
    assert error.root_cause.startswith("one allocation of 1.0 PiB (1,125,899,906,842,624 bytes)")
    assert "no memory ran out" in error.root_cause


def test_a_refused_allocation_that_could_have_fit_is_oom() -> None:
    small = 1 << 20
    assert small < psutil.virtual_memory().total
    exc = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        f"memory: you tried to allocate {small} bytes. Error code 12 (Cannot allocate memory)"
    )
    assert classify_exception(_raised(exc), "trace")[0] == JobStatus.OOM


@pytest.mark.parametrize(
    ("asked", "status"), [("20.00 GiB", JobStatus.OOM), ("500.00 GiB", JobStatus.FAILED)]
)
def test_cuda_requests_compare_with_the_gpus_capacity(asked: str, status: JobStatus) -> None:
    exc = RuntimeError(
        f"CUDA out of memory. Tried to allocate {asked}. GPU 0 has a total capacity of "
        "79.10 GiB of which 1.50 GiB is free."
    )
    got, error = classify_exception(_raised(exc), "trace")
    assert got == status
    if status == JobStatus.FAILED:
        assert "500.0 GiB" in error.root_cause and "79.1 GiB" in error.root_cause
