"""Stage 2: render an intermediate directory into reports through pluggable modules."""
