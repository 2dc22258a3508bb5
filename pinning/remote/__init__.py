"""Clients of a remote pin service (``pin serve``): the HTTP client the CLI, Slurm and
Kubernetes integrations use to push locks and post reports. Util layer: no pin models.
"""
