"""print_fx / print_aten at full depth from traces at depths 2 and 3 (tracers/_layers.py):
the graphs written must be the ones tracing every layer gives, byte for byte.

In-process on fake weights, several architectures with 6-7 alike layers (8 for print_aten in
train mode, traced at depths 3 and 4: its backward runs the layers last to first), each
traced both ways through the tracers' own capture functions: node tables, graph texts,
index info and break reports must be equal, and the short path must have been taken.
Models with two stacks (BART, Whisper, LLaVA, 5 + 5 layers) are extended stack by stack
and must give the full trace too. Models whose layers differ (alternating attention, dense
layers before MoE ones), whose two stacks' sizes cannot be told apart, whose layers read
their own index, or whose graph breaks, must fall back to tracing every layer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import job_spec

pytestmark = pytest.mark.slow

_SMALL = {
    "vocab_size": 128,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}
# model_type -> config fields; every one has alike layers, 6 or 7 of them (decoders with
# their LM head, an encoder without).
ALIKE: dict[str, dict[str, Any]] = {
    "llama": {
        "architectures": ["LlamaForCausalLM"],
        **_SMALL,
        "num_hidden_layers": 6,
        "num_key_value_heads": 2,
    },
    "qwen2": {
        "architectures": ["Qwen2ForCausalLM"],
        **_SMALL,
        "num_hidden_layers": 7,
        "num_key_value_heads": 2,
    },
    "mistral": {
        "architectures": ["MistralForCausalLM"],
        **_SMALL,
        "num_hidden_layers": 6,
        "num_key_value_heads": 1,
        "head_dim": 8,
    },
    "phi3": {
        "architectures": ["Phi3ForCausalLM"],
        **_SMALL,
        "num_hidden_layers": 6,
        "pad_token_id": 0,
    },
    "gpt2": {
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": 128,
        "n_embd": 32,
        "n_layer": 7,
        "n_head": 4,
        "n_positions": 64,
    },
}
ALIKE["bert"] = {**_SMALL, "num_hidden_layers": 6}  # an encoder, no LM head
# Scalar multipliers on embeddings, residuals and logits.
ALIKE["granite"] = {**_SMALL, "num_hidden_layers": 6, "num_key_value_heads": 2}
# A state-space model: no attention, a conv and an SSM state per layer.
ALIKE["mamba2"] = {
    "vocab_size": 128,
    "hidden_size": 32,
    "num_hidden_layers": 6,
    "state_size": 8,
    "num_heads": 4,
    "head_dim": 16,
    "n_groups": 1,
    "expand": 2,
    "chunk_size": 8,
}
# Its MLP's activation is a functools.partial made afresh in every layer.
ALIKE["starcoder2"] = {**_SMALL, "num_hidden_layers": 6, "num_key_value_heads": 2}
# Its depth is ``n_layers`` (no num_hidden_layers of its own).
ALIKE["mpt"] = {"vocab_size": 128, "d_model": 32, "n_heads": 4, "n_layers": 6, "max_seq_len": 64}
# Layers not alike: alternating sliding/full attention, dense layers before MoE ones.
UNLIKE: dict[str, dict[str, Any]] = {
    "gemma2": {**_SMALL, "num_hidden_layers": 6, "num_key_value_heads": 2, "head_dim": 8},
    "qwen3_moe": {
        **_SMALL,
        "num_hidden_layers": 6,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 16,
        "mlp_only_layers": [0, 1],
    },
}


# Two stacks each (an encoder and a decoder; a vision tower and the LM), 5 layers apiece:
# the tests lower MIN_DEPTH to 5 and make the short traces free (at this depth four of them
# cost more than one full trace, and would be refused), so that both stacks are extended.
_PAIR_DEPTH = 5
_SEQ2SEQ: dict[str, Any] = {
    "vocab_size": 128,
    "d_model": 16,
    "encoder_layers": _PAIR_DEPTH,
    "decoder_layers": _PAIR_DEPTH,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 32,
    "decoder_ffn_dim": 32,
}
TWO_STACKS: dict[str, dict[str, Any]] = {
    "bart": {
        "architectures": ["BartForConditionalGeneration"],
        **_SEQ2SEQ,
        "max_position_embeddings": 64,
    },
    # Its image features are the vision tower's hidden_states[-2]: the layer before the last.
    "llava": {
        "architectures": ["LlavaForConditionalGeneration"],
        "text_config": {
            "model_type": "llama",
            "vocab_size": 128,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "num_hidden_layers": _PAIR_DEPTH,
            "max_position_embeddings": 64,
        },
        "vision_config": {
            "model_type": "clip_vision_model",
            "image_size": 16,
            "patch_size": 8,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_attention_heads": 2,
            "num_hidden_layers": _PAIR_DEPTH,
            "projection_dim": 16,
        },
        "image_token_index": 120,
    },
}


def _model_dir(root: Path, model_type: str, fields: dict[str, Any], name: str = "") -> Path:
    from transformers import AutoConfig

    path = root / (name or model_type)
    if not (path / "config.json").is_file():
        AutoConfig.for_model(model_type, **fields).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("layer-models")


def _context(
    path: Path, tracer: str, mode: str, tmp_path: Path, phase: str = "prefill"
) -> Iterator[Any]:
    from kerneltracer.core.jobspec import ModelRef
    from kerneltracer.worker.frameworks.huggingface.loader import load_huggingface

    ref = ModelRef(
        display=path.name, slug=path.name, path=str(path), local_dir=str(path), weights="fake"
    )
    job = job_spec(tracer, model=ref, mode=mode, seq_len=16, phase=phase)
    ctx = load_huggingface(job, tmp_path)
    try:
        yield ctx
    finally:
        ctx.close()


Captured = tuple[list[Any], dict[str, Any]]


def _fx(ctx: Any, repeat: bool) -> Captured:
    from kerneltracer.worker.tracers.print_fx import _dynamo_graphs

    extra: dict[str, Any] = {}
    with ctx.values_read():
        graphs = _dynamo_graphs(ctx, extra, repeat_layers=repeat)
    # Which way the graph was made: what the tracer's summary reports, not graph content.
    extra.pop("extended", None)
    return graphs, extra


def _aten(ctx: Any, repeat: bool) -> Captured:
    from kerneltracer.worker.tracers.print_aten import _aot_graphs

    return _aot_graphs(ctx, repeat_layers=repeat), {}


CAPTURES = {"print_fx": _fx, "print_aten": _aten}


def _assert_same(full: Captured, short: Captured) -> None:
    (full_graphs, full_extra), (short_graphs, short_extra) = full, short
    assert [g.kind for g in short_graphs] == [g.kind for g in full_graphs]
    for f, s in zip(full_graphs, short_graphs, strict=True):
        assert s.text == f.text
        assert s.table == f.table
        assert s.info == f.info
    assert short_extra == full_extra


def _fell_back(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "traces every layer" in r.getMessage()]


@pytest.mark.parametrize(
    ("model_type", "tracer", "mode"),
    [(m, t, "eval") for m in ALIKE for t in CAPTURES]
    + [(m, "print_aten", "train") for m in ("llama", "qwen2", "phi3", "mistral")]
    + [("llama", "print_fx", "train")]
    + [("llama", "print_fx", "decode"), ("llama", "print_aten", "decode")],
)
def test_alike_layers_give_the_full_trace(
    model_root: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    model_type: str,
    tracer: str,
    mode: str,
) -> None:
    from kerneltracer.worker.tracers._layers import find_stacks

    fields, name = ALIKE[model_type], model_type
    if tracer == "print_aten" and mode == "train":
        # Traced at depths 3 and 4 (the backward's first layer is named like layer 0):
        # 8 layers, so that the short traces are worth taking.
        depth_key = "n_layer" if "n_layer" in fields else "num_hidden_layers"
        fields, name = {**fields, depth_key: 8}, f"{model_type}-8"
    path = _model_dir(model_root, model_type, fields, name)
    capture = CAPTURES[tracer]
    # "decode": one decode step after a prefill, its cache an input of every layer.
    phase = "decode" if mode == "decode" else "prefill"
    mode = "eval" if mode == "decode" else mode
    for ctx in _context(path, tracer, mode, tmp_path, phase):
        assert find_stacks(ctx.model) is not None
        with caplog.at_level(logging.INFO, logger="kerneltracer.worker.tracers"):
            short = capture(ctx, True)
        assert not _fell_back(caplog)
        _assert_same(capture(ctx, False), short)


@pytest.fixture
def free_short_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    from kerneltracer.worker.tracers import _layers

    monkeypatch.setattr(_layers, "MIN_DEPTH", _PAIR_DEPTH)
    monkeypatch.setattr(_layers, "_short_cost", lambda chosen, full, depth: 0)


@pytest.mark.parametrize(
    ("model_type", "tracer", "mode"),
    # An encoder-decoder's Dynamo graph; a VLM's forward and backward, whose image features
    # read the layer before the last. Each case is 5 traces (~15-25 s): BART's and LLaVA's
    # other pairings, and Whisper's (BART's shape), passed too and are left out for time.
    [("bart", "print_fx", "eval"), ("llava", "print_aten", "train")],
)
@pytest.mark.usefixtures("free_short_traces")
def test_two_stacks_give_the_full_trace(
    model_root: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    model_type: str,
    tracer: str,
    mode: str,
) -> None:
    from kerneltracer.worker.tracers._layers import TRACE_DEPTH, find_stacks

    path = _model_dir(model_root, model_type, TWO_STACKS[model_type])
    capture = CAPTURES[tracer]
    for ctx in _context(path, tracer, mode, tmp_path):
        stacks = find_stacks(ctx.model)
        assert stacks is not None
        depth = TRACE_DEPTH + 1 if mode == "train" else TRACE_DEPTH
        assert len(stacks.plan(depth)) == 2
        with caplog.at_level(logging.INFO, logger="kerneltracer.worker.tracers"):
            short = capture(ctx, True)
        assert not _fell_back(caplog)
        _assert_same(capture(ctx, False), short)


@pytest.mark.parametrize("tracer", list(CAPTURES))
def test_the_summary_says_how_the_graph_was_made_and_the_option_turns_it_off(
    model_root: Path, tmp_path: Path, tracer: str
) -> None:
    from kerneltracer.worker.tracers.print_aten import PrintAtenTracer
    from kerneltracer.worker.tracers.print_fx import PrintFxTracer

    cls = {"print_fx": PrintFxTracer, "print_aten": PrintAtenTracer}[tracer]
    path = _model_dir(model_root, "llama", ALIKE["llama"])
    for ctx in _context(path, tracer, "eval", tmp_path):
        short = cls(cls.Options()).trace(ctx)
        full = cls(cls.Options(extend_layers=False)).trace(ctx)
        assert short.extra["layers_extended"] is True
        assert full.extra["layers_extended"] is False
        assert [g.text for g in short.graphs] == [g.text for g in full.graphs]
    # A shallow model, or one whose layers differ, is traced in full and says so.
    path = _model_dir(model_root, "gemma2", UNLIKE["gemma2"])
    for ctx in _context(path, tracer, "eval", tmp_path):
        assert cls(cls.Options()).trace(ctx).extra["layers_extended"] is False


@pytest.mark.parametrize("model_type", list(UNLIKE))
def test_unlike_layers_are_traced_in_full(
    model_root: Path, tmp_path: Path, model_type: str
) -> None:
    from kerneltracer.worker.tracers._layers import find_stacks

    path = _model_dir(model_root, model_type, UNLIKE[model_type])
    for ctx in _context(path, "print_fx", "eval", tmp_path):
        assert find_stacks(ctx.model) is None


class _Config:
    def __init__(self, depth: int) -> None:
        self.num_hidden_layers = depth


def _toy(depth: int, *, scaled: bool = False, breaks: bool = False) -> Any:
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.layer_idx = index
            self.proj = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.proj(x)) + x
            if scaled:  # GPT-2's scale_attn_by_inverse_layer_idx, in miniature
                y = y / float(self.layer_idx + 1)
            if breaks and self.layer_idx == 1:
                torch._dynamo.graph_break()
            return y

    class Toy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = _Config(depth)
            self.layers = nn.ModuleList(Layer(i) for i in range(depth))
            self.head = nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> Any:
            outs = []
            for layer in self.layers[: self.config.num_hidden_layers]:
                x = layer(x)
                outs.append(x.sum())
            return self.head(x), *outs

    return Toy()


def _explained(model: Any) -> list[Any]:
    import torch

    from kerneltracer.worker.tracers._layers import NotRepeating

    torch._dynamo.reset()
    result = torch._dynamo.explain(model)(torch.randn(2, 8))
    torch._dynamo.reset()
    if len(result.graphs) != 1:
        raise NotRepeating("graph break")
    return list(result.graphs)


def test_index_free_toy_extends_to_the_full_graph() -> None:
    from kerneltracer.worker.tracers._graphs import capture_graph
    from kerneltracer.worker.tracers._layers import find_stacks

    model = _toy(9)
    stack = find_stacks(model)
    assert stack is not None
    (short,) = stack.extended(lambda: _explained(model))
    (full,) = _explained(model)
    a, b = capture_graph(full, "dynamo", "g"), capture_graph(short, "dynamo", "g")
    assert (b.text, b.table) == (a.text, a.table)


@pytest.mark.parametrize("variant", ["scaled", "breaks"])
def test_toy_whose_layers_read_their_index_is_refused(variant: str) -> None:
    from kerneltracer.worker.tracers._layers import NotRepeating, find_stacks

    model = _toy(8, **{variant: True})
    stack = find_stacks(model)
    assert stack is not None  # built alike: only the trace shows the difference
    with pytest.raises(NotRepeating):
        stack.extended(lambda: _explained(model))


def _pair(
    names: tuple[str, str] = ("encoder", "decoder"),
    depths: tuple[int, int] = (8, 8),
    sizes: dict[str, Any] | None = None,
) -> Any:
    """Two stacks, the second reading the first's output in every layer (cross-attention
    in miniature), sized by ``sizes`` (dotted names go into sub-configs)."""
    import torch
    from torch import nn
    from transformers import PretrainedConfig

    config = PretrainedConfig()
    for key, value in (sizes or {"encoder_layers": depths[0], "decoder_layers": depths[1]}).items():
        owner, _, attr = key.rpartition(".")
        if owner and not hasattr(config, owner):
            setattr(config, owner, PretrainedConfig())
        setattr(getattr(config, owner) if owner else config, attr, value)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor, memory: torch.Tensor | None) -> torch.Tensor:
            y = torch.relu(self.proj(x)) + x
            return y if memory is None else y * memory

    class Pair(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config
            for name, depth in zip(names, depths, strict=True):
                setattr(self, name, nn.ModuleList(Layer() for _ in range(depth)))

        def forward(self, x: torch.Tensor) -> Any:
            first, second = (getattr(self, n) for n in names)
            h = x
            for layer in first:
                h = layer(h, None)
            y = x + 1
            for layer in second:
                y = layer(y, h)
            return y.sum(), h

    return Pair()


def _sized_by(model: Any) -> dict[str, str]:
    from kerneltracer.worker.tracers._layers import find_stacks

    stacks = find_stacks(model)
    assert stacks is not None
    subs = {id(v): f"{k}." for k, v in vars(model.config).items() if hasattr(v, "to_dict")}
    return {s.path: subs.get(id(s.config), "") + s.depth_attr for s in stacks.stacks}


@pytest.mark.parametrize(
    ("names", "depths", "sizes", "expected"),
    [
        (  # one length: by the words of the path
            ("encoder", "decoder"),
            (8, 8),
            {"encoder_layers": 8, "decoder_layers": 8},
            {"encoder": "encoder_layers", "decoder": "decoder_layers"},
        ),
        (  # a VLM's sub-configs
            ("vision_tower", "language_model"),
            (8, 8),
            {"vision_config.num_hidden_layers": 8, "text_config.num_hidden_layers": 8},
            {
                "vision_tower": "vision_config.num_hidden_layers",
                "language_model": "text_config.num_hidden_layers",
            },
        ),
        (  # two lengths: by the value, whatever the names
            ("first", "second"),
            (6, 8),
            {"encoder_layers": 6, "decoder_layers": 8},
            {"first": "encoder_layers", "second": "decoder_layers"},
        ),
    ],
)
def test_each_stack_is_cut_through_the_attribute_that_sizes_it(
    names: tuple[str, str], depths: tuple[int, int], sizes: dict[str, Any], expected: dict[str, str]
) -> None:
    assert _sized_by(_pair(names, depths, sizes)) == expected


@pytest.mark.parametrize(
    "sizes",
    [
        {"encoder_layers": 8, "decoder_layers": 8},  # either could size either
        {"num_layers": 8},  # one attribute for both: cutting one stack would cut the other
    ],
)
def test_stacks_whose_sizes_cannot_be_told_apart_are_traced_in_full(sizes: dict[str, Any]) -> None:
    from kerneltracer.worker.tracers._layers import find_stacks

    assert find_stacks(_pair(("first", "second"), (8, 8), sizes)) is None


@pytest.mark.usefixtures("free_short_traces")
def test_two_stack_toy_extends_to_the_full_graph() -> None:
    from kerneltracer.worker.tracers._graphs import capture_graph
    from kerneltracer.worker.tracers._layers import find_stacks

    model = _pair(depths=(7, 9))
    stacks = find_stacks(model)
    assert stacks is not None
    assert [s.depth for s in stacks.plan(2)] == [7, 9]
    (short,) = stacks.extended(lambda: _explained(model))
    (full,) = _explained(model)
    a, b = capture_graph(full, "dynamo", "g"), capture_graph(short, "dynamo", "g")
    assert (b.text, b.table) == (a.text, a.table)


@pytest.mark.parametrize(
    ("depths", "trace_depth", "extended"),
    [
        ((12, 12), 2, []),  # four short traces cost more than one full: BART-base's depth
        ((24, 32), 2, [24, 32]),  # LLaVA-1.5's: the shallower first
        ((20, 20), 2, [20, 20]),
        ((20, 20), 3, []),  # train mode's depths 3 and 4 pay later
        ((32, 3), 2, [32]),  # a shallow stack stays whole
    ],
)
def test_stacks_are_cut_where_the_short_traces_save_time(
    depths: tuple[int, int], trace_depth: int, extended: list[int]
) -> None:
    from kerneltracer.worker.tracers._layers import NotRepeating, find_stacks

    stacks = find_stacks(_pair(depths=depths))
    assert stacks is not None
    if extended:
        assert [s.depth for s in stacks.plan(trace_depth)] == extended
    else:
        with pytest.raises(NotRepeating, match="cost no more than the short traces"):
            stacks.plan(trace_depth)


def test_stacks_that_are_not_one_alike_stack() -> None:
    from torch import nn

    from kerneltracer.worker.tracers._layers import find_stacks

    model = _toy(8)
    model.layers[3].proj = nn.Linear(8, 8, bias=False)
    assert find_stacks(model) is None  # one layer built otherwise
    model = _toy(8)
    model.extra = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])
    stacks = find_stacks(model)  # a second stack too shallow to cut: kept whole
    assert stacks is not None
    assert ([s.path for s in stacks.stacks], stacks.kept_layers) == (["layers"], 2)
    assert find_stacks(_toy(4)) is None  # too shallow to gain anything


# Architectures whose default config (cut down) builds one stack of alike layers, and ones
# whose layers differ by design (sliding/full attention, dense then MoE, hybrid attention).
# Found on the meta device: nothing is traced, so a description that tells alike layers
# apart (a fresh object per layer, a depth attribute not known) shows here first.
_FOUND_ALIKE = [
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "phi",
    "gemma",
    "olmo2",
    "starcoder2",
    "mpt",
    "gpt2",
    "gpt_neox",
    "gptj",
    "falcon",
    "bloom",
    "opt",
    "codegen",
    "cohere",
    "stablelm",
    "granite",
    "deepseek_v2",
    "mamba2",
    "bert",
]
_FOUND_UNLIKE = ["gemma2", "gpt_oss", "deepseek_v3", "qwen3_next", "jamba", "gpt_neo"]


@pytest.mark.parametrize("model_type", _FOUND_ALIKE + _FOUND_UNLIKE)
def test_which_architectures_have_one_alike_stack(model_type: str) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from kerneltracer.worker.tracers._layers import find_stacks

    config = AutoConfig.for_model(model_type)
    sizes = {**_SMALL, "num_key_value_heads": 2, "num_hidden_layers": 6}
    for key, value in sizes.items():
        if key == "num_hidden_layers" or hasattr(config, key):
            setattr(config, key, value)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    assert (find_stacks(model) is not None) == (model_type in _FOUND_ALIKE)


def test_train_mode_print_aten_on_too_few_layers_traces_them_all(
    model_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _model_dir(model_root, "llama", ALIKE["llama"])  # 6 layers: 3 + 4 traced is more
    for ctx in _context(path, "print_aten", "train", tmp_path):
        with caplog.at_level(logging.INFO, logger="kerneltracer.worker.tracers"):
            _aten(ctx, True)
        assert _fell_back(caplog) == [
            "print_aten traces every layer: 6 layers cost no more than the short traces"
        ]


_ENC_DEC = [("model.encoder.layers", "encoder_layers"), ("model.decoder.layers", "decoder_layers")]
# Two-stack architectures at 6 + 6 layers, built on the meta device: which stacks are cut,
# through which attribute. T5's first block alone holds the relative attention bias: its
# blocks are not alike, and it is traced in full.
_TWO_STACK_FOUND: dict[str, tuple[str, dict[str, int], list[tuple[str, str]] | None]] = {
    name: (arch, {"encoder_layers": 6, "decoder_layers": 6}, _ENC_DEC)
    for name, arch in [
        ("bart", "BartForConditionalGeneration"),
        ("mbart", "MBartForConditionalGeneration"),
        ("marian", "MarianMTModel"),
        ("pegasus", "PegasusForConditionalGeneration"),
        ("whisper", "WhisperForConditionalGeneration"),
    ]
} | {
    "t5": ("T5ForConditionalGeneration", {"num_layers": 6, "num_decoder_layers": 6}, None),
    "llava": (
        "LlavaForConditionalGeneration",
        {},
        [
            ("model.vision_tower.encoder.layers", "num_hidden_layers"),
            ("model.language_model.layers", "num_hidden_layers"),
        ],
    ),
}


@pytest.mark.parametrize("model_type", list(_TWO_STACK_FOUND))
def test_which_two_stack_architectures_are_cut(model_type: str) -> None:
    import torch
    import transformers
    from transformers import AutoConfig

    from kerneltracer.worker.tracers._layers import find_stacks

    arch, sizes, expected = _TWO_STACK_FOUND[model_type]
    config = AutoConfig.for_model(model_type, **sizes)
    for sub in ("text_config", "vision_config"):
        if hasattr(config, sub):
            getattr(config, sub).num_hidden_layers = 6
    with torch.device("meta"):
        model = getattr(transformers, arch)(config)
    stacks = find_stacks(model)
    found = None if stacks is None else [(s.path, s.depth_attr) for s in stacks.stacks]
    assert found == expected
