"""pin: reproducible GPU machine-learning environments on AMD ROCm and NVIDIA CUDA.

The package is import-light on purpose: ``pin --help`` must stay fast, so modules only
define and heavy libraries are imported where they are used.
"""

__version__ = "0.1.0"
