"""Host facts: probes over a root directory and a command runner, and their models."""
