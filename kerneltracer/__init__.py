"""kerneltracer: trace what deep-learning models really run."""

__version__ = "0.1.0"
