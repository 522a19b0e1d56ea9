"""Files written from an analysis: Markdown and HTML reports, the ops files (``ops.csv``
and its siblings, ``ops.html``) and the InferScope trace (``convert`` and
``inferscope_file``, written by a forked child)."""
