"""The worker's environment contract: what the orchestrator sets beside ``JOB.json``.

Here, not in the orchestrator, because both sides read it: the worker, its fork server and
the download children look these names up, and none of them may load planning or config.
"""

from __future__ import annotations

# The orchestrator's pid: a worker whose orchestrator is gone stops its own process group.
ENV_ORCHESTRATOR_PID = "KT_ORCHESTRATOR_PID"
# The GPU slot the orchestrator gave the job (also its CUDA_VISIBLE_DEVICES).
ENV_GPU_SLOT = "KT_GPU_SLOT"
