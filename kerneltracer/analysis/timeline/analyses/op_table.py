"""Per-op GPU time from an :class:`~.attribution.Attribution`, with the roofline per shape.

One row per (op, input shapes, input dtypes, module group): calls, GPU time launched by the
op itself (``gpu_time_us``, "direct") and by it and every op it called
(``gpu_time_incl_us``), its GPU events, launch overhead (CPU time in its launch calls, summed)
and mean queue delay per GPU event (GPU start minus launch end, clipped at 0; a sum would
add up waits that overlap, and exceed the trace). Unattributed GPU time gets one row
per reason (``kind`` ``unattributed``, the reason in ``unattributed_reason``: a key of
:data:`~.attribution.STATUS_TEXT`), so ``gpu_time_us`` sums to the trace's GPU time.

FLOPs and bytes per call come from the shared cost model (:mod:`kerneltracer.costmodel`)
on the recorded shapes; rates are those estimates over the op's measured direct GPU time.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np

from kerneltracer.analysis.timeline.analyses.attribution import (
    STATUSES,
    Attribution,
    OpInstance,
    OpInstances,
)
from kerneltracer.costmodel import (
    Device,
    OpCost,
    achieved,
    estimate,
    estimate_gemm_like,
    module_group,
)
from kerneltracer.costmodel.profiler_args import (
    shapes_text,
    signature_inputs,
    signature_outputs,
)

_INSTANCE = re.compile(r"_\d+(?=[. ]|$)")
# An op no formula names is read as a GEMM when its name or a kernel it launched says so
# (vendor GEMMs: aiter::gemm_a16w16, vllm::rocm_unquantized_gemm, cutlass_scaled_mm; their
# kernels: hipBLASLt / Tensile Cijk_, CK, wvSplitK, cuBLAS / CUTLASS / nvjet, xmma).
_GEMM_OP = re.compile(r"gemm|(^|[_:])mm($|_)|matmul|(^|[_:])linear$", re.IGNORECASE)
_GEMM_KERNEL = re.compile(
    r"gemm|^Cijk_|xmma|cutlass|cublas|hipblaslt|nvjet|wvSplitK|matmul", re.IGNORECASE
)
# (op, input shapes, input dtypes, module group, kind); an unattributed bucket's input
# shapes hold its reason (STATUSES) and become OpRow.unattributed_reason.
Key = tuple[str, ...]
# Device names in traces (deviceProperties[].name) -> device table keys; longest first.
_NAME_KEYS = ("MI300X", "MI250X", "MI250", "H200", "H100", "B200", "A100")
# ROCm traces often name the GPU "AMD Radeon Graphics": its CU count tells them apart.
_AMD_CUS = {304: "MI300X", 220: "MI250X", 110: "MI250X", 208: "MI250", 104: "MI250"}


@dataclass
class OpRow:
    op: str
    input_shapes: str
    input_dtypes: str
    module: str
    kind: str  # op | annotation | unattributed
    unattributed_reason: str = ""  # why an unattributed bucket's GPU events have no op
    calls: int = 0
    gpu_events: int = 0
    gpu_time_us: float = 0.0
    gpu_time_incl_us: float = 0.0
    launch_overhead_us: float = 0.0
    queue_delay_sum_us: float = 0.0  # over the GPU events with a launch call
    queued_events: int = 0
    python_frame: str = ""
    steps: set[int] = field(default_factory=set)
    est_flops: int | None = None
    est_bytes: int | None = None
    cost_category: str | None = None
    op_category: str = ""  # TraceLens's kind of op (GEMM, CONV_fwd, SDPA_bwd, …); "" if no op
    achieved_tflops: float | None = None
    achieved_tbs: float | None = None
    intensity: float | None = None
    bound: str | None = None
    efficiency: float | None = None
    device: str | None = None

    def record(self) -> dict[str, Any]:
        """The ops.csv row."""
        return {
            "op": self.op,
            "input_shapes": self.input_shapes,
            "input_dtypes": self.input_dtypes,
            "module": self.module,
            "kind": self.kind,
            "unattributed_reason": self.unattributed_reason,
            "calls": self.calls,
            "gpu_events": self.gpu_events,
            "gpu_time_us": round(self.gpu_time_us, 3),
            "gpu_time_incl_us": round(self.gpu_time_incl_us, 3),
            "mean_gpu_time_us": round(self.gpu_time_us / self.calls, 3) if self.calls else None,
            "launch_overhead_us": round(self.launch_overhead_us, 3),
            "mean_queue_delay_us": round(self.queue_delay_sum_us / self.queued_events, 3)
            if self.queued_events
            else None,
            "steps": len({s for s in self.steps if s >= 0}),
            "python_frame": self.python_frame,
            "est_flops": self.est_flops,
            "est_bytes": self.est_bytes,
            "cost_category": self.cost_category,
            "op_category": self.op_category,
            "achieved_tflops": _r(self.achieved_tflops),
            "achieved_tbs": _r(self.achieved_tbs),
            "intensity": _r(self.intensity),
            "bound": self.bound,
            "efficiency": _r(self.efficiency),
            "device": self.device,
        }


@dataclass
class KernelRow:
    op: str
    input_shapes: str
    module: str
    unattributed_reason: str
    kernel: str
    stream: int  # the GPU stream it ran on (-1 when the trace does not say)
    count: int = 0
    total_us: float = 0.0
    min_us: float = math.inf
    max_us: float = 0.0

    def record(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "input_shapes": self.input_shapes,
            "module": self.module,
            "unattributed_reason": self.unattributed_reason,
            "kernel": self.kernel,
            "stream": self.stream,
            "count": self.count,
            "total_us": round(self.total_us, 3),
            "mean_us": round(self.total_us / self.count, 3),
            "min_us": round(self.min_us, 3),
            "max_us": round(self.max_us, 3),
        }


@dataclass
class OpTable:
    rows: list[OpRow]  # by direct GPU time, descending
    kernels: list[KernelRow]
    total_us: float
    device: str | None
    unknown_ops: dict[str, int]  # op -> calls with GPU time and shapes but no estimate


def device_key(trace_props: list[dict[str, Any]]) -> str | None:
    """The device-table name of the trace's first GPU, None when it has none we know."""
    if not trace_props:
        return None
    name = str(trace_props[0].get("name", "")).upper().replace(" ", "")
    key = next((k for k in _NAME_KEYS if k in name), None)
    if key is None and "AMD" in name:
        key = _AMD_CUS.get(int(trace_props[0].get("numSms", 0) or 0))
    return key


def op_table(a: Attribution, device: Device | None) -> OpTable:
    # One tuple per distinct key, shared: a model repeats a few thousand ops, and a tuple
    # (with its folded strings) per instance was ~100 MiB at 3M events.
    keys = _keys(a.instances)
    rows: dict[Key, OpRow] = {}
    kernels: dict[tuple[Any, ...], KernelRow] = {}
    row_kernels: dict[Key, set[str]] = defaultdict(set)  # kernels an op row launched itself
    direct = _gpu_events(a, keys, rows, kernels, row_kernels)
    _inclusive(a.instances, keys, direct, rows)
    for row in rows.values():
        if row.kind == "unattributed":
            row.calls = 0
    gemm_kernels = {k for k, ks in row_kernels.items() if any(map(_GEMM_KERNEL.search, ks))}
    unknown = _costs(rows, a.instances, keys, device, gemm_kernels)
    for row_key, row in rows.items():
        if row.kind == "op":
            launched = row_kernels.get(row_key, set())
            row.op_category = op_category(row.op, row.cost_category, launched)
    ordered = sorted(rows.values(), key=lambda r: (-r.gpu_time_us, -r.gpu_time_incl_us, r.op))
    return OpTable(
        rows=ordered,
        kernels=sorted(kernels.values(), key=lambda k: (-k.total_us, k.op, k.kernel)),
        total_us=a.total_us,
        device=device.key if device else None,
        unknown_ops=unknown,
    )


def _gpu_events(
    a: Attribution,
    keys: list[Key],
    rows: dict[Key, OpRow],
    kernels: dict[tuple[Any, ...], KernelRow],
    row_kernels: dict[Key, set[str]],
) -> np.ndarray:
    """Every GPU event into its op row and kernel row (made in the order the events first
    name them), and each instance's direct GPU time, which it returns.

    By groups, not an event at a time: sums are bincounts, which add each group's values
    in event order from 0.0 as a loop's ``+=`` would, so every figure is that loop's to the
    last bit, and sets get their members in the order it would add them. (No
    ``np.unique``: its first call imports ``numpy.ma``, ~7 ms.)"""
    n_inst = len(a.instances)
    if not a.rows.size:
        return np.zeros(n_inst, dtype=np.float64)
    inst, status = a.op, a.status.astype(np.int64)
    # A -0.0 duration is a zero: + 0.0 makes it one, or a kernel's min and max by groups
    # would show whichever sign of zero the reduction kept.
    dur, step, launch = a.dur + 0.0, a.step.astype(np.int64), a.launch
    # An op's GPU event with a status (a graph replay, ...) is counted in its bucket.
    is_op = np.array([k == "op" for k in a.instances.kind] or [False], dtype=bool)
    at = np.maximum(inst, 0)
    own = (inst >= 0) & ~((status != 0) & is_op[at])
    # The row key of each event, as a number: an instance's key object (one per distinct
    # key, shared), else -1 - its status (the unattributed buckets).
    codes = -1 - status
    if n_inst:
        key_obj = np.fromiter(map(id, keys), dtype=np.int64, count=n_inst)
        codes = np.where(own, key_obj[at], codes)
    firsts, ev_key = _groups_by_first(codes)
    key_of = [
        keys[int(inst[e])] if own[e] else _bucket(int(status[e])) for e in firsts.tolist()
    ]
    by_id = [rows.setdefault(k, _new_row(k)) for k in key_of]
    m = len(key_of)
    events = np.bincount(ev_key, minlength=m).tolist()
    times = np.bincount(ev_key, weights=dur, minlength=m).tolist()
    delay = a.queue_delay()
    queued = np.flatnonzero(~np.isnan(delay))
    waits = np.bincount(ev_key[queued], weights=delay[queued], minlength=m).tolist()
    n_queued = np.bincount(ev_key[queued], minlength=m).tolist()
    # A launch can start several GPU events: its overhead counts once, at its first.
    first_launch = queued[_groups_by_first(launch[queued])[0]] if queued.size else queued
    overhead = a.launch_overhead()[first_launch]
    costs = np.bincount(ev_key[first_launch], weights=overhead, minlength=m).tolist()
    for k, row in enumerate(by_id):
        row.gpu_events, row.gpu_time_us = events[k], times[k]
        row.queue_delay_sum_us, row.queued_events = waits[k], n_queued[k]
        row.launch_overhead_us = costs[k]
    for e in _pairs_by_first(ev_key, step).tolist():
        by_id[ev_key.item(e)].steps.add(step.item(e))
    kname = a.trace.name[a.rows].astype(np.int64)
    names = a.trace.names
    for e in _pairs_by_first(ev_key, kname).tolist():
        k = ev_key.item(e)
        if by_id[k].kind == "op":
            row_kernels[key_of[k]].add(names[kname.item(e)])
    # Kernel rows: (op, input shapes or reason, module) of the row, kernel, stream.
    triples: dict[tuple[str, ...], int] = {}
    triple = np.array([triples.setdefault((k[0], k[1], k[3]), len(triples)) for k in key_of])
    stream = a.trace.stream[a.rows].astype(np.int64)
    per_kernel = _pairs_by_first(_pair_codes(triple[ev_key], kname), stream, groups=True)
    firsts, kid = per_kernel
    count = np.bincount(kid).tolist()
    total = np.bincount(kid, weights=dur).tolist()
    order = np.argsort(kid, kind="stable")
    starts = np.flatnonzero(np.diff(kid[order], prepend=-1))
    low = np.minimum.reduceat(dur[order], starts).tolist()
    high = np.maximum.reduceat(dur[order], starts).tolist()
    for g, e in enumerate(firsts.tolist()):
        key = key_of[ev_key.item(e)]
        kernel, on = names[kname.item(e)], stream.item(e)
        krow = _new_kernel_row(by_id[ev_key.item(e)], kernel, on)
        krow.count, krow.total_us = count[g], total[g]
        krow.min_us, krow.max_us = low[g], high[g]
        kernels[(key[0], key[1], key[3], kernel, on)] = krow
    return np.bincount(inst[own], weights=dur[own], minlength=n_inst).astype(np.float64)


def _bucket(status: int) -> Key:
    return ("(unattributed)", STATUSES[status], "", "", "unattributed")


def _groups_by_first(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first position of each distinct code, in order; each position's group, the
    groups numbered in that order)."""
    order = np.argsort(codes, kind="stable")
    ranked = codes[order]
    new = np.empty(ranked.size, dtype=bool)
    new[:1] = True
    np.not_equal(ranked[1:], ranked[:-1], out=new[1:])
    firsts = order[new]  # a stable sort: each group's first position
    by_first = np.argsort(firsts, kind="stable")
    number = np.empty(by_first.size, dtype=np.int64)
    number[by_first] = np.arange(by_first.size)
    groups = np.empty(codes.size, dtype=np.int64)
    groups[order] = number[np.cumsum(new) - 1]
    return firsts[by_first], groups


def _pair_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One int64 a pair, equal where the pairs are (``a`` and ``b`` non-negative or small:
    indexes and ids; pairs whose codes could overflow are ranked first)."""
    lo = int(b.min())
    span = int(b.max()) - lo + 1
    if int(a.max()) * span >= 1 << 62 or int(a.min()) < 0:
        a = _groups_by_first(a)[1]  # dense numbers, 0 .. n - 1
        if a.size * span >= 1 << 62:
            b = _groups_by_first(b)[1]
            lo, span = 0, a.size
    return a * span + (b - lo)


@overload
def _pairs_by_first(a: np.ndarray, b: np.ndarray) -> np.ndarray: ...
@overload
def _pairs_by_first(
    a: np.ndarray, b: np.ndarray, groups: Literal[True]
) -> tuple[np.ndarray, np.ndarray]: ...
def _pairs_by_first(
    a: np.ndarray, b: np.ndarray, groups: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The first position of each distinct ``(a[i], b[i])`` pair, in order (and with
    ``groups``, each position's pair number, as :func:`_groups_by_first`)."""
    found = _groups_by_first(_pair_codes(a, b))
    return found if groups else found[0]


def _keys(instances: OpInstances) -> list[Key]:
    """Each instance's row key. One tuple per distinct key, shared: a model repeats a few
    thousand ops, and a tuple (with its folded strings) per instance was ~100 MiB at 3M
    events."""
    distinct: dict[Key, Key] = {}
    folded: dict[str, str] = {}
    texts: dict[int, str] = {}
    out = []
    for name, dims, types, module, kind in zip(
        instances.name,
        instances.dims,
        instances.types,
        instances.module,
        instances.kind,
        strict=True,
    ):
        if module:
            group = folded.get(module)
            if group is None:
                # Python module events name instances (Linear_0, LlamaDecoderLayer_17): fold
                # the index as module_group folds layer indices in paths, so rows are per
                # module, not per layer.
                group = folded[module] = _INSTANCE.sub("_*", module_group(module))
            module = group
        # shapes_text once per object: equal shapes are mostly one shared object (the
        # loader decodes each distinct text once), held by the instances meanwhile.
        dims_text = texts.get(id(dims))
        if dims_text is None:
            dims_text = texts[id(dims)] = shapes_text(dims)
        types_text = texts.get(id(types))
        if types_text is None:
            types_text = texts[id(types)] = shapes_text(types)
        k = (name, dims_text, types_text, module, kind)
        out.append(distinct.setdefault(k, k))
    return out


def _new_row(key: Key) -> OpRow:
    if key[4] == "unattributed":
        return OpRow(key[0], "", "", "", key[4], unattributed_reason=key[1])
    return OpRow(op=key[0], input_shapes=key[1], input_dtypes=key[2], module=key[3], kind=key[4])


def _new_kernel_row(row: OpRow, kernel: str, stream: Any) -> KernelRow:
    return KernelRow(
        row.op, row.input_shapes, row.module, row.unattributed_reason, kernel, int(stream)
    )


def _inclusive(
    instances: OpInstances,
    keys: list[Key],
    direct: np.ndarray,
    rows: dict[Key, OpRow],
) -> None:
    """Each instance's GPU time goes to itself and every op enclosing it; an op's calls
    are its instances that led to GPU work (its own or its children's). A call inside a
    call of the same row (an op calling itself with the same inputs) is part of that
    call: its GPU time is already in the outer call's inclusive time, and counting it
    again would double the subtree."""
    # Python floats and ints, not numpy scalars: the same sums in the same order.
    sums: list[float] = direct.tolist()
    parents = instances.parent
    # Instances are made parents first, so children come later: one reverse pass sums up.
    for i in range(len(sums) - 1, -1, -1):
        p = parents[i]
        if p >= 0:
            sums[p] += sums[i]
    incl = np.array(sums, dtype=np.float64)
    counted = (incl > 0) | (direct > 0)
    inner = _inside_same_key(instances, keys, counted)
    steps, frames = instances.step, instances.frame
    for i in np.flatnonzero(counted & ~inner).tolist():
        row = rows.get(keys[i]) or rows.setdefault(keys[i], _new_row(keys[i]))
        row.calls += 1
        row.gpu_time_incl_us += sums[i]
        row.steps.add(steps[i])
        if not row.python_frame and frames[i]:
            row.python_frame = frames[i]


_BACKWARD = re.compile(r"backward|Backward", re.IGNORECASE)
_NAMED = (  # (category, op name pattern, kernel name pattern)
    ("CONV", re.compile(r"conv", re.I), re.compile(r"conv|implicit_?gemm|igemm", re.I)),
    ("SDPA", re.compile(r"attention|sdpa|flash_attn|\bmha", re.I), re.compile(r"fmha|flash", re.I)),
    ("NORM", re.compile(r"norm", re.I), re.compile(r"norm", re.I)),
)
_BY_COST = {"elementwise": "elementwise", "reduction": "reduce", "memory": "memory"}
_BY_COST |= {"embedding": "embedding", "creation": "memory", "view": "other"}


def op_category(op: str, cost_category: str | None, kernels: set[str]) -> str:
    """The op's kind as TraceLens users know it: ``GEMM``, ``CONV_fwd`` / ``CONV_bwd``,
    ``SDPA_fwd`` / ``SDPA_bwd``, ``NORM_fwd`` / ``NORM_bwd``, ``elementwise``, ``reduce``,
    ``memory``, ``embedding``, ``triton``, ``other``: from the cost model's category where
    the op has an estimate, else from its name and the kernels it launched."""
    side = "bwd" if _BACKWARD.search(op) else "fwd"
    by_cost = {"matmul": "GEMM", "conv": "CONV", "attention": "SDPA", "norm": "NORM"}
    found = by_cost.get(cost_category or "")
    if found is None and cost_category is None:
        found = _kind_by_name(op, kernels)
    if found == "GEMM":
        return found
    if found is not None:
        return f"{found}_{side}"
    if cost_category in _BY_COST:
        return _BY_COST[cost_category]
    return _other_kind(op, kernels)


def _kind_by_name(op: str, kernels: set[str]) -> str | None:
    """GEMM / CONV / SDPA / NORM from the op's or its kernels' names; None if neither says."""
    for name, op_pat, kernel_pat in _NAMED:
        if op_pat.search(op) or any(map(kernel_pat.search, kernels)):
            return name
    if _GEMM_OP.search(op) or any(map(_GEMM_KERNEL.search, kernels)):
        return "GEMM"
    return None


def _other_kind(op: str, kernels: set[str]) -> str:
    if "triton" in op.lower() or any(k.startswith("triton") for k in kernels):
        return "triton"
    if any("elementwise" in k for k in kernels):
        return "elementwise"
    return "reduce" if any("reduce" in k.lower() for k in kernels) else "other"


def _inside_same_key(instances: OpInstances, keys: list[Key], counted: np.ndarray) -> np.ndarray:
    """Per instance, whether an enclosing instance has its key; looked up only for the
    ``counted`` instances whose key more than one instance has (the rest cannot be)."""
    out = np.zeros(len(instances), dtype=bool)
    parents = instances.parent
    seen: dict[Key, int] = defaultdict(int)
    for k in keys:
        seen[k] += 1
    for i in np.flatnonzero(counted).tolist():
        key = keys[i]
        if seen[key] < 2:
            continue
        p = parents[i]
        while p >= 0 and keys[p] != key:
            p = parents[p]
        out[i] = p >= 0
    return out


def _costs(
    rows: dict[Key, OpRow],
    instances: OpInstances,
    keys: list[Key],
    device: Device | None,
    gemm_kernels: set[Key],
) -> dict[str, int]:
    first: dict[Key, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    unknown: dict[str, int] = defaultdict(int)
    for key, row in rows.items():
        found = first.get(key)
        if found is None or row.kind != "op" or row.gpu_time_us <= 0:
            continue
        if instances.dims[found] is None:
            continue  # (an op without recorded shapes has no estimate to miss)
        cost = _estimate(instances[found], key in gemm_kernels)
        if cost is None:
            unknown[row.op] += row.calls
            continue
        _fill(row, cost, device)
    return dict(sorted(unknown.items(), key=lambda kv: -kv[1]))


def _estimate(inst: OpInstance, gemm_kernel: bool) -> OpCost | None:
    """The op's formula; else, for an op named or launching a GEMM (``gemm_kernel``), the
    GEMM its input shapes multiply."""
    if "::" not in inst.name:
        return None
    ns, _, name = inst.name.partition("::")
    inputs = signature_inputs(inst.dims, inst.types, inst.concrete)
    if inputs is None:
        return None
    op, outputs = f"{ns}.{name}", signature_outputs(inst.name, inputs)
    cost = estimate(op, inputs, {}, outputs)
    if cost is None and (gemm_kernel or _GEMM_OP.search(name)):
        cost = estimate_gemm_like(op, inputs, {}, outputs)
    return cost


def _fill(row: OpRow, cost: OpCost, device: Device | None) -> None:
    calls = row.calls
    row.est_flops = cost.flops * calls
    row.est_bytes = cost.bytes * calls
    row.cost_category = cost.category
    seconds = row.gpu_time_us * 1e-6
    row.achieved_tflops = row.est_flops / seconds / 1e12
    row.achieved_tbs = row.est_bytes / seconds / 1e12
    row.intensity = row.est_flops / row.est_bytes if row.est_bytes else None
    if device is None:
        return
    total = OpCost(
        flops=row.est_flops,
        bytes_read=cost.bytes_read * calls,
        bytes_written=cost.bytes_written * calls,
        category=cost.category,
        dtype=cost.dtype,
    )
    got = achieved(total, device, seconds)
    row.bound = got.point.bound
    row.efficiency = got.efficiency
    row.device = device.key


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


@dataclass
class KernelSequence:
    """How often op calls launched this exact sequence of kernels, and the mean delay from
    the first launch call's start to its kernel's start (HTA's runtime delay)."""

    op: str
    kernels: tuple[str, ...]
    count: int = 0
    runtime_delay_sum_us: float = 0.0

    @property
    def mean_runtime_delay_us(self) -> float:
        return self.runtime_delay_sum_us / self.count


def kernel_sequences(
    a: Attribution, launch_calls: frozenset[str], keep: np.ndarray | None = None
) -> list[KernelSequence]:
    """Per (op, kernel sequence): op calls that launched it through ``launch_calls``
    (runtime call names, e.g. cudaLaunchKernel), kernels in launch order. ``keep``: a mask
    over trace rows of the GPU events to count (all when None)."""
    t = a.trace
    has = (a.op >= 0) & (a.status == 0) & (a.launch >= 0)
    if keep is not None:
        has &= keep[a.rows]
    names = np.array(t.names, dtype=object)
    q = np.flatnonzero(has)
    q = q[np.isin(names[t.name[a.launch[q]]], list(launch_calls))]
    q = q[np.lexsort((t.ts[a.launch[q]], a.op[q]))]
    seqs: dict[tuple[str, tuple[str, ...]], KernelSequence] = {}
    for op, group in _groups(a.op[q], q):
        kernels = tuple(str(names[t.name[a.rows[g]]]) for g in group)
        first = group[0]
        key = (a.instances.name[op], kernels)
        s = seqs.get(key) or seqs.setdefault(key, KernelSequence(*key))
        s.count += 1
        s.runtime_delay_sum_us += float(t.ts[a.rows[first]] - t.ts[a.launch[first]])
    return sorted(seqs.values(), key=lambda s: (-s.count, s.op, s.kernels))


def _groups(keys: np.ndarray, values: np.ndarray) -> list[tuple[int, list[int]]]:
    """Runs of equal keys (already sorted) with their values."""
    out: list[tuple[int, list[int]]] = []
    for k, v in zip(keys.tolist(), values.tolist(), strict=True):
        if out and out[-1][0] == k:
            out[-1][1].append(v)
        else:
            out.append((k, [v]))
    return out
