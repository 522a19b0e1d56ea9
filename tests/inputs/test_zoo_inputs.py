"""Inputs for every tested architecture of the zoo, in-process: eval, train (with the head's
loss), decode and generate; and the one-line refusals when inputs cannot be built.

The zoo's siblings (entries that share a tested entry's input path) run in
bench/bench_zoo.py, not here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.dependencies import missing_dependency
from kerneltracer.worker.frameworks.huggingface.zoo import ZOO, ZooEntry
from kerneltracer.worker.inputs import InputSpec, build_inputs, build_workload, describe
from kerneltracer.worker.inputs.labels import head_of
from tests.inputs.zooset import TESTED

SEQ = 12
# Families whose models generate text: decode and generate must work for them.
GENERATING = {"decoder", "encoder-decoder", "moe", "state-space", "hybrid", "recurrent"}
GENERATING_EXTRA = {
    "whisper",
    "llava",
    "qwen2-vl",
    "llava-next",
    "instructblip",
    "idefics3",
    "video-llava",
    "mllama",
    "fuyu",
    "qwen2-audio",
    "seamless-m4t",
}
# Models whose generate() is one forward and a greedy pass (CTC): decode is refused.
NOT_AUTOREGRESSIVE = {"parakeet"}
# Models that generate but return no cache to decode from: decode is refused, naming it.
# InstructBLIP keeps its language model's cache inside language_model_outputs.
NO_CACHE = {"xlm", "instructblip", "instructblip-video"}


def _load(zoo_dir: Path, entry: ZooEntry) -> tuple[Any, Any]:
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(zoo_dir / entry.name)
    cls = getattr(transformers, config.architectures[0])
    model = cls.from_pretrained(zoo_dir / entry.name, config=config, dtype=torch.float32)
    return model, config


def _spec(model: Any, config: Any, train: bool) -> InputSpec:
    import torch

    model.train(train)
    return InputSpec.of(
        model,
        config=config,
        tokenizer=None,
        batch=2,
        seq_len=SEQ,
        device="cpu",
        float_dtype=torch.float32,
        train=train,
    )


def test_zoo_spans_every_family() -> None:
    families = {e.family for e in ZOO}
    assert families == {
        "decoder",
        "encoder",
        "encoder-decoder",
        "moe",
        "state-space",
        "hybrid",
        "recurrent",
        "vision",
        "video",
        "detection",
        "audio",
        "time-series",
        "multimodal",
    }
    assert families == {e.family for e in TESTED}  # every family has a tested entry
    assert len(ZOO) >= 60
    assert len({e.arch for e in ZOO}) == len(ZOO)
    names = {e.name for e in ZOO}
    assert all(e.sibling in names for e in ZOO if e.sibling is not None)


@pytest.mark.parametrize("entry", TESTED, ids=lambda e: e.name)
def test_eval_and_train_steps_run(zoo_dir: Path, entry: ZooEntry) -> None:
    import torch

    model, config = _load(zoo_dir, entry)
    with torch.no_grad():
        build_workload(_spec(model, config, False), "prefill", 1).run(model)
    spec = _spec(model, config, True)
    workload = build_workload(spec, "prefill", 1)
    try:
        out = workload.run(model)
    except ImportError as exc:
        # DETR's loss needs scipy: without it the end is a missing dependency, named.
        missing = missing_dependency(exc)
        assert missing is not None and entry.name == "detr", exc
        assert missing.package == "scipy" and "pip install scipy" in missing.install
        return
    names = {row["name"] for row in describe(workload)}
    head = head_of(spec)
    # A head whose forward takes no targets (OWL-ViT's detector) trains on a stand-in loss.
    if head is not None and "labels" in spec.params:
        # A known head gets targets, so the loss (and its backward) is the model's own.
        assert getattr(out, "loss", None) is not None, f"{entry.arch}: no loss from {names}"
        out.loss.backward()
        assert names & {"labels", "start_positions", "future_values"}
    elif head is not None:
        from kerneltracer.worker.frameworks.huggingface.context import loss_of

        loss_of(out).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads or head is None


@pytest.mark.parametrize("entry", TESTED, ids=lambda e: e.name)
def test_decode_and_generate(zoo_dir: Path, entry: ZooEntry) -> None:
    import torch

    model, config = _load(zoo_dir, entry)
    spec = _spec(model, config, False)
    if entry.name in NO_CACHE:
        with pytest.raises(UnsupportedError, match="returned no cache"):
            build_workload(spec, "decode", 1)
        return
    if entry.name in NOT_AUTOREGRESSIVE:
        with pytest.raises(UnsupportedError, match="forward takes no input_ids"):
            build_workload(spec, "decode", 1)
        return
    if entry.family not in GENERATING and entry.name not in GENERATING_EXTRA:
        with pytest.raises(UnsupportedError, match="needs a model that generates"):
            build_workload(spec, "decode", 1)
        return
    decode = build_workload(spec, "decode", 1)
    rows = {r["name"]: r for r in describe(decode)}
    token = "decoder_input_ids" if spec.encoder_decoder else "input_ids"
    assert rows[token]["shape"] == [2, 1]
    with torch.no_grad():
        first = decode.run(model).logits
        again = decode.run(model).logits  # the cache did not grow between repeated steps
    assert first.shape == again.shape
    # RWKV's one-token path (transformers 5.23) broadcasts its output to (batch, batch,
    # vocab) at batch 2: the model's own shape, the same step generate() runs.
    assert first.shape[1] == 1 or entry.family == "recurrent"
    if entry.family not in ("state-space", "hybrid", "recurrent"):
        # A recurrent state is updated in place: its values drift between steps, its
        # shapes (all a trace records) do not.
        torch.testing.assert_close(first, again)
    # One query against the whole prompt: the step's cache holds every token but the new
    # one, and grows by exactly that one (whatever this transformers calls the cache).
    step = decode.inputs()
    cache = step[decode.cache_arg]
    held = _tokens(cache)
    if held:
        # Vision-language prompts also hold their image tokens, ahead of the text.
        assert held >= SEQ - 1
        with torch.no_grad():
            model(**step)
        assert _tokens(cache) == held + 1
    generated = build_workload(spec, "generate", 3).run(model)
    prompt = 0 if spec.encoder_decoder else build_inputs(spec)["input_ids"].shape[1]
    assert generated.shape[-1] - prompt in (3, 4)  # seq2seq outputs start with the start token


def _tokens(cache: object) -> int:
    """The tokens a KV cache holds (0 for recurrent states, which hold no positions)."""
    length = getattr(cache, "get_seq_length", None)
    try:
        return int(length()) if callable(length) else 0
    except Exception:  # some state caches cannot tell
        return 0


def test_train_phase_decode_is_refused(zoo_dir: Path) -> None:
    model, config = _load(zoo_dir, ZOO[0])
    with pytest.raises(UnsupportedError, match="phase decode is an inference step"):
        build_workload(_spec(model, config, True), "decode", 1)


class _NeedsSensor:
    """A forward with a required argument that no builder knows."""

    def forward(self, input_ids: Any, sensor_readings: Any, attention_mask: Any = None) -> None:
        return None


class _NoData:
    def forward(self, step_count: int = 0) -> None:
        return None


def _bare_spec(model: Any) -> InputSpec:
    import torch

    config = type("Config", (), {"vocab_size": 10})()
    return InputSpec.of(
        model,
        config=config,
        tokenizer=None,
        batch=1,
        seq_len=4,
        device="cpu",
        float_dtype=torch.float32,
        train=False,
    )


def test_required_argument_without_builder_is_named() -> None:
    with pytest.raises(UnsupportedError) as info:
        build_inputs(_bare_spec(_NeedsSensor()))
    message = str(info.value)
    assert "'sensor_readings' has no input builder" in message
    assert "\n" not in message and "pixel_values" in message  # lists the builders


def test_forward_without_any_data_argument() -> None:
    with pytest.raises(UnsupportedError, match="takes none of input_ids, pixel_values"):
        build_inputs(_bare_spec(_NoData()))


def test_vlm_prompt_has_one_placeholder_per_image_feature(zoo_dir: Path) -> None:
    entry = next(e for e in ZOO if e.name == "llava")
    model, config = _load(zoo_dir, entry)
    inputs = build_inputs(_spec(model, config, False))
    image_tokens = int((inputs["input_ids"][0] == config.image_token_index).sum())
    side = config.vision_config.image_size // config.vision_config.patch_size
    assert image_tokens == side * side  # patches; the CLS feature is dropped by default
    assert inputs["input_ids"].shape[1] == image_tokens + SEQ


def test_inputs_are_deterministic(zoo_dir: Path) -> None:
    import torch

    entry = next(e for e in ZOO if e.name == "wav2vec2-ctc")
    model, config = _load(zoo_dir, entry)
    a = build_inputs(_spec(model, config, True))
    b = build_inputs(_spec(model, config, True))
    assert a.keys() == b.keys() == {"input_values", "labels"}
    for key in a:
        torch.testing.assert_close(a[key], b[key])
    # The conv front end turns the samples into exactly seq_len frames.
    frames = model._get_feat_extract_output_lengths(torch.tensor(a["input_values"].shape[1]))
    assert int(frames) == SEQ
