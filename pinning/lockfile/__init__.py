"""The lockfile: model, deterministic TOML read/write, content hash."""
