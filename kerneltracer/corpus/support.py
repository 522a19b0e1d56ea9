"""What a target backend supports: a YAML/CSV list of ops, or the kernels this torch has
registered for a dispatch key.

List entries are matched against full op names (``aten.addmm.default``): an exact name,
an op without overload (``aten.addmm`` or ``addmm``: every overload), ``aten::addmm``
(PyTorch's spelling), or a glob (``aten.add*``).
"""

from __future__ import annotations

import csv
import fnmatch
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from kerneltracer.errors import InputFileError, UsageError
from kerneltracer.inputguard import SMALL_FILE, read_input_text

_LIST_KEYS = ("ops", "supported")
_CSV_TRUE = ("yes", "true", "1", "y", "supported", "ok")
_CSV_FALSE = ("no", "false", "0", "n", "unsupported")


@dataclass(frozen=True)
class Support:
    source: str  # "support.yaml" or "dispatch key PrivateUse1", for the report
    supports: Callable[[str], bool]


def _normalise(entry: str) -> str:
    name = entry.strip().replace("::", ".")
    return name if name.startswith("aten.") or "." in name else f"aten.{name}"


def _matcher(entries: list[str]) -> Callable[[str], bool]:
    exact: set[str] = set()
    globs: list[str] = []
    for raw in entries:
        name = _normalise(raw)
        if any(c in name for c in "*?["):
            globs.append(name)
        else:
            exact.add(name)

    def supports(op: str) -> bool:
        packet = ".".join(op.split(".")[:2])
        if op in exact or packet in exact:
            return True
        return any(fnmatch.fnmatchcase(op, g) for g in globs)

    return supports


def support_from_file(path: Path) -> Support:
    path = Path(path)
    try:  # the input guard: a FIFO, a bomb or bad UTF-8 is one line, not a hang or a crash
        text = read_input_text(path, SMALL_FILE, what="support list")
    except InputFileError as exc:
        raise UsageError(str(exc)) from None
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        entries = _yaml_entries(path, text)
    elif suffix == ".csv":
        entries = _csv_entries(path, text)
    else:
        raise UsageError(f"support list {path}: unknown kind; use one of: .csv, .yaml, .yml")
    return Support(path.name, _matcher(entries))


def _yaml_entries(path: Path, text: str) -> list[str]:
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f":{line + 1}" if line is not None else ""
        raise UsageError(f"support list {path}{where}: not valid YAML") from None
    if isinstance(data, dict):
        key = next((k for k in _LIST_KEYS if k in data), None)
        if key is None:
            keys = ", ".join(_LIST_KEYS)
            raise UsageError(f"support list {path}: a mapping needs one of the keys: {keys}")
        data = data[key]
        values = [v for k, v in node.value] if isinstance(node, yaml.MappingNode) else []
        names = [k.value for k, v in node.value] if isinstance(node, yaml.MappingNode) else []
        # the last one, as safe_load keeps it
        node = values[len(names) - 1 - names[::-1].index(key)] if key in names else None
    if not isinstance(data, list) or not all(isinstance(e, str) for e in data):
        raise UsageError(f"support list {path}: expected a list of op names")
    items = node.value if isinstance(node, yaml.SequenceNode) else []
    lines = [item.start_mark.line + 1 for item in items]
    if len(lines) != len(data):  # not one node per entry: say where the list starts
        lines = [node.start_mark.line + 1 if node is not None else 1] * len(data)
    _no_duplicates(path, zip(lines, data, strict=True))
    return data


def _csv_entries(path: Path, text: str) -> list[str]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        if reader.fieldnames is None or "op" not in reader.fieldnames:
            raise UsageError(f"support list {path}: the CSV needs an 'op' column")
        has_flag = "supported" in reader.fieldnames
        listed: list[tuple[int, str]] = []
        out = []
        for row in reader:
            op = (row.get("op") or "").strip()
            if not op:
                continue
            listed.append((reader.line_num, op))
            if not has_flag or _flag(path, reader.line_num, row.get("supported")):
                out.append(op)
    except csv.Error as exc:  # a NUL byte, a field beyond csv's size limit
        raise UsageError(f"support list {path}:{reader.line_num}: not valid CSV ({exc})") from None
    _no_duplicates(path, listed)
    return out


def _flag(path: Path, line: int, value: str | None) -> bool:
    """A ``supported`` cell: one of the yes or no words, nothing else (not even empty)."""
    word = (value or "").strip().lower()
    if word in _CSV_TRUE or word in _CSV_FALSE:
        return word in _CSV_TRUE
    raise UsageError(
        f"support list {path}:{line}: supported: {value or ''!r} is not a yes/no value; "
        f"use one of: {', '.join(_CSV_TRUE + _CSV_FALSE)}"
    )


def _no_duplicates(path: Path, entries: Iterable[tuple[int, str]]) -> None:
    """Each op once: a second entry (``no`` then ``yes``) would silently win or lose."""
    first: dict[str, int] = {}
    for line, entry in entries:
        name = _normalise(entry)
        if name in first:
            raise UsageError(
                f"support list {path}:{line}: {name} is listed twice (first at line {first[name]})"
            )
        first[name] = line


def support_from_dispatch_key(key: str) -> Support:
    """Ops with a kernel (own or via a composite alias) for ``key`` in this torch."""
    from kerneltracer.worker.replay.dispatcher import dispatch_keys, kernel_lookup

    valid = dispatch_keys()
    if key not in valid:
        raise UsageError(f"unknown dispatch key {key!r}; choose one of: {', '.join(valid)}")
    version, supports = kernel_lookup(key)
    return Support(f"dispatch key {key} (torch {version})", supports)
