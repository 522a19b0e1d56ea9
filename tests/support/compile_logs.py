"""Synthetic TORCH_TRACE logs of a model's compile: frames with graph breaks, recompiles,
metrics, output code and chromium spans, in the envelope format torch 2.13 writes. For
the benchmark (a fleet of 200 logs without 200 real compiles) and for tests."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import orjson

_BREAKS = (
    ("GB0170", "Data-dependent branching", "if hidden.sum() > 0:"),
    ("GB0059", "Failed to trace builtin operator", 'print("step")'),
    ("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False", "s = x.item()"),
)


@dataclass(frozen=True)
class SynthModel:
    name: str
    frames: int = 3  # frames compiled (breaks + 1)
    recompiles: int = 1  # each frame compiled again this many times
    kernels: int = 4  # cpp kernels per output code
    failed: bool = False
    code_kb: int = 8  # size of each output code payload
    piecewise: int = 0  # vLLM-style piecewise compiles of frame 0 (one per submodule x size)
    src: str | None = None  # the model's source file the frames name (default: site-packages)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.t = 0.0

    def emit(self, env: dict[str, object], payload: str | None = None) -> None:
        self.t += 0.001
        sec = f"{self.t % 60:09.6f}"
        if payload is not None:
            env["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
        head = f"V1124 00:00:{sec} 1000 torch/_dynamo/utils.py:1] ".encode()
        self.lines.append(head + orjson.dumps(env) + b"\n")
        if payload is not None:
            self.lines += [b"\t" + line.encode() + b"\n" for line in payload.split("\n")]


def write_log(path: Path, model: SynthModel, seed: int = 0) -> Path:
    rng = random.Random(seed)
    w = _Writer()
    src = model.src or f"/venv/lib/python3.11/site-packages/models/{model.name}.py"
    for fcid in range(model.recompiles + 1):
        for frame in range(model.frames):
            ids = {"frame_id": frame, "frame_compile_id": fcid, "attempt": 0}
            cid = f"{frame}/{fcid}"
            w.emit({"dynamo_start": {"stack": []}, **ids})
            w.emit({"chromium_event": {}, **ids}, _span("dynamo", cid, "B", w.t))
            if fcid:
                w.emit(
                    {"artifact": {"name": "recompile_reasons", "encoding": "json"}, **ids},
                    f"{frame}/{fcid - 1}: tensor 'x' size mismatch at index 0. "
                    f"expected {fcid}, actual {fcid + 1}",
                )
            if frame < model.frames - 1:
                gb_id, gb_type, code = _BREAKS[frame % len(_BREAKS)]
                line = 10 + 3 * frame
                w.emit(
                    {
                        "artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"},
                        **ids,
                    },
                    f"Graph break in user code at {src}:{line}\nGraph Break Reason: {gb_type}\n"
                    f"  Explanation: synthetic\n\n For more details about this graph break, "
                    f"please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/"
                    f"{gb_id.lower()}.html\n\nUser code traceback:\n"
                    f'  File "{src}", line {line}, in forward\n    {code}',
                )
            w.emit({"dynamo_output_graph": {"sizes": {}}, **ids}, "graph():\n    return x")
            for k in range(model.piecewise if frame == 0 else 0):
                w.emit(
                    {
                        "artifact": {"name": "vllm_piecewise_compile_start", "encoding": "json"},
                        **ids,
                    },
                    orjson.dumps({"piecewise_index": k, "submod_name": f"submod_{k}"}).decode(),
                )
            w.emit({"artifact": {"name": "fx_graph_cache_miss", "encoding": "json"}, **ids}, "{}")
            w.emit(
                {"inductor_output_code": {"filename": f"/tmp/c{frame}.py"}, **ids},
                _code(model.kernels, model.code_kb),
            )
            w.emit({"chromium_event": {}, **ids}, _span("dynamo", cid, "E", w.t))
            total = rng.uniform(0.5, 3.0)
            fail = model.failed and frame == 0 and fcid == 0
            w.emit(
                {
                    "compilation_metrics": {
                        "co_name": "forward"
                        if frame == 0
                        # the rest of forward after the previous frame's break line
                        else f"torch_dynamo_resume_in_forward_at_{10 + 3 * (frame - 1)}",
                        "co_filename": src,
                        "co_firstlineno": 10 + 3 * frame,
                        "guard_count": 20 + frame,
                        "shape_env_guard_count": fcid,
                        "graph_op_count": 5,
                        "entire_frame_compile_time_s": total,
                        "backend_compile_time_s": total * 0.8,
                        "inductor_compile_time_s": total * 0.6,
                        "code_gen_time_s": total * 0.4,
                        "dynamo_time_before_restart_s": 0.0,
                        "fail_type": "BackendCompilerFailed" if fail else None,
                        "fail_reason": "synthetic failure" if fail else None,
                        "restart_reasons": [],
                    },
                    **ids,
                }
            )
    path.write_bytes(b"".join(w.lines))
    return path


def _span(name: str, cid: str, ph: str, t: float) -> str:
    event = {
        "name": name,
        "ts": t * 1e6,
        "args": {"compile_id": cid},
        "ph": ph,
        "cat": "dynamo_timed",
        "tid": 0,
        "pid": 0,
    }
    return orjson.dumps(event, option=orjson.OPT_INDENT_2).decode()


def _code(kernels: int, kb: int) -> str:
    parts = [
        f"cpp_fused_add_{i} = async_compile.cpp_pybinding(['float*'], r'''\n"
        f"extern \"C\" void kernel() {{}}\n''')"
        for i in range(kernels)
    ]
    parts.append("buf0 = extern_kernels.mm(arg0_1, arg1_1)")
    body = "\n".join(parts)
    pad = max(kb * 1024 - len(body), 0)
    return body + "\n# " + "x" * pad
