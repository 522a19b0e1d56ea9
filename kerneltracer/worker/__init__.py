"""The worker: one process, one model, one tracer. Owns all framework state."""
