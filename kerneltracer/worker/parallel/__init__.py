"""Parallel layouts simulated in one worker: every distinct rank role on a fake process group.

See :mod:`kerneltracer.worker.parallel.simulate`. Imports torch: worker only.
"""
