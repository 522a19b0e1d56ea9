"""Code that only tests and benchmarks use: synthetic run dirs, logs and models."""
