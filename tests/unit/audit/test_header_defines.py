"""Macros a project header defines reach the files that include it: DeepSpeed's inline PTX
under ``#ifdef PTX_AVAILABLE`` is a CUDA-only branch because ``ds_kernel_utils.h`` defines
``PTX_AVAILABLE`` only in its ``#else`` of ``#ifdef __HIP_PLATFORM_AMD__``."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from pinning.audit.model import Finding
from pinning.audit.run import AuditRequest, audit

# The shape of deepspeed-0.19.8 csrc/includes/ds_kernel_utils.h lines 27-49 (abridged).
DS_KERNEL_UTILS = """#pragma once
#ifdef __HIP_PLATFORM_AMD__
constexpr int hw_warp_size = ROCM_WAVEFRONT_SIZE;
#define HALF_PRECISION_AVAILABLE = 1
#else  // !__HIP_PLATFORM_AMD__
#if __CUDA_ARCH__ >= 530
#define PTX_AVAILABLE
#endif
#if __CUDA_ARCH__ >= 800
#define ASYNC_COPY_AVAILABLE
#endif
#endif
#if __CUDA_ARCH__ >= 700
#define ARCH_ONLY_FEATURE
#endif
"""

# The shape of memory_access_utils.h: PTX under the header's macro, a plain C++ #else.
MEMORY_ACCESS = """#include <cuda.h>
#include "ds_kernel_utils.h"
__device__ void load(float* d, const float* s) {
#ifdef PTX_AVAILABLE
    asm volatile("ld.global.f32 %0, [%1];" : "=f"(*d) : "l"(s));
#else
    *d = *s;
#endif
#ifdef ARCH_ONLY_FEATURE
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(*d) : "l"(s));
#endif
}
"""


def _asm(findings: list[Finding], path: str) -> dict[int | None, tuple[str, str]]:
    return {f.line: (f.verdict.value, f.why) for f in findings
            if f.rule == "kernel.inline-ptx" and f.path == path}


def test_a_header_define_skipped_by_a_platform_macro_settles_the_includer(
        tmp_path: Path) -> None:
    (tmp_path / "includes").mkdir()
    (tmp_path / "includes" / "ds_kernel_utils.h").write_text(DS_KERNEL_UTILS, encoding="utf-8")
    (tmp_path / "includes" / "memory_access_utils.h").write_text(MEMORY_ACCESS,
                                                                 encoding="utf-8")
    report = audit(AuditRequest(paths=[str(tmp_path)], hipify_perl=False))
    found = _asm(report.findings, str(tmp_path / "includes/memory_access_utils.h"))
    verdict, why = found[5]
    assert verdict == "ready"
    assert "PTX_AVAILABLE is defined only for CUDA builds, by includes/ds_kernel_utils.h:7" \
        in why and "#else of #ifdef __HIP_PLATFORM_AMD__" in why
    # Defined only under __CUDA_ARCH__: pin cannot tell the AMD path exists; the item stays.
    verdict, why = found[10]
    assert verdict == "blocked" and "unknown for an AMD build" in why


def test_without_the_header_the_macro_stays_unknown(tmp_path: Path) -> None:
    (tmp_path / "memory_access_utils.h").write_text(MEMORY_ACCESS, encoding="utf-8")
    report = audit(AuditRequest(paths=[str(tmp_path)], hipify_perl=False))
    verdict, why = _asm(report.findings, str(tmp_path / "memory_access_utils.h"))[5]
    assert verdict == "blocked" and "#ifdef PTX_AVAILABLE" in why


def test_an_include_in_a_branch_amd_skips_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "ds_kernel_utils.h").write_text(DS_KERNEL_UTILS, encoding="utf-8")
    text = MEMORY_ACCESS.replace('#include "ds_kernel_utils.h"',
                                 '#ifndef USE_ROCM\n#include "ds_kernel_utils.h"\n#endif')
    (tmp_path / "k.cuh").write_text(text, encoding="utf-8")
    report = audit(AuditRequest(paths=[str(tmp_path)], hipify_perl=False))
    verdict, _why = _asm(report.findings, str(tmp_path / "k.cuh"))[7]
    assert verdict == "blocked"


def test_headers_are_followed_inside_an_sdist(tmp_path: Path) -> None:
    archive = tmp_path / "ds-0.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("ds-0.1/csrc/ds_kernel_utils.h", DS_KERNEL_UTILS),
                           ("ds-0.1/csrc/memory_access_utils.h", MEMORY_ACCESS)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    report = audit(AuditRequest(paths=[str(archive)], hipify_perl=False))
    shown = f"{archive}!ds-0.1/csrc/memory_access_utils.h"
    verdict, why = _asm(report.findings, shown)[5]
    assert verdict == "ready" and "ds_kernel_utils.h:7" in why


def test_an_include_cycle_ends(tmp_path: Path) -> None:
    (tmp_path / "a.h").write_text('#include "b.h"\n#ifndef __HIP__\n#define A_CUDA\n#endif\n',
                                  encoding="utf-8")
    (tmp_path / "b.h").write_text('#include "a.h"\n#ifdef A_CUDA\nasm("mov.u32 %0, 1;");\n'
                                  '#endif\n', encoding="utf-8")
    report = audit(AuditRequest(paths=[str(tmp_path)], hipify_perl=False))
    assert _asm(report.findings, str(tmp_path / "b.h"))[3][0] == "ready"
