"""weights: fake — the model built from its config on fake tensors must dispatch what the
real model dispatches: the same aten ops at the same shapes, dtypes and strides.

In-process on zoo models of every family: each is loaded twice through the worker's own
loader, with real (random) weights and with fake ones, fed the same inputs (a fake run
gives no attention mask where a real one gives an all-ones mask, so the real run here gets
none either) and traced by the torch_dispatch recorder: the signatures must be equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kerneltracer.core.jobspec import JobSpec, ModelRef
from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.frameworks.huggingface.zoo import ZOO, build_zoo

# One or two per family: decoder, encoder, encoder-decoder, MoE, state-space, vision, audio,
# multimodal.
NAMES = (
    "llama",
    "gpt2",
    "bert-mlm",
    "t5",
    "mixtral",
    "qwen2-moe",
    "mamba",
    "vit",
    "whisper",
    "clip",
)
# VLMs whose forward reads values the worker chose (image grids and sizes, tile ids, token
# layout): they run on fake weights; not compared op by op, as a fake run reads those values
# through the dispatcher (unbind, _local_scalar_dense) where a real one reads memory, and
# gets multimodal RoPE positions as an input where a real one computes them in the step.
KNOWN_VALUES = ("qwen2-vl", "llava-next", "mllama")
DATA_VALUES = ("idefics3",)
# Train mode reads values that are not data: LayerDrop's random draw, CTC's labels.
TRAIN_READS = ("parakeet",)
# MoE experts run through aten._grouped_mm, whose meta function the fake mode widens to fp32
# (fake._cpu_meta_gaps): compared in fp32 and in bf16, the dtype of real MoE checkpoints.
DTYPE = {"qwen2-moe": "bfloat16"}
# from_pretrained turns Whisper's frozen sinusoidal position table back into a trainable
# parameter, a model built from its config keeps it frozen: the real backward has a few
# more ops on that table. Compared in eval only.
EVAL_ONLY = {"whisper"}


@pytest.fixture(scope="module")
def zoo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zoo-fake")
    build_zoo(root, [*NAMES, *KNOWN_VALUES, *DATA_VALUES, *TRAIN_READS])
    return root


def _job(
    path: Path, weights: str, mode: str = "eval", phase: str = "prefill", **kw: Any
) -> JobSpec:
    ref = ModelRef(
        display=path.name, slug=path.name, path=str(path), local_dir=str(path), weights=weights
    )
    fields: dict[str, Any] = {
        "key": f"{path.name}/torch_dispatch",
        "model": ref,
        "tracer": "torch_dispatch",
        "tracer_version": "2",
        "exclusive_group": None,
        "framework": "huggingface",
        "mode": mode,
        "device": "cpu",
        "dtype": "float32",
        "batch_size": 2,
        "seq_len": 12,
        "options": {},
        "timeout_s": 60.0,
        "max_rss_gb": None,
        "phase": phase,
    }
    return JobSpec.model_validate({**fields, **kw})


def _trace(job: JobSpec, tmp_path: Path) -> set[str]:
    import orjson

    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface
    from kerneltracer.worker.inputs import InputSpec, build_workload
    from kerneltracer.worker.tracers._dispatch_recorder import (
        DispatchRecorder,
        ModulePaths,
        rows_of,
    )

    ctx = load_huggingface(job, tmp_path)
    if not job.model.fake_weights:
        spec = InputSpec.of(
            ctx.model,
            config=ctx.model.config,
            tokenizer=ctx.tokenizer,
            batch=job.batch_size,
            seq_len=job.seq_len,
            device="cpu",
            float_dtype=ctx.model.dtype,
            train=job.mode == "train",
            omit_all_ones_mask=True,
        )
        ctx.workload = build_workload(spec, job.phase, job.new_tokens)
    try:
        modules = ModulePaths(ctx.model)
        recorder = DispatchRecorder(modules=modules)
        with modules, recorder:
            ctx.step(before_backward=recorder.enter_backward)
    finally:
        ctx.close()
    return {
        orjson.dumps(
            [r["op"], r["phase"], _norm(r["inputs"]), _norm(r["kwargs"]), _norm(r["outputs"])]
        ).decode()
        for r in rows_of(recorder.table)
        # A known value read in Python (a grid's .tolist()): a fake tensor hands the read to
        # the dispatcher, a real one reads its memory; the ops of the model are the same.
        if r["op"] != "aten._local_scalar_dense.default"
    }


def _norm(value: Any) -> Any:
    """Integer ranges and true counts dropped (a fake run has no values), and the strides
    of size-1 dims, which mean nothing and differ between a kernel and its meta function."""
    if isinstance(value, dict) and "shape" in value:
        out = {k: v for k, v in value.items() if k not in ("min", "max", "true", "stride")}
        if "stride" in value:
            out["stride"] = [
                s for s, n in zip(value["stride"], value["shape"], strict=True) if n != 1
            ]
        return out
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


CASES = [(n, m) for m in ("eval", "train") for n in NAMES if m == "eval" or n not in EVAL_ONLY]


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_fake_weights_dispatch_what_real_weights_dispatch(
    zoo_dir: Path, tmp_path: Path, name: str, mode: str
) -> None:
    path, dtype = zoo_dir / name, DTYPE.get(name, "float32")
    real = _trace(_job(path, "real", mode, dtype=dtype), tmp_path)
    fake = _trace(_job(path, "fake", mode, dtype=dtype), tmp_path)
    assert sorted(fake - real) == [], f"{name}: ops only a fake run dispatches"
    assert sorted(real - fake) == [], f"{name}: ops only a real run dispatches"
    assert len(fake) >= 10


def test_decode_phase_runs_on_fake_weights(zoo_dir: Path, tmp_path: Path) -> None:
    path = zoo_dir / "llama"
    real = _trace(_job(path, "real", phase="decode"), tmp_path)
    fake = _trace(_job(path, "fake", phase="decode"), tmp_path)
    assert sorted(fake ^ real) == []
    # Query length 1 against a cache of seq_len (12) keys, as in a real decode step.
    sdpa = [s for s in fake if "scaled_dot_product" in s]
    assert sdpa and all('"shape":[2,2,1,32]' in s and '"shape":[2,1,12,32]' in s for s in sdpa)


def test_fake_weights_build_in_the_config_dtype_without_storage(
    zoo_dir: Path, tmp_path: Path
) -> None:
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface

    ctx = load_huggingface(_job(zoo_dir / "llama", "fake", dtype="auto"), tmp_path)
    try:
        params = list(ctx.model.parameters())
        assert params and all(isinstance(p, FakeTensor) for p in params)
        # auto: the config's torch_dtype (the zoo writes fp32 checkpoints)
        assert {p.dtype for p in params} == {torch.float32}
        assert ctx.dtype == "float32" and any("weights fake" in n for n in ctx.notes)
        inputs = ctx.example_inputs
        assert isinstance(inputs["input_ids"], FakeTensor)
        assert "attention_mask" not in inputs  # see builders._wants_mask
    finally:
        ctx.close()


def test_generate_and_fake_cuda_on_a_cpu_torch_are_refused(zoo_dir: Path, tmp_path: Path) -> None:
    import torch

    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface

    with pytest.raises(UnsupportedError, match="phase generate with weights fake"):
        load_huggingface(_job(zoo_dir / "gpt2", "fake", phase="generate"), tmp_path)
    if torch.backends.cuda.is_built():  # a CUDA build traces fake CUDA tensors instead
        return
    with pytest.raises(UnsupportedError, match="needs a torch built with CUDA"):
        load_huggingface(_job(zoo_dir / "gpt2", "fake", device="cuda"), tmp_path)


def test_only_tracers_that_can_run_on_fake_tensors_accept_fake_weights(
    zoo_dir: Path, tmp_path: Path
) -> None:
    from kerneltracer.tracers.registry import TRACERS
    from kerneltracer.worker.main import _check_tracer

    can = set()
    for name in TRACERS.names_for("huggingface"):
        cls = TRACERS[name]
        job = _job(zoo_dir / "gpt2", "fake", tracer=name)
        try:
            _check_tracer(cls, job)
        except UnsupportedError as exc:
            assert str(exc).startswith(f"{name} with weights fake: ")
            continue
        can.add(name)
    assert {"torch_dispatch", "print_aten", "print_fx", "torch_compile"} <= can
    assert "torch_profiler" not in can


def test_zoo_names_exist() -> None:
    assert {*NAMES, *KNOWN_VALUES, *DATA_VALUES, *TRAIN_READS} <= {e.name for e in ZOO}


@pytest.mark.parametrize(
    ("name", "mode"), [(n, m) for m in ("eval", "train") for n in KNOWN_VALUES]
)
def test_values_the_worker_chose_stay_known_on_fake_weights(
    zoo_dir: Path, tmp_path: Path, name: str, mode: str
) -> None:
    """transformers reads the image grid (``.tolist()``), image sizes, tile ids and the token
    layout: values from the config and our own choices, kept real under the fake mode, so
    the step runs."""
    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface

    ctx = load_huggingface(_job(zoo_dir / name, "fake", mode), tmp_path)
    try:
        inputs = ctx.example_inputs
        assert inputs["input_ids"].constant is not None  # a fake tensor with its value
        assert inputs["pixel_values"].constant is None  # data stays fake
        if name == "qwen2-vl":
            assert inputs["image_grid_thw"].constant is not None
            assert "pixel_values_videos" in inputs and "position_ids" in inputs
        ctx.step()
    finally:
        ctx.close()


@pytest.mark.parametrize("name", TRAIN_READS)
def test_layerdrop_and_ctc_labels_train_on_fake_weights(
    zoo_dir: Path, tmp_path: Path, name: str
) -> None:
    """Parakeet's train step draws LayerDrop's random number per layer and its CTC loss
    masks the labels and sizes its alignment table by their lengths: none of it is data."""
    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface

    ctx = load_huggingface(_job(zoo_dir / name, "fake", "train"), tmp_path)
    try:
        assert ctx.example_inputs["labels"].constant is not None
        ctx.step()
    finally:
        ctx.close()


def test_values_that_are_data_stay_unsupported_naming_the_line(
    zoo_dir: Path, tmp_path: Path
) -> None:
    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface

    # Idefics3 drops all-zero padding images by reading the pixels: truly data.
    with pytest.raises(UnsupportedError, match=r"modeling_idefics3\.py:\d+ in get_image_features"):
        ctx = load_huggingface(_job(zoo_dir / "idefics3", "fake"), tmp_path)
        ctx.close()


def test_torch_compile_generates_the_code_of_a_fake_model_without_running_it(
    zoo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch._inductor.config

    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface
    from kerneltracer.worker.tracers.torch_compile import CompileOptions, TorchCompileTracer

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    # Inductor precompiles its C++ headers into the system temp dir whatever the cache dir
    # (codecache._HEADER_DIR): 155 MB left in /tmp/torchinductor_<user> by every run. Jobs
    # write theirs in their own TMPDIR; this one, in the test process, makes none.
    monkeypatch.setattr(torch._inductor.config, "cpp_cache_precompile_headers", False)
    ctx = load_huggingface(_job(zoo_dir / "llama", "fake", mode="train"), tmp_path)
    try:
        traced = TorchCompileTracer(CompileOptions(steps=2)).trace(ctx)
    finally:
        ctx.close()
    assert traced["codegen_only"] and traced["first_step_s"] is None and traced["step_s"] == []
    # Forward and backward were both lowered (the backward is never run to trigger it).
    fresh = [f for f in traced["code_files"] if f.startswith(str(tmp_path / "inductor"))]
    assert len(fresh) >= 2
    assert all("cpp_fused" in Path(f).read_text() for f in fresh)


def test_module_to_on_fake_parameters_swaps() -> None:
    """A router that calls ``self.classifier.to(self.dtype)`` in its forward (Switch
    Transformers, NLLB-MoE): Module.to() swaps each fake parameter, which torch refuses for a
    tensor something holds a weakref to ("Cannot swap t1 because it has weakref")."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    class Router:
        @staticmethod
        def _from_config(config: Any, dtype: Any) -> Any:
            return torch.nn.Linear(4, 2)

    with fake.fake_session() as mode:
        model = fake.build_fake_model(Router, None, torch.float32, "cpu", mode, False)
        weight = model.weight
        moved = model.to(torch.float32)
        assert moved.weight is weight  # swapped in place, as with real parameters
        assert model(torch.ones(3, 4)).shape == (3, 2)


def _fake_model(module: Any) -> Any:
    class Built:
        @staticmethod
        def _from_config(config: Any, dtype: Any) -> Any:
            return module()  # built where the loader builds: parameters on meta

    return Built


def test_one_value_buffers_keep_their_config_value() -> None:
    """EnCodec keeps its convs' stride and kernel size as buffers and pads with Python ints
    computed from them: built from the config, they are not data, so a fake run folds them."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    class Padded(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv1d(1, 2, 3)
            self.register_buffer("stride", torch.tensor(2), persistent=False)

        def forward(self, x: Any) -> Any:
            frames = torch.ceil((x.shape[-1] - 3) / self.stride).to(torch.int64)
            extra = int(frames * self.stride + 3 - x.shape[-1])  # a value read in Python
            return self.conv(torch.nn.functional.pad(x, (0, extra)))

    with fake.fake_session() as mode:
        model = fake.build_fake_model(_fake_model(Padded), None, torch.float32, "cpu", mode, False)
        with fake.values_unsupported():
            assert model(torch.ones(2, 1, 8)).shape == (2, 2, 7)


def _gated() -> Any:
    """A module that branches in Python on a value computed from its weights: no fake run
    can."""
    import torch

    class Gated(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 4)

        def forward(self, x: Any) -> Any:
            y = self.layer(x)
            if y.sum() > 0:  # a branch on the weights' output
                return y
            return x

    return Gated


def test_a_value_read_on_fake_tensors_is_unsupported_naming_the_line() -> None:
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    with fake.fake_session() as mode:
        model = fake.build_fake_model(
            _fake_model(_gated()), None, torch.float32, "cpu", mode, False
        )
        with pytest.raises(UnsupportedError) as info, fake.values_unsupported():
            model(torch.ones(2, 4))
    message = str(info.value)
    assert "test_fake_weights.py" in message and "in forward" in message
    assert "`if y.sum() > 0:  # a branch on the weights' output`" in message


def test_layerdrop_draws_its_random_number_for_real() -> None:
    """LayerDrop draws one random number per layer (torch.rand([])) and skips the layer on
    it in Python: the number comes from the generator, not from weights or data, so a fake
    run draws it like a real run and goes on (SeamlessM4T, Parakeet, Autoformer train)."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    class LayerDrop(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(8))

        def forward(self, x: Any) -> Any:
            for layer in self.layers:
                if torch.rand([]) < 0.5:  # skip the layer
                    continue
                x = layer(x)
            return x

    torch.manual_seed(0)
    with fake.fake_session() as mode:
        model = fake.build_fake_model(
            _fake_model(LayerDrop), None, torch.float32, "cpu", mode, False
        )
        with fake.values_unsupported():
            out = model(torch.ones(2, 4))
    assert out.shape == (2, 4)


def test_a_value_read_under_a_tracer_names_the_models_line_not_the_tracers() -> None:
    """torch_dispatch's recorder runs every op, so it is the innermost frame below the
    model's read: the reason must still name the model's line."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake
    from kerneltracer.worker.tracers._dispatch_recorder import DispatchRecorder

    with fake.fake_session() as mode:
        model = fake.build_fake_model(
            _fake_model(_gated()), None, torch.float32, "cpu", mode, False
        )
        with pytest.raises(UnsupportedError) as info, fake.values_unsupported(), DispatchRecorder():
            model(torch.ones(2, 4))
    message = str(info.value)
    assert "_dispatch_recorder" not in message
    assert "`if y.sum() > 0:  # a branch on the weights' output`" in message


def test_a_mask_index_on_fake_tensors_says_the_size_depends_on_values() -> None:
    """Idefics2 drops padding images with a boolean index on pixel values: no Python read,
    the output's size is the mask's count of true values."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    class DropPadding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 4)

        def forward(self, x: Any) -> Any:
            x = self.layer(x)
            return x[x.sum(-1) != 0]  # drop padding rows

    with fake.fake_session() as mode:
        model = fake.build_fake_model(
            _fake_model(DropPadding), None, torch.float32, "cpu", mode, False
        )
        with pytest.raises(UnsupportedError) as info, fake.values_unsupported():
            model(torch.ones(2, 4))
    message = str(info.value)
    assert "size depends on a tensor's values (a boolean mask index" in message
    assert "`return x[x.sum(-1) != 0]  # drop padding rows`" in message


def test_ctc_loss_runs_on_fake_log_probs_with_known_target_lengths() -> None:
    """CTC's alignment table is (batch, frames, 2·longest target + 1): torch's fake mode
    refuses the op, but labels are ours (kept known), so their lengths are too."""
    import torch

    from kerneltracer.worker.frameworks.huggingface import fake

    targets = torch.tensor([[1, 2, 3, 4], [2, 3, 1, 0]])
    lengths = torch.tensor([4, 3])
    with fake.fake_session() as mode:
        known = mode.fake_tensor_converter
        logits = torch.nn.Parameter(mode.from_tensor(torch.empty(10, 2, 5)))
        loss = torch.nn.functional.ctc_loss(
            logits.log_softmax(-1),
            known.from_real_tensor(mode, targets, make_constant=True),
            torch.full((2,), 10, dtype=torch.long),
            known.from_real_tensor(mode, lengths, make_constant=True),
        )
        loss.backward()
        assert loss.shape == () and logits.grad is not None
        assert logits.grad.shape == (10, 2, 5)


def test_a_capture_whose_every_method_read_a_value_is_unsupported() -> None:
    """print_fx captures through Dynamo, then export, each calling the model itself: when
    every method stopped on a value read, a fake run ends unsupported, not failed."""
    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    from kerneltracer.worker.frameworks.huggingface import fake
    from kerneltracer.worker.tracers._graphs import run_methods

    def reads() -> list[Any]:
        raise DynamicOutputShapeException("aten.nonzero.default")  # type: ignore[arg-type]

    def breaks() -> list[Any]:
        raise RuntimeError("something else")

    with (
        pytest.raises(UnsupportedError, match="size depends on a tensor's values"),
        fake.values_unsupported(),
    ):
        run_methods([("dynamo", reads), ("export", reads)])
    # One method failing for another reason: the capture failed, as without fake weights.
    with (
        pytest.raises(RuntimeError, match="every capture method failed"),
        fake.values_unsupported(),
    ):
        run_methods([("dynamo", reads), ("export", breaks)])
