"""Signatures from an operator_inp log (ours or another tool's), for replay."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.core.signature import signature_id
from kerneltracer.corpus.model import Signature
from kerneltracer.corpus.operator_inp import OperatorLog, parse_log
from kerneltracer.errors import InputFileError, UsageError
from kerneltracer.inputguard import read_input_text


def signatures_from_log(path: Path) -> tuple[list[Signature], OperatorLog]:
    """One signature per entry; the log's stem stands for the model; outputs unknown."""
    try:
        text = read_input_text(Path(path), what="operator_inp log")
    except InputFileError as exc:
        raise UsageError(f"{path}: cannot read the operator_inp log ({exc})") from None
    log = parse_log(text)
    model = Path(path).stem
    table: dict[str, Signature] = {}
    for op, entries in log.blocks:
        for e in entries:
            sid = signature_id(op, e.args, e.kwargs)
            sig = table.setdefault(sid, Signature(sid, op, e.args, e.kwargs, None))
            sig.model_calls[model] = sig.model_calls.get(model, 0) + e.count
    return list(table.values()), log
