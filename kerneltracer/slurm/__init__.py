"""Cluster runs on Slurm: a download job, then a job array with one task per shard.

Every task runs ``kerneltracer run CONFIG --shard $SLURM_ARRAY_TASK_ID/N``, so a task that is
re-run (``slurm resubmit``) resumes by bypassing its complete jobs.

Its face (``kerneltracer slurm``): ``submit``, ``status``, ``follow``, ``partition``; the
rest is internal.
"""

__all__ = ["follow", "partition", "status", "submit"]
