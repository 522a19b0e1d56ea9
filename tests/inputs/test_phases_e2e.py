"""Decode and generate through real workers on the tiny Llama, an encoder-decoder (T5) and a
vision-language model (Qwen2-VL); inputs in the status and the report; a model whose inputs
cannot be built ends unsupported, naming the argument."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import kt, make_remote_code_model, status_of, write_config

pytestmark = pytest.mark.e2e

SEQ = 16
NEW = 3
SDPA = "aten._scaled_dot_product_flash_attention_for_cpu.default"
# An encoder-decoder and a vision-language model of the zoo: (name, the decoded tokens).
GENERATING_FAMILIES = {"t5": "decoder_input_ids", "qwen2-vl": "input_ids"}


@pytest.fixture(scope="module")
def phase_run(
    tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path], zoo_dir: Path
) -> Path:
    import os

    root = tmp_path_factory.mktemp("phases")
    llama = str(tiny_models["tiny-llama"])
    odd = make_remote_code_model(
        root / "odd",
        "odd_input_model",
        {
            "model_type": "kt_odd",
            "architectures": ["OddModel"],
            "auto_map": {
                "AutoConfig": "configuration_odd.OddConfig",
                "AutoModel": "modeling_odd.OddModel",
            },
        },
    )
    cfg = write_config(
        root / "config.yaml",
        [
            {"path": llama, "phase": "decode", "tracers": ["torch_dispatch", "print_fx"]},
            {
                "path": llama,
                "phase": "generate",
                "new_tokens": NEW,
                "tracers": ["torch_dispatch", "print_fx"],
            },
            {"path": str(odd), "trust_remote_code": True, "tracers": ["torch_dispatch"]},
            *[
                {
                    "path": str(zoo_dir / name),
                    "phase": phase,
                    "new_tokens": NEW,
                    "tracers": ["torch_dispatch"],
                }
                for name in GENERATING_FAMILIES
                for phase in ("decode", "generate")
            ],
        ],
        defaults={"seq_len": SEQ},
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KT_"))}
    env["HF_HOME"] = str(root / "hf-home")
    proc = kt("run", str(cfg), "--jobs", "2", env=env)
    # The odd model is unsupported, which is not a failure: the run exits 0.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = kt("report", str(root / "run"), env=env)
    assert report.returncode == 0, report.stdout + report.stderr
    return root / "run"


def _rows(run_dir: Path, key: str) -> list[dict[str, Any]]:
    path = run_dir / "jobs" / key / "dispatch_ops.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _layers(tiny_models: dict[str, Path]) -> int:
    return int(
        json.loads((tiny_models["tiny-llama"] / "config.json").read_text())["num_hidden_layers"]
    )


def test_decode_attention_has_one_query_and_seq_len_keys(
    phase_run: Path, tiny_models: dict[str, Path]
) -> None:
    status = status_of(phase_run, "tiny-llama/torch_dispatch.decode")
    assert status["status"] == "ok" and status["phase"] == "decode"
    attention = [r for r in _rows(phase_run, "tiny-llama/torch_dispatch.decode") if r["op"] == SDPA]
    assert attention, "no attention op in the decode step"
    for row in attention:
        query, key, value = (row["inputs"][i]["shape"] for i in range(3))
        assert query[2] == 1 and key[2] == SEQ and value[2] == SEQ
    assert sum(r["count"] for r in attention) == _layers(tiny_models)
    inputs = {i["name"]: i for i in status["inputs"]}
    assert inputs["input_ids"]["shape"] == [1, 1]
    assert inputs["attention_mask"]["shape"] == [1, SEQ]
    cache = _cache(inputs)
    assert cache["type"] == "DynamicCache" and cache["tokens"] == SEQ - 1


def _cache(inputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The one cache input a decode step records, whatever the forward calls it."""
    (cache,) = [i for i in inputs.values() if i["kind"] == "cache"]
    assert cache["name"] in ("cache", "past_key_values")
    return cache


def test_generate_runs_one_forward_per_new_token(
    phase_run: Path, tiny_models: dict[str, Path]
) -> None:
    key = "tiny-llama/torch_dispatch.generate"
    assert status_of(phase_run, key)["status"] == "ok"
    rows = _rows(phase_run, key)
    embeddings = sum(r["count"] for r in rows if r["op"] == "aten.embedding.default")
    assert embeddings == NEW
    # Prefill attends over the prompt, each later step over one more key than the last.
    keys_seen = sorted({r["inputs"][1]["shape"][2] for r in rows if r["op"] == SDPA})
    assert keys_seen == [SEQ + i for i in range(NEW)]
    layers = _layers(tiny_models)
    assert sum(r["count"] for r in rows if r["op"] == SDPA) == NEW * layers


def test_graph_tracers_decode_but_refuse_generate(phase_run: Path) -> None:
    decode = status_of(phase_run, "tiny-llama/print_fx.decode")
    assert decode["status"] == "ok", decode.get("reason")
    generate = status_of(phase_run, "tiny-llama/print_fx.generate")
    assert generate["status"] == "unsupported"
    assert "print_fx cannot trace phase generate" in generate["reason"]


def test_argument_without_builder_is_unsupported_in_one_line(phase_run: Path) -> None:
    status = status_of(phase_run, "odd/torch_dispatch")
    assert status["status"] == "unsupported"
    assert "'sensor_readings' has no input builder" in status["reason"]
    assert "\n" not in status["reason"]
    # Decided while loading: the model never ran a step.
    assert "warmup" not in status["phases"]


def test_report_model_page_lists_inputs(phase_run: Path) -> None:
    pages = list((phase_run / "report").rglob("*.html"))
    page = next(p for p in pages if "tiny-llama" in p.name and p.name != "index.html")
    html = page.read_text()
    assert "<h3>Inputs</h3>" in html
    # The cache under the name this transformers' forward takes (past_key_values before 5.24).
    assert re.search(r"<td><code>(cache|past_key_values)</code></td>", html)
    assert "DynamicCache" in html
    assert "1×1" in html and f"1×{SEQ}" in html


@pytest.mark.parametrize("name", list(GENERATING_FAMILIES))
def test_encoder_decoders_and_vlms_decode_and_generate(phase_run: Path, name: str) -> None:
    decode = status_of(phase_run, f"{name}/torch_dispatch.decode")
    assert decode["status"] == "ok", decode.get("reason")
    inputs = {i["name"]: i for i in decode["inputs"]}
    assert inputs[GENERATING_FAMILIES[name]]["shape"] == [1, 1]  # one new token
    cache = _cache(inputs)
    assert cache["tokens"] >= SEQ - 1
    if name == "t5":
        # The encoder ran at load time: the step only decodes, reading its output.
        assert inputs["encoder_outputs"]["shape"][:2] == [1, SEQ]
    else:
        # The image is in the cache (its tokens before the text); the step has none.
        assert cache["tokens"] > SEQ and "pixel_values" not in inputs
        assert len(inputs["position_ids"]["shape"]) == 3  # multimodal RoPE positions
    generate = status_of(phase_run, f"{name}/torch_dispatch.generate")
    assert generate["status"] == "ok", generate.get("reason")
    rows = _rows(phase_run, f"{name}/torch_dispatch.generate")
    # One decoder forward per new token. T5 runs its encoder once more, and each of its
    # forwards embeds twice: the tokens and the relative position bias.
    embeddings = sum(r["count"] for r in rows if r["op"] == "aten.embedding.default")
    assert embeddings == (2 * (NEW + 1) if name == "t5" else NEW)
