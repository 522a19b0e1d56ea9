"""What the analyses and reports share: event categories, interval arithmetic, the result
models (``results``), and the InferScope trace model (``schema``, ``validate``, ``index``)."""
