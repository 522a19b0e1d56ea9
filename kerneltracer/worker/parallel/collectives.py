"""Every collective a rank issues, seen where it is dispatched: c10d and functional ops.

A TorchDispatchMode sees ``c10d.allreduce_`` (``dist.all_reduce``), the functional
``_c10d_functional.*`` ops (DTensor redistributions, functional collectives) and their
autograd twins, with this rank's own buffers: the bytes each rank contributes are the
input's. The group is named by the mesh axis it belongs to (``tp``, ``ep``, ``pp``, ``dp``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kerneltracer.core.parallel import CollectiveRecord

# op name (namespace.name) → (kind, index of the input buffer argument)
_OPS: dict[str, tuple[str, int]] = {
    "c10d.allreduce_": ("all_reduce", 0),
    "c10d.allgather_": ("all_gather", 1),
    "c10d._allgather_base_": ("all_gather", 1),
    "c10d.allgather_into_tensor_coalesced_": ("all_gather", 1),
    "c10d.reduce_scatter_": ("reduce_scatter", 1),
    "c10d._reduce_scatter_base_": ("reduce_scatter", 1),
    "c10d.alltoall_base_": ("all_to_all", 1),
    "c10d.alltoall_": ("all_to_all", 1),
    "c10d.broadcast_": ("broadcast", 0),
    "c10d.send": ("send", 0),
    "c10d.recv_": ("recv", 0),
    "c10d.barrier": ("barrier", 0),
    "_c10d_functional.all_reduce": ("all_reduce", 0),
    "_c10d_functional.all_reduce_": ("all_reduce", 0),
    "_c10d_functional.all_reduce_coalesced": ("all_reduce", 0),
    "_c10d_functional.all_gather_into_tensor": ("all_gather", 0),
    "_c10d_functional.all_gather_into_tensor_coalesced": ("all_gather", 0),
    "_c10d_functional.reduce_scatter_tensor": ("reduce_scatter", 0),
    "_c10d_functional.reduce_scatter_tensor_coalesced": ("reduce_scatter", 0),
    "_c10d_functional.all_to_all_single": ("all_to_all", 0),
    "_c10d_functional.broadcast": ("broadcast", 0),
    "_c10d_functional.broadcast_": ("broadcast", 0),
    "_c10d_functional_autograd.all_gather_into_tensor": ("all_gather", 0),
    "_c10d_functional_autograd.reduce_scatter_tensor": ("reduce_scatter", 0),
    "_c10d_functional_autograd.all_to_all_single": ("all_to_all", 0),
}


def op_key(func: Any) -> str:
    """``namespace.name`` of an OpOverload (``c10d.allreduce_``)."""
    return f"{func.namespace}.{func._opname}"


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item)


class CollectiveRecorder(TorchDispatchMode):
    """Records each collective as a :class:`CollectiveRecord`, in program order.

    ``axis_of`` maps a process group's name to the mesh axis it spans. ``module`` gives the
    module path running now; ``assumption`` what the simulation assumed for the sizes of the
    collective being issued (balanced routing), else None.
    """

    def __init__(
        self,
        axis_of: dict[str, str],
        module: Callable[[], str],
        assumption: Callable[[], str | None],
    ) -> None:
        super().__init__()
        self.axis_of = axis_of
        self.module = module
        self.assumption = assumption
        # Set for a train step: names the module of a collective issued in the backward.
        self.backward_module: Callable[[], str | None] | None = None
        self.phase = "forward"
        self.records: list[CollectiveRecord] = []

    def enter_backward(self) -> None:
        self.phase = "backward"

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        known = _OPS.get(op_key(func))
        if known is not None:
            self._record(func, known, args, kwargs or {})
        return out

    def _record(self, func: Any, known: tuple[str, int], args: Any, kwargs: dict[str, Any]) -> None:
        kind, index = known
        buffers = list(_tensors(args[index])) if len(args) > index else []
        group_name, group_size, group = _group(args, kwargs)
        peer = None
        if kind in ("send", "recv") and len(args) > 2 and isinstance(args[2], int):
            peer = _global_rank(group, args[2])
        first = buffers[0] if buffers else None
        where = self.module() or None
        if self.phase == "backward" and self.backward_module is not None:
            where = self.backward_module()
        nbytes = sum(t.numel() * t.element_size() for t in buffers)
        self.records.append(
            CollectiveRecord(
                seq=len(self.records),
                kind=kind,
                group=self.axis_of.get(group_name, group_name or "world"),
                group_size=group_size,
                dtype=str(first.dtype).removeprefix("torch.") if first is not None else "none",
                shape=tuple(int(d) for d in first.shape) if first is not None else (),
                bytes_per_rank=int(nbytes) if kind != "barrier" else 0,
                op=str(func),
                module=where,
                phase=self.phase,
                peer=peer,
                assumption=(
                    self.assumption()
                    if kind == "all_to_all" and first is not None and first.is_floating_point()
                    else None
                ),
                extra={"buffers": len(buffers)} if len(buffers) > 1 else {},
            )
        )


_REDUCE_OPS = frozenset(
    {"sum", "avg", "product", "min", "max", "band", "bor", "bxor", "premul_sum"}
)


def _global_rank(group: Any, group_rank: int) -> int:
    """c10d's send / recv name the peer by its rank in the group; records use global ranks."""
    import torch.distributed as dist

    if group is None:
        return group_rank
    try:
        return dist.get_global_rank(group, group_rank)
    except (RuntimeError, ValueError):
        return group_rank


def _group(args: Any, kwargs: dict[str, Any]) -> tuple[str, int, Any]:
    """The group's name and size: a functional op names it, a c10d op passes the group."""
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    for value in [*args, *kwargs.values()]:
        if isinstance(value, torch.ScriptObject):
            try:
                value = dist.ProcessGroup.unbox(value)
            except (RuntimeError, TypeError):  # a ReduceOp or Work, not the group
                continue
        if isinstance(value, dist.ProcessGroup):
            return value.group_name, value.size(), value
        if isinstance(value, str) and value and value not in _REDUCE_OPS:
            try:
                group = _resolve_process_group(value)  # type: ignore[arg-type]
            except (RuntimeError, ValueError, KeyError):
                continue
            return value, group.size(), group
    return "", 1, None


class BackwardModules:
    """The module a backward collective belongs to: the one whose forward created the
    autograd node running it.

    Forward hooks see no backward. So as each module's forward ends, the autograd nodes its
    output hangs from that no inner module claimed are labelled with its path (in the node's
    ``metadata``; no op is dispatched); during the backward, the node running now says whose
    it is. Each node is visited once, when its innermost module ends. A collective a hook
    issues (FSDP's unshard before a layer's backward, its reduce-scatter after) is named by
    the node that was running when the hook fired: for FSDP that is a neighbour (the layer
    after it, or the layer's last node), not always the unit whose weights move.
    """

    KEY = "kerneltracer_module"

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self._handle: Any = None

    def __enter__(self) -> BackwardModules:
        from torch.nn.modules import module as nn_module

        self._handle = nn_module.register_module_forward_hook(self._label)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.remove()

    def _label(self, module: Any, _args: Any, out: Any) -> None:
        if not torch.is_grad_enabled():
            return
        path = self.names.get(id(module))
        if path is None:
            return
        stack: list[Any] = [t.grad_fn for t in _tensors(_outputs(out)) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or self.KEY in node.metadata:
                continue
            node.metadata[self.KEY] = path
            stack.extend(fn for fn, _ in node.next_functions)

    def current(self) -> str | None:
        node: Any = torch._C._current_autograd_node()
        return None if node is None else node.metadata.get(self.KEY)


def _outputs(out: Any) -> Any:
    """Tensors of a module's output: a ModelOutput (a dict) gives its values."""
    return list(out.values()) if isinstance(out, dict) else out
