"""Simulate a parallel layout in one process: each distinct rank role on torch's fake process group.

With ``weights: fake`` the model is built on fake tensors (see
:mod:`kerneltracer.worker.frameworks.huggingface.fake`); here, per role, a fake process group
(torch's ``fake`` backend: collectives return at once, touching nothing) of the layout's
world size is started with the role's rank, a CPU ``DeviceMesh`` spans the axes, and the
model is sharded by transformers' own plans (``base_model_tp_plan``, the expert and pipeline
plans, a user plan overriding them rule by rule) before the tracer records one step. So each
role's trace holds the ops and shapes that rank runs, and its ``collectives.jsonl`` every
collective it issues, with the bytes it sends.

Roles: ranks that differ only in their tensor-parallel or data-parallel coordinate run the
same shapes (the same ops on their own shard of the same size), so one rank stands for them;
pipeline stages (different layers) and expert-parallel ranks (different experts) are each
simulated. ``roles.json`` lists each role's rank and the ranks it stands for.

What a fake run cannot know is said, never invented: the tokens each expert receives depend
on the router's values, so under expert parallelism the all-to-all split sizes are those of
balanced routing, and each such record names that assumption.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import JobPaths
from kerneltracer.core.parallel import AXES, Layout
from kerneltracer.core.parallelspec import ParallelSpec, degrees_problem, layout_problem
from kerneltracer.errors import UnsupportedError
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_json

if TYPE_CHECKING:
    from kerneltracer.core.artefacts import ArtefactKind
    from kerneltracer.tracers.base import Tracer, TraceResult
    from kerneltracer.worker.phases import PhaseLog

ROLES_FILE = "roles.json"
_RANK_DIR = re.compile(r"rank_[0-9]+")  # JobPaths.rank(r)
BALANCED = (
    "balanced routing: each rank sends every ep rank an equal share of its tokens x top_k "
    "(a fake run has no router values)"
)


@dataclass(frozen=True)
class Role:
    """One simulated rank and the ranks whose shapes it stands for."""

    rank: int
    coords: dict[str, int]
    ranks: tuple[int, ...]


def roles_of(layout: Layout) -> list[Role]:
    """A role per (pp stage, ep rank); tp and dp peers share one (identical shapes)."""
    roles = []
    for pp, ep in itertools.product(range(layout.pp), range(layout.ep)):
        coords = {"pp": pp, "dp": 0, "ep": ep, "tp": 0}
        peers = tuple(
            layout.rank_of({"pp": pp, "dp": dp, "ep": ep, "tp": tp})
            for dp in range(layout.dp)
            for tp in range(layout.tp)
        )
        roles.append(Role(layout.rank_of(coords), coords, tuple(sorted(peers))))
    return roles


def kind_of(tracer: type[Tracer[Any]], rel: str) -> ArtefactKind | None:
    """An output's kind: a rank's file is what the same file of a one-device job is
    (``rank_0/dispatch_ops.jsonl`` holds dispatch signatures)."""
    head, sep, rest = rel.partition("/")
    if sep and _RANK_DIR.fullmatch(head):
        return tracer.kind_of(rest)
    return tracer.kind_of(rel)


def refuse(job: JobSpec, tracer: Tracer[Any]) -> None:
    """What no layout of this job can run: decided before anything is imported or read."""
    if not job.model.fake_weights:
        raise UnsupportedError(
            "parallel with weights real runs one process per rank (worker.parallel.launch), "
            "not the simulation"
        )
    if tracer.parallel_refusal is not None:
        raise UnsupportedError(f"{job.tracer} with parallel: {tracer.parallel_refusal}")


def check(job: JobSpec, config: dict[str, Any]) -> ParallelSpec:
    """The job's parallel spec, refused before anything is built when the model's config does
    not divide by its degrees (one line naming the valid ones)."""
    assert job.parallel is not None  # the caller dispatches on it
    spec = ParallelSpec.from_json(job.parallel)
    problem = layout_problem(spec, job.mode) or degrees_problem(config, spec)
    if problem is not None:
        raise UnsupportedError(problem)
    return spec


def run(
    job: JobSpec, job_dir: Path, tracer: Tracer[Any], phases: PhaseLog
) -> tuple[TraceResult, list[str]]:
    """Every role of the job's layout: load, warm up, trace and write into ``rank_<r>/``;
    with the notes a reader of the status must know (fake weights, assumptions made)."""
    refuse(job, tracer)
    import transformers

    from kerneltracer.tracers.base import TraceResult
    from kerneltracer.worker.frameworks.huggingface.loader import _model_type

    path = job.model.local_dir or job.model.path
    if path is None:
        raise UnsupportedError("model has no local directory (it was not resolved)")
    remote = job.model.trust_remote_code
    model_type = _model_type(Path(path))
    if model_type is not None and model_type not in transformers.CONFIG_MAPPING and not remote:
        raise UnsupportedError(f"model_type {model_type!r} is not known to transformers")
    config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=remote)
    spec = check(job, config.to_dict())
    paths = JobPaths(job_dir)
    outputs: list[str] = []
    summary_roles: list[dict[str, Any]] = []
    notes: list[str] = []
    for role in roles_of(spec.layout):
        rank_dir = paths.rank(role.rank)
        rank_dir.mkdir(parents=True, exist_ok=True)
        with phases.phase(f"rank {role.rank}"):
            done = _run_role(job, job_dir, path, config, spec, role, tracer)
        rel = rank_dir.relative_to(job_dir)
        outputs += [f"{rel}/{name}" for name in done.result.outputs]
        atomic_write_bytes(
            paths.collectives(role.rank),
            b"".join(r.to_json_line() + b"\n" for r in done.collectives),
        )
        outputs.append(str(paths.collectives(role.rank).relative_to(job_dir)))
        for note in done.notes:
            if note not in notes:
                notes.append(note)
        summary_roles.append(
            {
                "rank": role.rank,
                "coords": role.coords,
                "ranks": list(role.ranks),
                "collectives": len(done.collectives),
                "collective_bytes": sum(r.bytes_per_rank or 0 for r in done.collectives),
                "unknown_bytes": sum(1 for r in done.collectives if r.bytes_per_rank is None),
                "assumed": sum(1 for r in done.collectives if r.assumption),
                **done.extra,
                "summary": done.result.summary,
            }
        )
    roles_doc = {
        "layout": spec.layout.to_json(),
        "label": spec.label(),
        "world_size": spec.layout.world_size,
        "fsdp": spec.fsdp,
        "layers": spec.layers,
        "model_layers": _layers(config),
        "roles": summary_roles,
        "notes": notes,
    }
    atomic_write_json(job_dir / ROLES_FILE, roles_doc)
    outputs.append(ROLES_FILE)
    summary = {
        "layout": spec.label(),
        "world_size": spec.layout.world_size,
        "roles": len(summary_roles),
        "collectives": sum(r["collectives"] for r in summary_roles),
    }
    return TraceResult(outputs=outputs, summary=summary), notes


def _layers(config: Any) -> int | None:
    text = getattr(config, "get_text_config", lambda: config)()
    for key in ("num_hidden_layers", "num_layers", "n_layer"):
        value = getattr(text, key, None)
        if isinstance(value, int):
            return value
    return None


@dataclass
class _RoleResult:
    result: TraceResult
    collectives: list[Any]
    notes: list[str]
    extra: dict[str, Any]


def _run_role(
    job: JobSpec,
    job_dir: Path,
    path: str,
    config: Any,
    spec: ParallelSpec,
    role: Role,
    tracer: Tracer[Any],
) -> _RoleResult:
    import copy

    import torch

    from kerneltracer.worker.frameworks.huggingface import fake
    from kerneltracer.worker.frameworks.huggingface.loader import model_class
    from kerneltracer.worker.parallel.collectives import BackwardModules, CollectiveRecorder
    from kerneltracer.worker.tracers._dispatch_recorder import ModulePaths

    cfg = copy.deepcopy(config)
    if spec.layers is not None:
        _set_layers(cfg, spec.layers)
    dtype = fake.fake_dtype(job.dtype, cfg)
    cls = model_class(cfg, job.model.trust_remote_code)
    with _process_group(spec.layout, role.rank) as (mesh, axis_of), fake.fake_session() as mode:
        torch.manual_seed(0)
        with fake.values_unsupported():
            model = fake.build_fake_model(cls, cfg, dtype, "cpu", mode, job.model.trust_remote_code)
            extra = _shard(model, spec, mesh)
            oracle = ValueOracle()
            # A decode workload runs the prompt once to fill its KV cache: answered too.
            with _answers(oracle, job, cfg):
                ctx = _context(job, job_dir, path, model, cfg, dtype)
                modules = ModulePaths(ctx.model)
                recorder = CollectiveRecorder(axis_of, modules.current, oracle.current_assumption)
                owners = BackwardModules(modules.names)
                recorder.backward_module = owners.current
                # The collectives are recorded in the warmup step (the one every HF tracer
                # runs, untraced): the traced step is the same, and the tracer's own step
                # runs under no mode of ours (a dispatch mode makes Dynamo refuse frames).
                with modules, recorder, owners:
                    ctx.step(before_backward=recorder.enter_backward)
                traced = tracer.trace(ctx)
            rank_dir = JobPaths(job_dir).rank(role.rank)
            result = tracer.write(ctx, traced, rank_dir)
    notes = list(ctx.notes)
    if spec.layout.pp > 1:
        notes.append(
            "pp: transformers' naive pipeline (one microbatch; the last stage broadcasts the "
            "logits to every stage, their shape answered from the config)"
        )
    if spec.layout.ep > 1:
        notes.append(f"ep: all-to-all split sizes assume {BALANCED}")
    if extra.pop("untied_head", False):
        notes.append(
            "tied LM head given its own weight before sharding (transformers ties after "
            "sharding): same per-rank shapes, the backward's sum of the tied gradients left out"
        )
    return _RoleResult(result, recorder.records, notes, extra)


def _set_layers(cfg: Any, layers: int) -> None:
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    for key in ("num_hidden_layers", "num_layers", "num_decoder_layers", "n_layer"):
        if isinstance(getattr(text, key, None), int):
            setattr(text, key, layers)
    # Models that interleave dense and MoE layers name their layer types per layer.
    types = getattr(text, "layer_types", None)
    if isinstance(types, list) and len(types) > layers:
        text.layer_types = types[:layers]
    dense = getattr(text, "first_k_dense_replace", None)
    if isinstance(dense, int) and dense >= layers:
        # DeepSeek-V3's first 3 layers are dense: keep one, so the few layers show both.
        text.first_k_dense_replace = max(0, layers - 1)


def _context(job: JobSpec, job_dir: Path, path: str, model: Any, config: Any, dtype: Any) -> Any:
    from kerneltracer.worker.frameworks.huggingface import fake
    from kerneltracer.worker.frameworks.huggingface.context import HFContext
    from kerneltracer.worker.frameworks.huggingface.loader import _tokenizer, example_workload

    model.train(job.mode == "train")
    tokenizer, _ = _tokenizer(path, job.model.trust_remote_code)
    workload = example_workload(model, config, tokenizer, job, "cpu", dtype)
    return HFContext(
        job=job,
        job_dir=job_dir,
        device="cpu",
        dtype=str(dtype).removeprefix("torch."),
        model=model,
        workload=workload,
        tokenizer=tokenizer,
        notes=fake.notes(config),
    )


@contextlib.contextmanager
def _process_group(layout: Layout, rank: int) -> Iterator[tuple[Any, dict[str, str]]]:
    """A fake process group of the layout's world size as ``rank``, and a CPU mesh over the
    axes in the layout's rank order (pp outermost, tp innermost)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=rank, world_size=layout.world_size, store=FakeStore())
    try:
        shape = tuple(getattr(layout, axis) for axis in AXES)
        mesh = init_device_mesh("cpu", shape, mesh_dim_names=AXES)
        # A group that spans one axis is named by it, even when it is the whole world.
        axis_of: dict[str, str] = {dist.group.WORLD.group_name: "world"}  # type: ignore[union-attr]
        for axis in sorted(AXES, key=lambda a: getattr(layout, a) > 1):
            axis_of[mesh[axis].get_group().group_name] = axis
        yield mesh, axis_of
    finally:
        dist.destroy_process_group()


class _Meshes:
    """What transformers' FSDP asks its mesh manager for, mapped onto our axes."""

    def __init__(self, mesh: Any) -> None:
        self.mesh = mesh

    def get_mesh(self, dims: str | tuple[str, ...]) -> Any:
        names = {"fsdp": "dp", "efsdp": "dp"}
        if isinstance(dims, str):
            return self.mesh[names.get(dims, dims)]
        return self.mesh[tuple(names.get(d, d) for d in dims)]


def _shard(model: Any, spec: ParallelSpec, mesh: Any) -> dict[str, Any]:
    """Shard the model by its own plans (user plans override them) for this rank."""
    from transformers.distributed import DistributedConfig
    from transformers.distributed.expert_parallel import apply_expert_parallelism
    from transformers.distributed.pipeline_parallel import apply_pipeline_parallelism
    from transformers.distributed.tensor_parallel import apply_tensor_parallelism

    lay = spec.layout
    extra: dict[str, Any] = {}
    if not hasattr(model, "_resolve_parallel_plans"):
        raise UnsupportedError(
            f"{type(model).__name__} has no transformers parallel plans (no DistributedMixin)"
        )
    dc = DistributedConfig(
        tp_size=lay.tp,
        pp_size=lay.pp,
        tp_plan=spec.tp_plan,
        ep_plan=spec.ep_plan,
        fsdp_plan=spec.fsdp_plan,
    )
    # Set after validation: transformers counts ep inside fsdp x tp, our layout as an axis of
    # its own (each ep rank holds its own batch: data-parallel attention + expert parallel).
    dc.ep_size = lay.ep
    dc.enable_expert_parallel = lay.ep > 1
    dc.fsdp_size = lay.dp if spec.fsdp else 1
    if lay.tp > 1 and _untie_head(model):
        extra["untied_head"] = True
    try:
        tp_plan, ep_plan, fsdp_plan = model._resolve_parallel_plans(dc)
    except ValueError as exc:
        raise UnsupportedError(f"{type(model).__name__}: {str(exc).splitlines()[0]}") from None
    if lay.pp > 1:
        if not hasattr(model, model.base_model_prefix) or not hasattr(
            getattr(model, model.base_model_prefix), "layers"
        ):
            raise UnsupportedError(
                f"{type(model).__name__}: transformers' pipeline split needs base_model.layers "
                "(decoder-only models)"
            )
        model = apply_pipeline_parallelism(model, mesh["pp"])
        stage = model._pp_stage
        n = len(getattr(model, model.base_model_prefix).layers)
        extra["layers"] = list(stage.layer_range_for_rank(stage.pp_rank, n))
    if lay.tp > 1:
        model = apply_tensor_parallelism(model, mesh["tp"], _held(model, tp_plan))
    if lay.ep > 1:
        if "ep_dispatch_experts" not in ep_plan.values():
            raise UnsupportedError(
                f"{type(model).__name__} has no expert-parallel dispatch in its ep plan"
            )
        model = apply_expert_parallelism(
            model, mesh["ep"], mesh["tp"], ep_plan, ep_implementation="all_to_all"
        )
        experts = _local_experts(model)
        if experts:
            first = mesh["ep"].get_local_rank() * experts
            extra["experts_per_layer"] = experts
            extra["experts"] = [first, first + experts]  # the ids this rank holds, [start, end)
    if spec.fsdp:
        from transformers.distributed.fsdp import apply_fully_sharded_data_parallelism

        model.config.distributed_config = dc
        meshes: Any = _Meshes(mesh)  # what FSDP asks of a TransformersDeviceMesh
        apply_fully_sharded_data_parallelism(model, meshes, fsdp_plan, ep_plan)
    return extra


def _untie_head(model: Any) -> bool:
    """Give a tied LM head (Gemma's is its embedding) a weight of its own before sharding.

    transformers ties after sharding, when each rule has sharded its own parameter; this
    model was tied when built, and one parameter under two rules (vocab-parallel embedding,
    column-parallel head) is not what a rank holds. The shapes each rank runs are the same;
    the backward loses only the sum of the two gradients of the tied weight.
    """
    import torch

    head = getattr(model, "get_output_embeddings", lambda: None)()
    embed = getattr(model, "get_input_embeddings", lambda: None)()
    if head is None or embed is None or head.weight is not embed.weight:
        return False
    weight = embed.weight
    head.weight = torch.nn.Parameter(torch.empty_like(weight), requires_grad=weight.requires_grad)
    return True


def _held(model: Any, plan: dict[str, str]) -> dict[str, str]:
    """The plan's rules for what this rank holds. Rules were expanded over every layer: a
    pipeline stage holds only its own (the others are identity stand-ins). A tied weight
    left in the plan under its second name is dropped (see _untie_head)."""
    from transformers.distributed.pipeline_parallel import PipelineIdentityLayer

    held = {n for n, m in model.named_modules() if not isinstance(m, PipelineIdentityLayer)}
    held |= {n for n, _ in model.named_parameters()}
    return {k: v for k, v in plan.items() if k in held}


def _local_experts(model: Any) -> int | None:
    for module in model.modules():
        if getattr(module, "_is_expert_parallel", False):
            return int(module.num_experts)
    return None


class ValueOracle:
    """Answers the scalar reads a fake run cannot (``.tolist()`` of a split-size tensor) with
    values it was told, and remembers what was assumed for the records issued meanwhile."""

    def __init__(self) -> None:
        self.queue: list[int] = []
        self.assumption: str | None = None

    def current_assumption(self) -> str | None:
        return self.assumption

    @contextlib.contextmanager
    def told(self, values: list[int]) -> Iterator[None]:
        """Answer the next scalar reads with ``values``. The mode is entered only here: a
        dispatch mode over the whole step would make Dynamo refuse the model's frames."""
        from torch.utils._python_dispatch import TorchDispatchMode

        oracle = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(
                self, func: Any, types: Any, args: Any = (), kwargs: Any = None
            ) -> Any:
                import torch

                if func is torch.ops.aten._local_scalar_dense.default and oracle.queue:
                    return oracle.queue.pop(0)
                return func(*args, **(kwargs or {}))

        self.queue = list(values)
        try:
            with _Mode():
                yield
        finally:
            self.queue = []


@contextlib.contextmanager
def _answers(oracle: ValueOracle, job: JobSpec, config: Any) -> Iterator[None]:
    """Patch the two places transformers reads values back to the host under our layouts:
    the all-to-all split sizes (balanced routing) and the logits shape a pipeline stage
    receives (the config's vocabulary)."""
    from transformers.distributed.expert_parallel import AllToAllEP
    from transformers.distributed.pipeline_parallel import PipelineStage

    dispatch = AllToAllEP._dispatch_tokens
    broadcast = PipelineStage.broadcast_from_last

    def balanced(self: Any, hidden_states: Any, top_k_index: Any, top_k_weights: Any) -> Any:
        ep = self.ep_mesh.size()
        me = self.ep_mesh.get_local_rank()
        pairs = int(hidden_states.size(0)) * int(top_k_index.size(-1))
        base, rest = divmod(pairs, ep)
        send = [base + (j < rest) for j in range(ep)]
        recv = [base + (me < rest) for _ in range(ep)]
        oracle.assumption = BALANCED
        with oracle.told([*send, *recv]):
            return dispatch(self, hidden_states, top_k_index, top_k_weights)

    def combine(self: Any, expert_output: Any, state: Any) -> Any:
        oracle.assumption = BALANCED
        try:
            return AllToAllEP_combine(self, expert_output, state)
        finally:
            oracle.assumption = None

    AllToAllEP_combine = AllToAllEP._combine_tokens

    def logits(self: Any, tensor: Any, *, dtype: Any, device: Any) -> Any:
        shape: list[int] = []
        if not self.pp_is_last_stage and self.pp_size > 1:
            text = config.get_text_config() if hasattr(config, "get_text_config") else config
            seq = job.seq_len if job.phase == "prefill" else 1
            shape = [job.batch_size, seq, int(text.vocab_size)]
        with oracle.told(shape):
            return broadcast(self, tensor, dtype=dtype, device=device)

    AllToAllEP._dispatch_tokens = balanced  # type: ignore[method-assign]
    AllToAllEP._combine_tokens = combine  # type: ignore[method-assign]
    PipelineStage.broadcast_from_last = logits  # type: ignore[method-assign]
    try:
        yield
    finally:
        AllToAllEP._dispatch_tokens = dispatch  # type: ignore[method-assign]
        AllToAllEP._combine_tokens = AllToAllEP_combine  # type: ignore[method-assign]
        PipelineStage.broadcast_from_last = broadcast  # type: ignore[method-assign]
