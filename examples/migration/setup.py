"""Build tinylm and its fused RMSNorm extension (compiled for the H100, sm_90)."""

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="tinylm",
    version="0.1.0",
    packages=find_packages(),
    ext_modules=[
        CUDAExtension(
            "tinylm._rmsnorm",
            ["csrc/binding.cpp", "csrc/rmsnorm.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-arch=sm_90"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
