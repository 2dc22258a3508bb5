"""Image build: context, engine, layer normalisation, registry (issue 4)."""
