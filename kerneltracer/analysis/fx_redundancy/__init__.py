"""Per-job analysis ``fx_redundancy``: redundant computations in a job's captured FX graphs.

The adapter (:mod:`.job`) lives here, on the analysis side, and uses :mod:`kerneltracer.fx`
one way: fx knows nothing of analyses.
"""
