"""Image build: plan (pure), engine (Docker SDK), layer normalisation, record, base image."""
