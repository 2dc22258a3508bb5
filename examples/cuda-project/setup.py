from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fused-ops",
    version="0.1.0",
    install_requires=["torch>=2.1", "einops"],
    ext_modules=[
        CUDAExtension(
            "fused_ops._C",
            ["csrc/fused.cpp", "csrc/reduce.cu"],
            extra_compile_args={"nvcc": ["-O3", "-arch=sm_80"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
