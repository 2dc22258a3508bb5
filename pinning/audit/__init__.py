"""Audit a project before a move: what needs porting from CUDA to ROCm."""
