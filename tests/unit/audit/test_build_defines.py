"""The project's own build defines for an AMD build (setup.py / CMake, read statically) feed
the platform guards: a branch a project macro skips says where the macro was defined."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from pinning.audit.build_defines import archive_defines, folder_defines
from pinning.audit.cmake_defines import cmake_defines
from pinning.audit.kernels import scan_cuda_text
from pinning.audit.model import Context, Verdict
from pinning.audit.project_defines import ProjectDefine, merge
from pinning.audit.scan import Collector, scan_paths
from pinning.audit.setup_defines import setup_defines

# torch_cluster-1.6.3 setup.py lines 41-81 (get_extensions), as released on PyPI.
TORCH_CLUSTER = '''
import torch
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension

def get_extensions():
    for main, suffix in product(main_files, suffices):
        define_macros = [('WITH_PYTHON', None)]
        undef_macros = []
        if sys.platform == 'win32':
            define_macros += [('torchcluster_EXPORTS', None)]
        if suffix == 'cuda':
            define_macros += [('WITH_CUDA', None)]
            nvcc_flags = ['-O2']
            if torch.version.hip:
                define_macros += [('USE_ROCM', None)]
                undef_macros += ['__HIP_NO_HALF_CONVERSIONS__']
            else:
                nvcc_flags += ['--expt-relaxed-constexpr', '-DCLUSTER_NVCC_ONLY']
'''


def _by_name(defines: list[ProjectDefine]) -> dict[str, ProjectDefine]:
    return {d.name: d for d in merge(defines)}


def test_setup_py_defines_by_platform() -> None:
    got = _by_name(setup_defines(TORCH_CLUSTER, "setup.py"))
    assert got["WITH_PYTHON"].rocm is True and got["WITH_PYTHON"].scope == "every build"
    assert got["USE_ROCM"].rocm is True and got["USE_ROCM"].scope == "ROCm builds"
    assert got["USE_ROCM"].source == "setup.py:15"
    assert got["CLUSTER_NVCC_ONLY"].rocm is False  # in the else of `if torch.version.hip`
    assert got["WITH_CUDA"].rocm is None            # under `suffix == 'cuda'` only
    assert got["torchcluster_EXPORTS"].rocm is None
    assert "__HIP_NO_HALF_CONVERSIONS__" not in got  # undef_macros are not defines


def test_setup_py_flags_hip_checks_and_ternaries() -> None:
    text = '''
import torch
from torch.utils.cpp_extension import IS_HIP_EXTENSION, CUDA_HOME
HIP_BUILD = bool(torch.version.hip)
cc_flag = []
if HIP_BUILD:
    cc_flag.append("-DBUILD_FOR_AMD=2")
elif CUDA_HOME is not None:
    cc_flag += ["-DUSE_CUTLASS_PATH"]
args = {"cxx": ["-O3", "-DALWAYS"], "nvcc": ["-DNVCC_FLAG"]}
ext = dict(define_macros=[("ROCM_PATHS", None)] if IS_HIP_EXTENSION else [])
cmake_args = ["-DVLLM_TARGET_DEVICE=cuda", "-DCMAKE_BUILD_TYPE=Release"]
if False:
    args["nvcc"] += ["-DDEBUG_ONLY"]
'''
    got = _by_name(setup_defines(text, "setup.py"))
    assert got["BUILD_FOR_AMD"].value == 2 and got["BUILD_FOR_AMD"].scope == "ROCm builds"
    assert got["USE_CUTLASS_PATH"].rocm is False
    assert got["ALWAYS"].scope == "every build"
    # BuildExtension hands the "nvcc" list to hipcc on ROCm: defined there too
    assert got["NVCC_FLAG"].rocm is True
    assert got["ROCM_PATHS"].rocm is True
    assert "VLLM_TARGET_DEVICE" not in got and "CMAKE_BUILD_TYPE" not in got
    assert "DEBUG_ONLY" not in got


def test_setup_py_that_does_not_parse_gives_nothing() -> None:
    assert setup_defines("define_macros = [(", "setup.py") == []


# vLLM's cmake/utils.cmake (get_torch_gpu_compiler_flags) and CMakeLists.txt, in outline.
VLLM_CMAKE = '''
function (get_torch_gpu_compiler_flags OUT_GPU_FLAGS GPU_LANG)
  if (${GPU_LANG} STREQUAL "CUDA")
    list(APPEND GPU_FLAGS "-DENABLE_FP8_E4M3")
  elseif(${GPU_LANG} STREQUAL "HIP")
    # Get common HIP/HIPIFY flags from torch.
    list(APPEND GPU_FLAGS
      "-DUSE_ROCM"
      "-DENABLE_FP8"
      "-U__HIP_NO_HALF_CONVERSIONS__")
  endif()
endfunction()
add_compile_definitions(EVERYWHERE VERSION=3)
if(HIP_FOUND)
  add_definitions(-DWITH_HIP)
else()
  target_compile_definitions(_C PRIVATE WITH_NV $<$<CONFIG:Debug>:DBG>)
endif()
set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -DCUDA_FLAGS_ONLY")
#[[ add_definitions(-DCOMMENTED_OUT) ]]
# add_definitions(-DCOMMENTED_TOO)
execute_process(COMMAND cmake -DNOT_A_MACRO=1)
if(SOME_OPTION)
  add_definitions(-DUNDECIDED)
endif()
'''


def test_cmake_defines_by_platform() -> None:
    got = _by_name(cmake_defines(VLLM_CMAKE, "CMakeLists.txt"))
    assert got["USE_ROCM"].scope == "ROCm builds" and got["USE_ROCM"].source == \
        "CMakeLists.txt:7"
    assert got["ENABLE_FP8"].rocm is True
    assert got["ENABLE_FP8_E4M3"].rocm is False
    assert got["EVERYWHERE"].scope == "every build" and got["VERSION"].value == 3
    assert got["WITH_HIP"].rocm is True and got["WITH_NV"].rocm is False
    assert got["CUDA_FLAGS_ONLY"].rocm is False
    assert got["UNDECIDED"].rocm is None
    for absent in ("COMMENTED_OUT", "COMMENTED_TOO", "NOT_A_MACRO", "DBG",
                   "__HIP_NO_HALF_CONVERSIONS__"):
        assert absent not in got


def test_merge_prefers_the_amd_definition_and_widens_the_scope() -> None:
    merged = merge([ProjectDefine("X", 1, True, "ROCm builds", "setup.py:3"),
                    ProjectDefine("X", 1, False, "CUDA builds only", "setup.py:5"),
                    ProjectDefine("Y", 1, None, "unknown builds", "a.cmake:1")])
    assert [(d.name, d.rocm, d.scope) for d in merged] == [
        ("X", True, "every build"), ("Y", None, "unknown builds")]


KERNEL = """__device__ float f(float v) {
#ifndef MY_HIP_BUILD
  asm volatile("mov.u32 %0, %laneid;" : "=r"(v));
#endif
#ifdef MY_CUDA_BUILD
  v = __shfl_xor_sync(0xffffffff, v, 1);
#endif
#ifdef SOMETHING_ELSE
  v = __shfl_xor_sync(0xffffffff, v, 4);
#endif
  return v;
}
"""


def test_guards_use_the_project_defines_and_say_where_from() -> None:
    project = (ProjectDefine("MY_HIP_BUILD", 1, True, "ROCm builds", "setup.py:8"),
               ProjectDefine("MY_CUDA_BUILD", 1, False, "CUDA builds only", "setup.py:10"),
               ProjectDefine("SOMETHING_ELSE", 1, None, "unknown builds", "setup.py:12"))
    found = scan_cuda_text(KERNEL, "k.cu", Context(build_defines=project)).findings
    by_line = {f.line: f for f in found}
    assert by_line[3].verdict is Verdict.READY
    assert "CUDA-only branch, already ported" in by_line[3].why
    assert "MY_HIP_BUILD is defined for ROCm builds by setup.py:8" in by_line[3].why
    assert by_line[6].verdict is Verdict.READY
    assert "MY_CUDA_BUILD is defined only for CUDA builds, by setup.py:10" in by_line[6].why
    assert by_line[9].verdict is Verdict.PORT and "unknown for an AMD build" in by_line[9].why
    # without the project's defines the same branches stay undecided
    plain = scan_cuda_text(KERNEL, "k.cu", Context()).findings
    assert all(f.verdict is not Verdict.READY for f in plain)


SETUP = '''import torch
from torch.utils.cpp_extension import CUDAExtension
define_macros = []
if torch.version.hip:
    define_macros += [("MY_HIP_BUILD", None)]
'''


def test_the_folder_walk_reads_the_build_files_first(tmp_path: Path) -> None:
    (tmp_path / "csrc").mkdir()
    (tmp_path / "setup.py").write_text(SETUP, encoding="utf-8")
    (tmp_path / "csrc" / "k.cu").write_text(KERNEL, encoding="utf-8")
    out = Collector()
    scan_paths([str(tmp_path)], Context(), out, lambda _m: None)
    ptx = [f for f in out.findings if f.rule == "kernel.inline-ptx"]
    assert ptx and ptx[0].verdict is Verdict.READY
    assert f"by {tmp_path}/setup.py:5" in ptx[0].why
    assert folder_defines([(tmp_path / "setup.py", "setup.py")], str)[0].name == "MY_HIP_BUILD"


def test_an_archive_reads_its_build_files_first(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in (("p-1/setup.py", SETUP), ("p-1/csrc/k.cu", KERNEL)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    sdist = tmp_path / "p-1.tar.gz"
    sdist.write_bytes(buf.getvalue())
    out = Collector()
    scan_paths([str(sdist)], Context(), out, lambda _m: None)
    ptx = [f for f in out.findings if f.rule == "kernel.inline-ptx"]
    assert ptx and ptx[0].verdict is Verdict.READY
    assert f"by {sdist}!p-1/setup.py:5" in ptx[0].why
    assert archive_defines({"p-1/CMakeLists.txt": b"add_definitions(-DX)"}, "a")[0].name == "X"


# mmcv-2.2.0 setup.py lines 220-261 (abridged): a flag set False, then recomputed in a try.
MMCV = '''
def get_extensions():
    if EXT_TYPE == 'parrots':
        pass
    elif EXT_TYPE == 'pytorch':
        is_rocm_pytorch = False
        try:
            from torch.utils.cpp_extension import ROCM_HOME
            is_rocm_pytorch = True if ((torch.version.hip is not None) and
                                       (ROCM_HOME is not None)) else False
        except ImportError:
            pass
        if os.getenv('MMCV_WITH_DIOPI', '0') == '1':
            pass
        elif is_rocm_pytorch or torch.cuda.is_available() or os.getenv(
                'FORCE_CUDA', '0') == '1':
            if is_rocm_pytorch:
                define_macros += [('MMCV_WITH_HIP', None)]
'''


def test_a_later_assignment_replaces_the_earlier_value() -> None:
    hip = _by_name(setup_defines(MMCV, "setup.py"))["MMCV_WITH_HIP"]
    assert (hip.rocm, hip.scope) == (True, "ROCm builds")
