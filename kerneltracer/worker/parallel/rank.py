"""One rank of a multi-rank job: forked by its launcher (:mod:`kerneltracer.worker.parallel.start`)
or ``python -m kerneltracer.worker.parallel.rank JOB.json``.

Started by :mod:`kerneltracer.worker.parallel.launch` with the usual torch.distributed
variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``). The rank
joins the process group (gloo on CPU, nccl on GPU, collectives time out after the job's
timeout), loads the model's real weights, shards it by the model's own plans exactly as the
fake simulation does (:func:`kerneltracer.worker.parallel.simulate._shard`), records its
collectives in the warmup step, traces one step and writes into ``rank_<r>/``; last, its
``RANK_STATUS.json``, which the launcher folds into the job's one status.

A rank dies with its launcher (parent-death SIGKILL) and names itself ``kt-rank-<r>`` (what
``ps -o comm`` and the supervisor's memory check show). SIGUSR1 dumps every thread's Python
stack into ``rank_<r>/stacks.txt`` and SIGUSR2 torch's flight recorder
(:mod:`kerneltracer.worker.parallel.flightrec`): the launcher asks for both when a peer fails
or the job's time is up, to say what this rank was doing (waiting in which collective).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from kerneltracer.core.jobspec import JobFile, JobSpec
from kerneltracer.core.layout import JobPaths
from kerneltracer.core.parallel import AXES
from kerneltracer.core.parallelspec import ParallelSpec
from kerneltracer.core.status import JobStatus, describe_output
from kerneltracer.environ import KtEnv
from kerneltracer.errors import UnsupportedError
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_json
from kerneltracer.process import lifeline
from kerneltracer.process.supervisor import rank_process_name
from kerneltracer.worker.failure import classify_exception
from kerneltracer.worker.parallel import flightrec
from kerneltracer.worker.phases import PhaseLog

log = logging.getLogger("kerneltracer.worker.rank")

RANK_STATUS = "RANK_STATUS.json"
STACKS = "stacks.txt"
RANK_LOG = "rank.log"
RANK_PHASES = JobPaths(Path()).phase_log.name  # the job's own name, in the rank dir


def main(argv: list[str], launcher: int | None = None) -> int:
    """``launcher``: the pid of the launcher that forked this rank (a spawned rank: None)."""
    job_file = Path(argv[0]).resolve()
    job = JobFile.read(job_file).job
    job_dir = job_file.parent
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    rank_dir = JobPaths(job_dir).rank(rank)
    rank_dir.mkdir(parents=True, exist_ok=True)
    # A forked rank's launcher may have died between the fork and here: nobody would signal.
    if not lifeline.arm_parent_death(signal.SIGKILL, launcher):
        os._exit(1)
    lifeline.set_name(rank_process_name(rank))
    stacks = open(rank_dir / STACKS, "w")  # noqa: SIM115 - open for the process's life
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    faulthandler.enable()
    flight = flightrec.Recorder(rank, rank_dir)
    flight.arm()  # before torch starts a thread
    # force: a forked rank inherits the launcher's handlers (on its log, its stream objects)
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s rank {rank} %(message)s", force=True
    )
    phases = PhaseLog(rank_dir / RANK_PHASES, node=f"rank {rank}")
    t0 = time.monotonic()
    fields: dict[str, Any] = {"rank": rank, "pid": os.getpid()}
    try:
        outputs, summary, notes = run_rank(job, job_dir, rank, world, phases, flight)
        fields.update(
            status=JobStatus.OK.value,
            outputs=[describe_output(job_dir, rel, None).model_dump() for rel in outputs],
            summary=summary,
            notes=notes,
        )
    except BaseException as exc:
        phase = phases.failed or phases.current
        log.exception("rank %d failed in phase %s", rank, phase)
        status, error = classify_exception(exc, phase, rank_dir)
        fields.update(status=status.value, error=error.model_dump(), phase=phase)
        fields["collective"] = distributed_call(exc)
        try:  # what its peers' recorders are asked for, this rank's own at its failure
            flight.dump()
        except Exception:
            log.exception("rank %d: dumping the flight recorder failed", rank)
    fields["phases"] = phases.durations
    fields["duration_s"] = round(time.monotonic() - t0, 3)
    atomic_write_json(rank_dir / RANK_STATUS, fields)
    sys.stdout.flush()
    sys.stderr.flush()
    # As the worker does: skip teardown (gloo / nccl atexit hooks can hang once peers left).
    os._exit(0 if fields["status"] == JobStatus.OK.value else 1)


def distributed_call(exc: BaseException) -> str | None:
    """The innermost torch.distributed function the exception came through (``all_reduce``):
    the collective a rank was in when its peer was lost."""
    import traceback

    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if "torch/distributed" in frame.filename.replace("\\", "/"):
            found = frame.name
    return found


def _fault(rank: int, where: str) -> bool:
    """The test hook ``KT_RANK_FAULT=<rank>:<where>``: fail this rank at ``where``."""
    fault = KtEnv.read().rank_fault
    return fault == f"{rank}:{where}"


def run_rank(
    job: JobSpec,
    job_dir: Path,
    rank: int,
    world: int,
    phases: PhaseLog,
    flight: flightrec.Recorder,
) -> tuple[list[str], dict[str, Any], list[str]]:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    from kerneltracer.tracers.registry import TRACERS

    cls = TRACERS[job.tracer]
    tracer = cls(cls.Options.model_validate(job.options))
    if job.parallel is None:
        raise UnsupportedError("a rank job needs parallel")
    spec = ParallelSpec.from_json(job.parallel)
    cuda = torch.cuda.is_available() and job.device != "cpu"
    local = int(os.environ.get("LOCAL_RANK", rank))
    if cuda and local >= torch.cuda.device_count():
        raise UnsupportedError(
            f"parallel {spec.label()} needs {world} GPUs on the node, {torch.cuda.device_count()} "
            "visible to the job (the orchestrator gives a multi-rank job one GPU per rank); "
            "device cpu runs the ranks on gloo"
        )
    device = f"cuda:{local}" if cuda else "cpu"
    with phases.phase("init"):
        dist.init_process_group(
            "nccl" if cuda else "gloo",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=job.timeout_s),
        )
    try:
        shape = tuple(getattr(spec.layout, axis) for axis in AXES)
        mesh = init_device_mesh(device.split(":")[0], shape, mesh_dim_names=AXES)
        axis_of: dict[str, str] = {dist.group.WORLD.group_name: "world"}  # type: ignore[union-attr]
        for axis in sorted(AXES, key=lambda a: getattr(spec.layout, a) > 1):
            axis_of[mesh[axis].get_group().group_name] = axis
        world_name = dist.group.WORLD.group_name  # type: ignore[union-attr]
        flight.groups[world_name] = {"axis": axis_of[world_name], "ranks": list(range(world))}
        for axis in AXES:  # the flight recorder names groups; its dumps say their axes
            group = mesh[axis].get_group()
            flight.groups[group.group_name] = {
                "axis": axis_of[group.group_name],
                "ranks": dist.get_process_group_ranks(group),
            }
        with phases.phase("load"):
            if _fault(rank, "load"):
                raise RuntimeError(f"rank {rank}: fault injected at load (KT_RANK_FAULT)")
            while _fault(rank, "hang"):  # stands for a load that never ends
                time.sleep(1.0)
            if _fault(rank, "memory"):  # a rank whose load takes 1 GiB more, and holds it
                held = b"\x01" * (1 << 30)
                while held:
                    time.sleep(1.0)
            ctx, extra = _load(job, job_dir, spec, mesh, device)
        from kerneltracer.worker.parallel.collectives import BackwardModules, CollectiveRecorder
        from kerneltracer.worker.tracers._dispatch_recorder import ModulePaths

        modules = ModulePaths(ctx.model)
        recorder = CollectiveRecorder(axis_of, modules.current, lambda: None)
        owners = BackwardModules(modules.names)
        recorder.backward_module = owners.current
        # As the simulation does: collectives recorded in the warmup step, the traced step
        # under the tracer's own modes only.
        with phases.phase("warmup"), modules, recorder, owners:
            ctx.step(before_backward=recorder.enter_backward)
        if _fault(rank, "forward"):
            _die_in_forward(ctx.model, rank)
        with phases.phase("trace"):
            traced = tracer.trace(ctx)
        rank_dir = JobPaths(job_dir).rank(rank)
        with phases.phase("write"):
            result = tracer.write(ctx, traced, rank_dir)
            atomic_write_bytes(
                JobPaths(job_dir).collectives(rank),
                b"".join(r.to_json_line() + b"\n" for r in recorder.records),
            )
        rel = rank_dir.relative_to(job_dir)
        outputs = [f"{rel}/{name}" for name in result.outputs]
        outputs.append(str(JobPaths(job_dir).collectives(rank).relative_to(job_dir)))
        summary = {
            **result.summary,
            **extra,
            "collectives": len(recorder.records),
            "collective_bytes": sum(r.bytes_per_rank or 0 for r in recorder.records),
        }
        notes = list(ctx.notes)
        if extra.get("untied_head"):
            notes.append("tied LM head given its own weight before sharding (as simulated)")
        return outputs, summary, notes
    finally:
        # A failed peer leaves collectives that would block here: only a clean end tears down.
        if sys.exc_info()[0] is None:
            dist.destroy_process_group()


def _load(job: JobSpec, job_dir: Path, spec: ParallelSpec, mesh: Any, device: str) -> Any:
    """The model's real weights, sharded by the model's own plans (the simulation's code)."""
    import torch
    import transformers

    from kerneltracer.worker.frameworks.huggingface.loader import (
        _context,
        model_class,
        resolve_dtype,
    )
    from kerneltracer.worker.parallel import simulate

    transformers.utils.logging.disable_progress_bar()
    path = job.model.local_dir or job.model.path
    if path is None:
        raise UnsupportedError("model has no local directory (it was not resolved)")
    remote = job.model.trust_remote_code
    config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=remote)
    simulate.check(job, config.to_dict())
    if spec.layers is not None:
        raise UnsupportedError("parallel.layers builds a cut-down model: weights fake only")
    dtype = resolve_dtype(job.dtype, device, config)
    cls = model_class(config, remote)
    torch.manual_seed(0)
    model = cls.from_pretrained(path, config=config, dtype=dtype, trust_remote_code=remote)
    model.to(device)
    extra = simulate._shard(model, spec, mesh)
    return _context(job, job_dir, path, model, config, device, dtype), extra


def _die_in_forward(model: Any, rank: int) -> None:
    """The test hook's mid-forward death: SIGKILL this rank as its last decoder layer starts,
    after the earlier layers' collectives, so its peers wait in the next one."""
    import torch

    layers = [m for n, m in model.named_modules() if n.endswith("layers")]
    target = layers[0][-1] if layers and len(layers[0]) > 1 else model

    def die(_module: torch.nn.Module, _args: Any) -> None:
        log.info("rank %d: fault injected mid-forward (KT_RANK_FAULT), SIGKILL", rank)
        logging.shutdown()
        os.kill(os.getpid(), signal.SIGKILL)

    target.register_forward_pre_hook(die)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
