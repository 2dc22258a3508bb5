"""tinylm: a small causal language model trained on H100s (the project this example migrates)."""
