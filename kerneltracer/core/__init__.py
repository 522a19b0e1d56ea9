"""The dependency-free core: run-dir layout and file names, the typed records that writers
and readers share, and the one reader of run dirs every command uses.

Nothing here imports torch, transformers, vLLM or a tracer module, so config, planning,
Slurm and report code can use it without loading a framework.
"""
