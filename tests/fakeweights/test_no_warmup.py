"""Fake-weight jobs skip the untraced warm-up forward (issue 42): the first traced step on
fake tensors must record exactly what a step after a warm-up records, op for op, with the
same shapes, counts, integer ranges and module paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import job_spec


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2", "tiny-bert"])
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_the_first_fake_step_traces_what_a_warmed_up_one_does(
    tiny_models: dict[str, Path], tmp_path: Path, name: str, mode: str
) -> None:
    from kerneltracer.core.jobspec import ModelRef
    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface
    from kerneltracer.worker.tracers._dispatch_recorder import rows_of
    from kerneltracer.worker.tracers.torch_dispatch import DispatchOptions, TorchDispatchTracer

    path = str(tiny_models[name])
    model = ModelRef(display=name, slug=name, path=path, local_dir=path, weights="fake")
    job = job_spec("torch_dispatch", model=model, mode=mode, seq_len=64)
    ctx = load_huggingface(job, tmp_path)
    try:
        tracer = TorchDispatchTracer(DispatchOptions())
        first = rows_of(tracer.trace(ctx))  # what a fake job records now: no warm-up
        after_warmup = rows_of(tracer.trace(ctx))  # the first trace was this one's warm-up
    finally:
        ctx.close()
    assert first, "nothing was traced"
    assert first == after_warmup
