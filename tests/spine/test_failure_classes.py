"""Memory-related ends say what happened (issue 38, item 12): an allocation larger than the
device is not `oom` (no memory ran out) and says the size asked for, one that could have fit
still is `oom`; a config too large for the ceiling or the machine is refused before the
build, naming its field; a long phase gives feedback in the worker log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def test_a_long_phase_says_it_is_still_running(tmp_path: Path) -> None:
    """Feedback while a model builds for minutes (num_hidden_layers: 100000)."""
    from kerneltracer.worker.phases import Heartbeat, PhaseLog
    from tests.helpers import wait_until

    phases = PhaseLog(tmp_path / "phases.log", node="t")
    said: list[str] = []
    with Heartbeat(phases, said.append, 0.02), phases.phase("load"):
        assert wait_until(lambda: len(said) >= 2, timeout=60)
    assert said[0].startswith("phase load still running after ")
    assert "RSS" in said[0]


def _config(**fields: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=128, intermediate_size=256, num_attention_heads=4, **fields)


@pytest.mark.parametrize(
    ("fields", "fake", "named"),
    [
        ({"num_hidden_layers": 100_000}, True, "num_hidden_layers: 100000"),
        ({"num_hidden_layers": 100_000}, False, "num_hidden_layers: 100000"),
        ({"num_hidden_layers": 2, "vocab_size": 10**9}, False, "vocab_size: 1000000000"),
    ],
)
def test_a_config_too_large_for_the_ceiling_is_refused_before_building(
    fields: dict[str, int], fake: bool, named: str
) -> None:
    torch = pytest.importorskip("torch")
    from kerneltracer.errors import UnsupportedError
    from kerneltracer.worker.frameworks.huggingface.size import check_fits

    with pytest.raises(UnsupportedError) as info:
        check_fits(_config(**fields), torch.float32, fake, max_rss_gb=4.0)
    assert f"the config's {named} makes the model at least" in str(info.value)
    assert "max_rss_gb 4" in str(info.value)
    check_fits(_config(num_hidden_layers=2), torch.float32, fake, max_rss_gb=4.0)  # fits
