"""The huggingface loader: a transformers model from a local dir, eager, with its workload.

Unsupported cases (unknown architecture, no GPU for a cuda job) are decided from the config
alone, before any weights are read, and raise :class:`UnsupportedError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.environ import KtEnv
from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.frameworks.base import FrameworkLoader
from kerneltracer.worker.frameworks.huggingface import size
from kerneltracer.worker.frameworks.huggingface.context import HFContext

if TYPE_CHECKING:
    from kerneltracer.worker.inputs import Workload


class HuggingFaceLoader(FrameworkLoader):
    name: ClassVar[str] = "huggingface"
    context_type: ClassVar[type[HFContext]] = HFContext
    version_modules: ClassVar[tuple[str, ...]] = ("torch", "transformers")
    preload_refusal: ClassVar[str | None] = None
    ranks_refusal: ClassVar[str | None] = None

    @classmethod
    def preload(cls, hints: list[str]) -> list[str]:
        from kerneltracer.worker.frameworks.huggingface.preload import preload

        return preload(hints)

    def load(self, job: JobSpec, job_dir: Path, tracer: object) -> HFContext:
        return load_huggingface(job, job_dir)


def resolve_device(requested: str) -> str:
    import torch

    has_cuda = torch.cuda.is_available()
    if requested == "auto":
        return "cuda:0" if has_cuda else "cpu"
    if requested.startswith("cuda"):
        if not has_cuda:
            raise UnsupportedError(f"device {requested} requested but no CUDA device is visible")
        # The orchestrator pinned one GPU with CUDA_VISIBLE_DEVICES: it is cuda:0 here.
        return "cuda:0" if KtEnv.read().gpu_slot else requested
    return requested


def resolve_dtype(requested: str, device: str, config: Any) -> Any:
    import torch

    if requested != "auto":
        return getattr(torch, requested)
    if device == "cpu":
        return torch.float32  # half precision on CPU is slow and partially supported
    configured = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(configured, str):
        configured = getattr(torch, configured, None)
    return configured if configured in (torch.float16, torch.bfloat16) else torch.float16


def model_class(config: Any, trust_remote_code: bool) -> Any:
    """The transformers class named by the config, checked before any weight is read."""
    import transformers

    auto_map = getattr(config, "auto_map", None) or {}
    if trust_remote_code and auto_map:
        for auto_name in ("AutoModelForCausalLM", "AutoModelForMaskedLM", "AutoModel"):
            if auto_name in auto_map:
                return getattr(transformers, auto_name)
    archs = list(getattr(config, "architectures", None) or [])
    for arch in archs:
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
    if not archs:
        return transformers.AutoModel
    raise UnsupportedError(
        f"architecture {', '.join(archs)} is not in transformers {transformers.__version__}"
        + ("" if trust_remote_code else " (set trust_remote_code: true if the repo ships code)")
    )


def load_huggingface(job: JobSpec, job_dir: Path) -> HFContext:
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    path = job.model.local_dir or job.model.path
    if path is None:
        raise UnsupportedError("model has no local directory (it was not resolved)")
    remote = job.model.trust_remote_code
    model_type = _model_type(Path(path))
    if model_type is not None and model_type not in transformers.CONFIG_MAPPING and not remote:
        raise UnsupportedError(
            f"model_type {model_type!r} is not known to transformers {transformers.__version__}"
            " (set trust_remote_code: true if the repo ships code)"
        )
    config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=remote)
    if job.model.fake_weights:
        return _load_fake(job, job_dir, path, config)
    device = resolve_device(job.device)
    dtype = resolve_dtype(job.dtype, device, config)
    cls = model_class(config, remote)
    size.check_fits(config, dtype, False, job.max_rss_gb)
    torch.manual_seed(0)
    model = cls.from_pretrained(path, config=config, dtype=dtype, trust_remote_code=remote)
    model.to(device)
    return _context(job, job_dir, path, model, config, device, dtype)


def _context(
    job: JobSpec,
    job_dir: Path,
    path: str,
    model: Any,
    config: Any,
    device: str,
    dtype: Any,
    **extra: Any,
) -> HFContext:
    """The loaded model in the job's mode, with its tokenizer and the phase's workload."""
    model.train(job.mode == "train")
    tokenizer, why_not = _tokenizer(path, job.model.trust_remote_code)
    if why_not is not None:
        extra["notes"] = [*extra.get("notes", []), why_not]
    keep = extra.pop("keep_values", None)
    workload = example_workload(model, config, tokenizer, job, device, dtype, keep)
    return HFContext(
        job=job,
        job_dir=job_dir,
        device=device,
        dtype=str(dtype).removeprefix("torch."),
        model=model,
        workload=workload,
        tokenizer=tokenizer,
        **extra,
    )


def _load_fake(job: JobSpec, job_dir: Path, path: str, config: Any) -> HFContext:
    """The model at full size on fake tensors (see :mod:`.fake`): no weight is read."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    if job.phase == "generate":
        raise UnsupportedError(fake.GENERATE_REFUSAL)
    fake.check_fake_device(job.device)
    device = resolve_device(job.device)
    dtype = fake.fake_dtype(job.dtype, config)
    remote = job.model.trust_remote_code
    cls = model_class(config, remote)
    size.check_fits(config, dtype, True, job.max_rss_gb)
    session = fake.fake_session()
    # Entered for good (closed by HFContext.close): see the module docstring of `fake`.
    mode = session.__enter__()
    try:
        torch.manual_seed(0)
        with fake.values_unsupported():
            model = fake.build_fake_model(cls, config, dtype, device, mode, remote)
            return _context(
                job,
                job_dir,
                path,
                model,
                config,
                device,
                dtype,
                notes=fake.notes(config),
                fake_session=session,
                keep_values=fake.keep_values(mode),
            )
    except BaseException:
        session.__exit__(None, None, None)
        raise


def _model_type(path: Path) -> str | None:
    import json

    try:
        return json.loads((path / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return None


def _tokenizer(path: str, remote: bool) -> tuple[Any, str | None]:
    """The model's tokenizer, else None (inputs fall back to seeded random ids) and, when
    the files are there but need a package this interpreter lacks, a note that says so."""
    # Here, not at the top: the worker's entry point imports this loader and no more.
    from kerneltracer.worker.frameworks.tokenizer import load_tokenizer

    got = load_tokenizer(path, remote)
    if got.missing is None:
        return got.tokenizer, None
    return None, f"tokenizer not loaded, {got.missing.reason('')}: input ids are seeded random ids"


def example_workload(
    model: Any,
    config: Any,
    tokenizer: Any,
    job: JobSpec,
    device: str,
    dtype: Any,
    keep_values: Any = None,
) -> Workload:
    """Deterministic inputs for the model's forward() and the job's phase."""
    from kerneltracer.worker.inputs import InputSpec, build_workload

    spec = InputSpec.of(
        model,
        config=config,
        tokenizer=tokenizer,
        batch=job.batch_size,
        seq_len=job.seq_len,
        device=device,
        float_dtype=dtype,
        train=job.mode == "train",
        omit_all_ones_mask=job.model.fake_weights,
        keep_values=keep_values,
    )
    return build_workload(spec, job.phase, job.new_tokens)
