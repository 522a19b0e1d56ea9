"""Framework loaders: one per framework, each with its own context type and step."""
