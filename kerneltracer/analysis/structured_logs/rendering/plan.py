"""The artifact plan: which file (or link) each envelope becomes, numbered like tlparse.

tlparse numbers artifacts with one counter over the whole log, in log order; a file's
name is ``<stem>_<number>.<ext>`` inside the compile id's directory. The plan reproduces
that from the per-compile-id summaries alone (their ``outputs`` carry sequence numbers),
so every module agrees on names and ``compile_directory.json`` needs no payloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kerneltracer.analysis.structured_logs.envelopes import SENTINEL_GRAPH_TYPES, safe_name

_STACK_TRACES_PREFIX = "inductor_provenance_tracking_kernel_stack_traces"


@dataclass
class Artifact:
    seq: int
    type: str
    compile_key: str  # by_compile_id key of the intermediate
    url: str  # relative to the output dir (or an external URL for links)
    name: str
    number: int
    suffix: str = ""
    readable_url: str | None = None
    is_link: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name.rsplit("/", 1)[-1],
            "number": self.number,
            "readable_url": self.readable_url,
            "suffix": self.suffix,
            "url": self.url,
        }


@dataclass
class Plan:
    by_seq: dict[int, list[Artifact]] = field(default_factory=dict)
    by_compile: dict[str, list[Artifact]] = field(default_factory=dict)

    def files_for(self, seq: int, etype: str) -> list[Artifact]:
        return [a for a in self.by_seq.get(seq, ()) if a.type == etype and not a.is_link]


def _raw_name(out: dict[str, Any], export: bool) -> str | None:
    """File name (before the number suffix) for an output, or None if it yields nothing."""
    etype = out["type"]
    meta = out.get("meta") or {}
    if export:
        if etype == "exported_program":
            return "exported_program.txt"
        if etype == "guard_added" and meta.get("prefix") == "eval":
            return "symbolic_guard_information.html"
        if etype == "propagate_real_tensors_provenance":
            return "symbolic_guard_information.html"
        return None
    if etype in SENTINEL_GRAPH_TYPES or etype == "dynamo_output_graph":
        return f"{etype}.txt"
    if etype == "graph_dump":
        return f"{safe_name(str(meta.get('name')))}.txt"
    if etype == "optimize_ddp_split_child":
        return f"optimize_ddp_split_child_{safe_name(str(meta.get('name')))}.txt"
    if etype == "dynamo_guards":
        return "dynamo_guards.html" if out.get("payload_ok") else None
    if etype == "inductor_output_code":
        fname = meta.get("filename")
        if isinstance(fname, str) and fname.rstrip("/"):
            base = fname.rstrip("/").rsplit("/", 1)[-1]
            stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
            return f"inductor_output_code_{safe_name(stem)}.html"
        return "inductor_output_code.html"
    if etype in (
        "compilation_metrics",
        "bwd_compilation_metrics",
        "aot_autograd_backward_compilation_metrics",
    ):
        return f"{etype}.html"
    if etype == "artifact":
        enc = meta.get("encoding")
        name = safe_name(str(meta.get("name")))
        return f"{name}.txt" if enc == "string" else f"{name}.json" if enc == "json" else None
    return None


def _numbered(name: str, number: int) -> str:
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return f"{name}_{number}"
    return f"{stem}_{number}.{ext}"


def _suffix(name: str) -> str:
    if "cache_miss" in name:
        return "❌"
    if "cache_hit" in name:
        return "✅"
    if "cache_bypass" in name:
        return "❓"
    return ""


def build_plan(summaries: dict[str, dict[str, Any]], *, export: bool = False) -> Plan:
    outputs = sorted(
        (
            (o["seq"], i, key, s["output_dir"], o)
            for key, s in summaries.items()
            for i, o in enumerate(s["outputs"])
        ),
        key=lambda t: (t[0], t[1]),
    )
    plan = Plan(by_compile={key: [] for key in summaries})
    counter = 0
    for seq, _, key, out_dir, out in outputs:
        made: list[Artifact] = []
        if out["type"] == "link" and not export:
            meta = out.get("meta") or {}
            made.append(
                Artifact(
                    seq,
                    "link",
                    key,
                    str(meta.get("url", "")),
                    str(meta.get("name", "")),
                    counter,
                    is_link=True,
                )
            )
            counter += 1
        elif out["type"] == "dump_file" and not export:
            name = f"dump_file/{_dump_name(str((out.get('meta') or {}).get('name')))}.html"
            made.append(Artifact(seq, "dump_file", key, name, name, counter))
            counter += 1
        else:
            raw = _raw_name(out, export)
            if raw is None:
                continue
            fname = _numbered(raw, counter)
            url = f"{out_dir}/{fname}"
            art = Artifact(seq, out["type"], key, url, url, counter, _suffix(url))
            counter += 1
            if fname.startswith(_STACK_TRACES_PREFIX) and fname.endswith(".json"):
                art.readable_url = f"{out_dir}/{fname[:-5]}_readable.html"
                counter += 1
            made.append(art)
        plan.by_seq.setdefault(seq, []).extend(made)
        plan.by_compile[key].extend(made)
    return plan


def _dump_name(name: str) -> str:
    marker = "<eval_with_key>."
    if name.startswith(marker) and name[len(marker) :].isdigit():
        return f"eval_with_key_{name[len(marker) :]}"
    return safe_name(name)
