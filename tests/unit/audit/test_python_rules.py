"""The Python rules of ``pin audit`` (pinning.audit.python_rules): each rule with a positive and
a negative case, names resolved through imports and aliases, embedded kernels, and source that
does not parse (a Skip, never a crash)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.audit import python_rules
from pinning.audit.model import Context, FileScan, Finding, Kind, Skip, Verdict
from pinning.audit.python_rules import RULES, scan_python, scan_python_text


def _scan(code: str, ctx: Context | None = None) -> FileScan:
    return scan_python_text(code, "pkg/m.py", ctx or Context())


def _hits(code: str, ctx: Context | None = None) -> list[tuple[str, int | None, int | None, str]]:
    """``(rule, line, column, subject)`` of every finding in ``code``."""
    return [(f.rule, f.line, f.column, f.subject) for f in _scan(code, ctx).findings]


# -- device strings ------------------------------------------------------------------------------

def test_device_strings_rocm_and_hip_are_found_with_line_and_column() -> None:
    code = (
        "import torch\n"
        "a = torch.device('rocm')\n"
        "b = x.to('hip:1')\n"
        "c = torch.zeros(3, device='rocm:0')\n"
    )
    assert _hits(code) == [
        ("python.device-string", 2, 5, "'rocm' as a device"),
        ("python.device-string", 3, 5, "'hip:1' as a device"),
        ("python.device-string", 4, 5, "'rocm:0' as a device"),
    ]
    finding = _scan(code).findings[0]
    assert (finding.kind, finding.verdict, finding.path) == (
        Kind.DEVICE_STRING, Verdict.PORT, "pkg/m.py")
    assert finding.replacement == '"cuda"'


def test_cuda_cpu_and_strings_that_are_not_devices_are_not_findings() -> None:
    code = (
        "import torch\n"
        "d = torch.device('cuda')\n"
        "e = x.to('cpu')\n"
        "f = 'rocm'\n"
        "g = x.to('hip:a')\n"
        "h = torch.device('hipster')\n"
    )
    assert _hits(code) == []


# -- NVML ----------------------------------------------------------------------------------------

def test_nvml_imports_and_init_are_ports_to_amdsmi() -> None:
    code = (
        "import os\n"
        "import pynvml as nv\n"
        "from py3nvml import py3nvml\n"
        "def f():\n"
        "    import nvidia_smi\n"
        "    nv.nvmlInit()\n"
    )
    assert _hits(code) == [
        ("python.nvml-import", 2, 1, "import pynvml"),
        ("python.nvml-import", 3, 1, "from py3nvml import ..."),
        ("python.nvml-import", 5, 5, "import nvidia_smi"),
        ("python.nvml-init", 6, 5, "nv.nvmlInit()"),
    ]
    init = _scan(code).findings[-1]
    assert (init.kind, init.verdict, init.replacement) == (
        Kind.NVML, Verdict.PORT, "amdsmi.amdsmi_init")
    assert "not a drop-in" in _scan(code).findings[0].why
    assert "amdsmi-py-api" in init.citation.source


def test_amdsmi_and_a_local_nvmlinit_are_not_nvml_findings() -> None:
    code = (
        "import amdsmi\n"
        "import pynvml_utils_not_nvml\n"
        "def nvmlInit():\n"
        "    pass\n"
        "nvmlInit()\n"
        "amdsmi.amdsmi_init()\n"
    )
    assert _hits(code) == []


# -- nvidia-smi ----------------------------------------------------------------------------------

def test_nvidia_smi_run_from_python_is_a_port_to_amd_smi() -> None:
    code = (
        "import subprocess as sp, os\n"
        "from subprocess import check_output\n"
        "sp.run(['nvidia-smi', '--query-gpu=name', '--format=csv'], check=True)\n"
        "check_output('nvidia-smi -L', shell=True)\n"
        "os.popen('/usr/bin/nvidia-smi')\n"
    )
    assert _hits(code) == [
        ("python.nvidia-smi", 3, 1, "sp.run('nvidia-smi --query-gpu=name --format=csv')"),
        ("python.nvidia-smi", 4, 1, "check_output('nvidia-smi -L')"),
        ("python.nvidia-smi", 5, 1, "os.popen('/usr/bin/nvidia-smi')"),
    ]
    finding = _scan(code).findings[0]
    assert (finding.kind, finding.verdict, finding.replacement) == (
        Kind.NVIDIA_SMI, Verdict.PORT, "amd-smi")


def test_other_commands_and_non_literal_commands_are_not_nvidia_smi() -> None:
    code = (
        "import subprocess\n"
        "subprocess.run(['amd-smi', 'static'])\n"
        "subprocess.run(cmd)\n"
        "subprocess.run(['echo', 'nvidia-smi'])\n"
        "def run(c):\n"
        "    pass\n"
        "run('nvidia-smi')\n"
    )
    assert _hits(code) == []


# -- TF32 ----------------------------------------------------------------------------------------

def test_tf32_switches_are_ready_with_a_numerics_warning() -> None:
    code = (
        "import torch as T\n"
        "T.backends.cuda.matmul.allow_tf32 = True\n"
        "T.backends.cudnn.allow_tf32 = True\n"
        "T.set_float32_matmul_precision('high')\n"
        "T.set_float32_matmul_precision(precision='medium')\n"
        "T.backends.cuda.matmul.fp32_precision = 'tf32'\n"
        "T.backends.cudnn.conv.fp32_precision = 'tf32'\n"
    )
    assert _hits(code) == [
        ("python.tf32", 2, 1, "T.backends.cuda.matmul.allow_tf32 = True"),
        ("python.tf32", 3, 1, "T.backends.cudnn.allow_tf32 = True"),
        ("python.tf32", 4, 1, "T.set_float32_matmul_precision('high')"),
        ("python.tf32", 5, 1, "T.set_float32_matmul_precision('medium')"),
        ("python.tf32", 6, 1, 'T.backends.cuda.matmul.fp32_precision = "tf32"'),
        ("python.tf32", 7, 1, 'T.backends.cudnn.conv.fp32_precision = "tf32"'),
    ]
    finding = _scan(code).findings[0]
    assert (finding.kind, finding.verdict) == (Kind.TF32, Verdict.READY)
    assert "numerical differences" in finding.why and "MI300" in finding.why
    assert finding.citation.source.endswith("docs/source/notes/hip.rst")


def test_tf32_off_highest_and_unrelated_objects_are_not_findings() -> None:
    code = (
        "import torch\n"
        "torch.backends.cuda.matmul.allow_tf32 = False\n"
        "torch.set_float32_matmul_precision('highest')\n"
        "torch.backends.cuda.matmul.fp32_precision = 'ieee'\n"
        "cfg.backends.cuda.matmul.allow_tf32 = True\n"
    )
    assert _hits(code) == []


def test_tf32_why_names_the_gpu_when_it_is_not_mi300() -> None:
    code = "import torch\ntorch.backends.cudnn.allow_tf32 = True\n"
    mi250 = _scan(code, Context(gfx_targets=("gfx90a",), gpu_name="MI250X")).findings[0]
    assert mi250.why.endswith("the move is to MI250X.")
    mi300 = _scan(code, Context(gfx_targets=("gfx942",), gpu_name="MI300X")).findings[0]
    assert "the move is to" not in mi300.why


# -- build hooks ---------------------------------------------------------------------------------

SETUP = """\
from setuptools import setup
import torch.utils.cpp_extension as ce
from torch.utils.cpp_extension import CUDAExtension as CE, CUDA_HOME

NVCC = ["-O3", "-gencode", "arch=compute_80,code=sm_80"]
if CUDA_HOME is None:
    raise SystemExit("no CUDA")
setup(
    ext_modules=[CE("m", ["m.cpp", "k.cu"],
                    extra_compile_args={"cxx": ["-O3"], "nvcc": NVCC + []})],
    cmdclass={"build_ext": ce.BuildExtension},
)
ext2 = CE("n", ["n.cu"], extra_compile_args={"nvcc": ["-arch=sm_90"]})
ext3 = CE("o", ["o.cu"], extra_compile_args={"nvcc": NVCC})
"""


def test_cuda_extension_build_extension_cuda_home_and_nvcc_arch_flags() -> None:
    assert _hits(SETUP) == [
        ("python.nvcc-arch", 5, 16, "-gencode arch=compute_80,code=sm_80"),
        ("python.cuda-home", 6, 4, "CUDA_HOME"),
        ("python.cuda-extension", 9, 18, "CE(...)"),
        ("python.build-extension", 11, 28, "ce.BuildExtension"),
        ("python.nvcc-arch", 13, 55, "-arch=sm_90"),
    ]
    found = {f.rule: f for f in _scan(SETUP).findings}
    assert found["python.cuda-extension"].lines == [9, 13, 14]
    assert found["python.cuda-extension"].kind == Kind.BUILD_HOOK
    assert found["python.cuda-extension"].verdict == Verdict.PORT
    assert "hipif" in found["python.cuda-extension"].why
    assert found["python.nvcc-arch"].kind == Kind.ARCH_LIST
    assert "PYTORCH_ROCM_ARCH" in found["python.nvcc-arch"].todo
    assert found["python.cuda-extension"].citation.source == (
        "pytorch/pytorch@0011ec5c5d6171a395bb339b873343a4cdfebd18:torch/utils/cpp_extension.py")


def test_load_and_load_inline_with_cuda_sources_are_build_hooks() -> None:
    code = (
        "import os\n"
        "from torch.utils.cpp_extension import load, load_inline\n"
        "a = load(name='a', sources=['a.cpp', 'a_kernel.cu'])\n"
        "b = load_inline(name='b', cpp_sources='', cuda_sources='__global__ void k() {}',\n"
        "                extra_cuda_cflags=['-arch=sm_80'])\n"
        "home = os.environ.get('CUDA_HOME')\n"
        "home2 = os.environ['CUDA_HOME']\n"
    )
    assert _hits(code) == [
        ("python.load-cuda", 3, 5, "load(... .cu ...)"),
        ("python.load-cuda", 4, 5, "load_inline(cuda_sources=...)"),
        ("python.nvcc-arch", 5, 36, "-arch=sm_80"),
        ("python.cuda-home", 6, 8, 'os.environ.get("CUDA_HOME")'),
        ("python.cuda-home", 7, 9, 'os.environ["CUDA_HOME"]'),
    ]
    assert _scan(code).kernel_lines == 1  # the inline CUDA source


def test_cpu_extensions_torch_load_and_a_local_load_are_not_build_hooks() -> None:
    code = (
        "import torch\n"
        "from torch.utils.cpp_extension import CppExtension, load_inline\n"
        "def load(name, sources):\n"
        "    return None\n"
        "m = load('a', ['a.cu'])\n"
        "w = torch.load('w.pt')\n"
        "e = CppExtension('c', ['c.cpp'], extra_compile_args={'cxx': ['-arch=sm_80']})\n"
        "i = load_inline(name='i', cpp_sources='int f();', cuda_sources=None)\n"
        "f = {'nvcc': ['-O3', '--use_fast_math']}\n"
    )
    assert _hits(code) == []


def test_a_module_level_def_hides_an_import_of_the_same_name() -> None:
    code = (
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "def CUDAExtension(*a, **k):\n"
        "    return None\n"
        "CUDAExtension('m', ['k.cu'])\n"
    )
    assert _hits(code) == []


# -- embedded kernels ----------------------------------------------------------------------------

KERNELS = '''\
import cupy as cp
import numba as nb
from numba import cuda
from pycuda.compiler import SourceModule

SRC = r"""
extern "C" __global__ void add(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n) b[i] += a[i];
}
"""
k1 = cp.RawKernel(SRC, "add")
k2 = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2", "double_it")

@cuda.jit
def f(a):
    pass

@nb.cuda.jit(device=True)
def g(a):
    return a

mod = SourceModule("__global__ void z(float* p) { p[0] = 1.0f; }")
'''


def test_embedded_kernels_cupy_numba_and_pycuda() -> None:
    scan = _scan(KERNELS)
    assert [(f.rule, f.line, f.column, f.subject, f.verdict) for f in scan.findings
            if f.kind == Kind.EMBEDDED_KERNEL] == [
        ("python.cupy-kernel", 13, 6, "cp.RawKernel(...)", Verdict.PORT),
        ("python.cupy-kernel", 14, 6, "cp.ElementwiseKernel(...)", Verdict.PORT),
        ("python.numba-cuda", 16, 2, "@cuda.jit", Verdict.PORT),
        ("python.numba-cuda", 20, 2, "nb.cuda.jit(...)", Verdict.PORT),
        ("python.pycuda", 24, 7, "SourceModule(...)", Verdict.BLOCKED),
    ]
    # 4 non-blank lines in SRC, 1 in the elementwise operation, 1 in the SourceModule string
    assert scan.kernel_lines == 6
    assert "experimental" in RULES["python.cupy-kernel"].why
    assert RULES["python.cupy-kernel"].citation.source == (
        "https://docs.cupy.dev/en/stable/install.html#using-cupy-on-amd-gpu-experimental")
    numba_rule = RULES["python.numba-cuda"]
    assert numba_rule.citation.source == "https://github.com/ROCm/numba-hip"
    assert numba_rule.replacement == "numba-hip"
    assert "numba-hip" in numba_rule.why and "experimental" in numba_rule.why
    numba_finding = next(f for f in scan.findings if f.rule == "python.numba-cuda")
    assert numba_finding.replacement == "numba-hip"


def test_cpu_jit_cupy_arrays_and_a_local_sourcemodule_are_not_kernels() -> None:
    code = (
        "import cupy\n"
        "from numba import jit, njit\n"
        "@jit(nopython=True)\n"
        "def f(a):\n"
        "    return a\n"
        "@njit\n"
        "def g(a):\n"
        "    return a\n"
        "x = cupy.asarray([1, 2])\n"
        "class SourceModule:\n"
        "    pass\n"
        "SourceModule('__global__ void k() {}')\n"
    )
    scan = _scan(code)
    assert scan.findings == [] and scan.kernel_lines == 0


def test_kernel_strings_go_to_the_kernel_scanner_at_their_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, int]] = []

    def fake(text: str, display: str, ctx: Context, *, line_offset: int = 0) -> FileScan:
        calls.append((text.splitlines()[1], display, line_offset))
        finding = Finding(kind=Kind.WARP_SIZE, rule="kernel.fake", verdict=Verdict.PORT,
                          subject="x", path=display, line=line_offset + 2, why="w", todo="t",
                          citation=RULES["python.tf32"].citation)
        return FileScan(findings=[finding], kernel_lines=7)

    monkeypatch.setattr(python_rules, "_kernel_scanner", lambda: fake)
    code = 'import cupy\n\nk = cupy.RawKernel("""\n__global__ void k() {}\n""", "k")\n'
    scan = _scan(code)
    assert calls == [("__global__ void k() {}", "pkg/m.py", 2)]
    assert [(f.rule, f.line) for f in scan.findings] == [
        ("python.cupy-kernel", 3), ("kernel.fake", 4)]
    assert scan.kernel_lines == 7  # the kernel scanner's count


def test_real_kernel_scanner_flags_a_warp_32_mask_in_an_embedded_kernel() -> None:
    code = (
        "import cupy as cp\n"
        "SRC = '''\n"
        "__global__ void r(float* x) {\n"
        "    float v = __shfl_down_sync(0xffffffff, x[threadIdx.x], 16);\n"
        "    x[threadIdx.x] = v;\n"
        "}\n"
        "'''\n"
        "k = cp.RawKernel(SRC, 'r')\n"
    )
    scan = _scan(code)
    warp = [f for f in scan.findings if f.kind == Kind.WARP_SIZE]
    assert warp and warp[0].line == 4 and warp[0].path == "pkg/m.py"
    assert scan.kernel_lines == 4


# -- aliasing and merging ------------------------------------------------------------------------

def test_imports_resolve_aliases_and_submodules() -> None:
    code = (
        "import torch.utils.cpp_extension\n"
        "import numba.cuda as nc\n"
        "from torch.utils import cpp_extension as X\n"
        "a = torch.utils.cpp_extension.CUDAExtension('a', ['a.cu'])\n"
        "b = X.CUDAExtension('b', ['b.cu'])\n"
        "@nc.jit\n"
        "def k(a):\n"
        "    pass\n"
    )
    scan = _scan(code)
    assert [(f.rule, f.line, f.subject, f.lines) for f in scan.findings] == [
        ("python.cuda-extension", 4, "torch.utils.cpp_extension.CUDAExtension(...)", []),
        ("python.cuda-extension", 5, "X.CUDAExtension(...)", []),
        ("python.numba-cuda", 6, "@nc.jit", []),
    ]


def test_the_same_subject_is_one_finding_listing_every_line() -> None:
    code = "import torch\na = torch.device('hip')\n\nb = torch.device('hip')\n"
    (finding,) = _scan(code).findings
    assert (finding.line, finding.lines) == (2, [2, 4])


def test_every_rule_cites_a_public_source_with_a_date_or_why_not() -> None:
    for rule_id, rule in RULES.items():
        cite = rule.citation
        assert cite.published is not None or cite.published_unknown, rule_id
        assert "FACTS" not in cite.source and "shared/" not in cite.source, rule_id
        assert rule.why.endswith(".") and rule.todo, rule_id


# -- input that is not valid Python --------------------------------------------------------------

def test_syntax_error_is_a_skip_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text("import pynvml\n\ndef f(:\n    pass\n")
    with pytest.raises(Skip) as err:
        scan_python(path, "bad.py", Context())
    assert err.value.reason == "not valid Python (line 3)"


@pytest.mark.parametrize("code", [
    "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "x = " + "(" * 300 + "1" + ")" * 300 + "\n",
    "x = " + " + ".join(["a"] * 200_000) + "\n",
    "x = " + "-" * 100_000 + "1\n",
])
def test_deep_nesting_is_a_skip_or_a_scan_never_a_crash(tmp_path: Path, code: str) -> None:
    path = tmp_path / "deep.py"
    path.write_text("import pynvml\n" + code)  # a trigger word, so the file is parsed
    try:
        scan = scan_python(path, "deep.py", Context())
    except Skip as err:
        assert err.reason.startswith("not valid Python")
    else:
        assert scan.findings == []


def test_nul_byte_and_binary_files_are_skips(tmp_path: Path) -> None:
    late_nul = tmp_path / "late.py"
    late_nul.write_bytes(b"import cupy\n" + b"x = 1\n" * 2000 + b"y = '\0'\n")
    with pytest.raises(Skip) as err:
        scan_python(late_nul, "late.py", Context())
    assert err.value.reason.startswith("not valid Python")
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"\0\1\2")
    with pytest.raises(Skip) as err:
        scan_python(binary, "bin.py", Context())
    assert "binary" in err.value.reason


def test_scan_python_reads_the_file_and_reports_the_display_path(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text("import pynvml\n")
    scan = scan_python(path, "src/train.py", Context())
    assert [(f.path, f.line, f.rule) for f in scan.findings] == [
        ("src/train.py", 1, "python.nvml-import")]


def test_a_file_without_any_trigger_word_is_not_parsed(tmp_path: Path) -> None:
    """No rule can fire without one of TRIGGERS, so such a file costs no parse: even text
    that is not Python passes as empty; with a trigger word the same text is a Skip."""
    path = tmp_path / "plain.py"
    path.write_text("def f(:\n    return 1\n")
    assert scan_python(path, "plain.py", Context()).findings == []
    path.write_text("import numba\ndef f(:\n    return 1\n")
    with pytest.raises(Skip) as err:
        scan_python(path, "plain.py", Context())
    assert err.value.reason == "not valid Python (line 2)"


# -- CppExtension if ... else CUDAExtension ------------------------------------------------------

GATE = "python.cuda-only-extension-gate"


def _gates(code: str) -> list[tuple[int | None, str]]:
    return [(f.line, f.subject) for f in _scan(code).findings if f.rule == GATE]


def test_cuda_extension_only_under_a_cuda_only_condition_is_a_port() -> None:
    # torch_scatter 2.0.x's setup.py: WITH_CUDA from CUDA_HOME, FORCE_CUDA / FORCE_CPU switches
    code = (
        "import os\n"
        "import torch\n"
        "from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension\n"
        "WITH_CUDA = torch.cuda.is_available() and CUDA_HOME is not None\n"
        "if os.getenv('FORCE_CUDA', '0') == '1':\n"
        "    WITH_CUDA = True\n"
        "def get_extensions():\n"
        "    Extension = CppExtension\n"
        "    if WITH_CUDA:\n"
        "        Extension = CUDAExtension\n"
        "    return [Extension('x', ['a.cpp'])]\n"
        "y = CUDAExtension('y', ['y.cu']) if torch.version.cuda else CppExtension('y', ['y.cpp'])\n"
        "if (torch.cuda.is_available() and CUDA_HOME is not None) or os.getenv('FORCE_CUDA'):\n"
        "    z = CUDAExtension('z', ['z.cu'])\n"
        "else:\n"
        "    z = CppExtension('z', ['z.cpp'])\n"
        "if not CUDA_HOME:\n"
        "    w = CppExtension('w', ['w.cpp'])\n"
        "else:\n"
        "    w = CUDAExtension('w', ['w.cu'])\n"
    )
    assert _gates(code) == [
        (9, "CUDAExtension only if WITH_CUDA (false on ROCm: CUDA_HOME; unless FORCE_CUDA is "
            "set)"),
        (12, "CUDAExtension only if torch.version.cuda (false on ROCm: torch.version.cuda)"),
        (13, "CUDAExtension only if torch.cuda.is_available() and CUDA_HOME is not None or "
             "os.getenv('FORCE_CUDA') (false on ROCm: CUDA_HOME; unless FORCE_CUDA is set)"),
        (17, "CUDAExtension only if not CUDA_HOME (false on ROCm: CUDA_HOME)"),
    ]
    finding = next(f for f in _scan(code).findings if f.rule == GATE)
    assert (finding.kind, finding.verdict) == (Kind.BUILD_HOOK, Verdict.PORT)
    assert "ROCM_HOME" in finding.todo and finding.citation.source.endswith("cpp_extension.py")


def test_conditions_that_accept_rocm_or_cannot_be_decided_are_not_gates() -> None:
    # torch_cluster-1.6.3 setup.py lines 17-19 accept torch.version.hip
    code = (
        "import os\n"
        "import torch\n"
        "from torch.utils.cpp_extension import (CUDA_HOME, ROCM_HOME, IS_HIP_EXTENSION,\n"
        "                                       CppExtension, CUDAExtension)\n"
        "WITH_CUDA = False\n"
        "if torch.cuda.is_available():\n"
        "    WITH_CUDA = CUDA_HOME is not None or torch.version.hip\n"
        "Extension = CUDAExtension if WITH_CUDA else CppExtension\n"
        "a = CUDAExtension('a', []) if CUDA_HOME or ROCM_HOME else CppExtension('a', [])\n"
        "b = CUDAExtension('b', []) if IS_HIP_EXTENSION or CUDA_HOME else CppExtension('b', [])\n"
        "c = CUDAExtension('c', []) if torch.cuda.is_available() else CppExtension('c', [])\n"
        "if torch.version.hip:\n"
        "    raise RuntimeError('no ROCm support')\n"
        "else:\n"
        "    d = CUDAExtension('d', [])\n"
        "if CUDA_HOME is not None:\n"
        "    print('CUDA toolkit found')\n"
        "def CUDAExtension_like(): pass\n"
    )
    assert _gates(code) == []
