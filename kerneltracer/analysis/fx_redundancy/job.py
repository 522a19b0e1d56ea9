"""Per-job analysis ``fx_redundancy``: redundant computations in every captured FX graph.

Reads a job's ``fx_graph`` artefacts (``graphs/graph_<i>.json`` node tables, format:
:mod:`kerneltracer.fx.nodetable`) and writes ``fx_redundancy.json`` (per graph: node counts,
duplicates, counts per target) and
``fx_redundancy.txt``. Imports nothing heavy at module level: the registry imports this
module in the orchestrator process.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis
from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.errors import KernelTracerError
from kerneltracer.jsonio import atomic_write_json, atomic_write_text

_GRAPH_FILE = re.compile(r"(^|/)graph_(\d+)\.json$")


def graph_files(job: AnalysisJob) -> list[Path]:
    """The job's node-table files, in graph order (listed files, or a listed graphs/ dir)."""
    found: dict[str, Path] = {}
    for rel in job.artefact_names(ArtefactKind.FX_GRAPH):
        rel = rel.rstrip("/")
        if (job.job_dir / rel).is_dir():
            for path in (job.job_dir / rel).glob("graph_*.json"):
                found[str(path.relative_to(job.job_dir))] = path
        else:
            found[rel] = job.job_dir / rel
    return [found[k] for k in sorted(found, key=_graph_index)]


def _graph_index(rel: str) -> tuple[int, str]:
    match = _GRAPH_FILE.search(rel)
    return (int(match.group(2)) if match else -1, rel)


class FxRedundancyAnalysis(JobAnalysis):
    name: ClassVar[str] = "fx_redundancy"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = "redundant computations (CSE opportunities) per FX graph"

    def applies(self, job: AnalysisJob) -> bool:
        return ArtefactKind.FX_GRAPH in job.kinds

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        from kerneltracer.fx.passes.redundant_ops import analyze

        graphs: list[dict[str, Any]] = []
        for path in graph_files(job):
            rel = str(path.relative_to(job.job_dir))
            try:
                result = analyze(path).to_json()
            except KernelTracerError as exc:
                graphs.append({"file": rel, "error": str(exc)})
                continue
            graphs.append({"file": rel, **result})
        report = {
            "model": job.model,
            "graphs": graphs,
            "total_redundant": sum(g.get("redundant", 0) for g in graphs),
            "unreadable_graphs": sum(1 for g in graphs if "error" in g),
        }
        json_path, text_path = out_dir / "fx_redundancy.json", out_dir / "fx_redundancy.txt"
        atomic_write_json(json_path, report)
        atomic_write_text(text_path, _format_summary(report))
        return [json_path, text_path]


def _format_summary(report: dict[str, Any]) -> str:
    lines = [
        f"Model: {report['model']}",
        f"Redundant computations: {report['total_redundant']} in {len(report['graphs'])} graph(s)",
    ]
    for g in report["graphs"]:
        if "error" in g:
            lines.append(f"  {g['file']}: unreadable: {g['error']}")
            continue
        lines.append(
            f"  {g['file']}: {g['redundant']} redundant of {g['compute_nodes']} compute nodes"
        )
        lines += [f"    {d['node']} = {d['same_as']}  ({d['target']})" for d in g["duplicates"]]
    return "\n".join(lines) + "\n"
