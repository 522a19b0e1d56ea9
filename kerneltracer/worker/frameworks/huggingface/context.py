"""HFContext: an eager transformers model, the job's workload, and one training-aware step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.frameworks.base import RunContext

if TYPE_CHECKING:
    from kerneltracer.worker.inputs import Workload


@dataclass
class HFContext(RunContext):
    # A tracer may swap it for a compiled wrapper around a step and put it back after.
    model: Any
    # What a step runs (prefill forward, one decode step, generate) and its inputs.
    workload: Workload
    tokenizer: Any = None
    # Weights fake: the entered fake-tensor session the model lives in (see `fake`), else None.
    fake_session: Any = None

    @property
    def example_inputs(self) -> dict[str, Any]:
        """Keyword arguments for one forward; fresh on every access (a decode step's cache)."""
        return self.workload.inputs()

    @property
    def phase(self) -> str:
        return self.workload.phase

    def values_read(self) -> Any:
        """Around code that runs the model (a step, a graph capture that calls the model
        itself): with fake weights, a value the model reads makes the job ``unsupported``
        naming the model's line."""
        if self.fake_session is None:
            return contextlib.nullcontext()
        from kerneltracer.worker.frameworks.huggingface.fake import values_unsupported

        return values_unsupported()

    def step(self, before_backward: Callable[[], None] | None = None) -> Any:
        """One eval step (no grad) or one train step (forward + backward of a loss).

        An eval step is what the phase says: a forward, one decode step or ``generate``.
        """
        try:
            with self.values_read():
                return self._step(before_backward)
        except Exception as exc:
            from kerneltracer.worker.inputs import explain

            # Our inputs' gap (unsupported, naming the argument) or the library's bug.
            explained = explain(exc, self.workload.spec, self.workload.inputs())
            if explained is None:
                raise
            raise explained from exc

    def _step(self, before_backward: Callable[[], None] | None) -> Any:
        import torch

        if self.mode == "eval":
            with torch.no_grad():
                return self.workload.run(self.model)
        out = self.workload.run(self.model)
        loss = loss_of(out)
        if before_backward is not None:
            before_backward()
        loss.backward()
        self.model.zero_grad(set_to_none=True)
        return out

    def close(self) -> None:
        """Leave the fake tensor mode (a worker process simply exits; in-process users close)."""
        session, self.fake_session = self.fake_session, None
        if session is not None:
            session.__exit__(None, None, None)

    def describe_inputs(self) -> list[dict[str, Any]] | None:
        from kerneltracer.worker.inputs import describe

        return describe(self.workload)


def loss_of(out: Any) -> Any:
    """The model's loss, else the mean of its float outputs: something to backward through."""
    loss = getattr(out, "loss", None)
    if loss is not None:
        # Codecs (DAC) return one loss per sample; a backward needs one number.
        return loss if loss.dim() == 0 else loss.mean()
    import torch

    tensors = [v for v in (out.values() if hasattr(out, "values") else [out]) if torch.is_tensor(v)]
    floats = [t for t in tensors if t.is_floating_point()]
    if not floats:
        raise UnsupportedError("train mode: the model returned no loss and no float output")
    return sum(t.float().mean() for t in floats)
