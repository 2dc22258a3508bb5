"""Benchmark for issue 13 §5 (printed, not asserted): auditing a generated source tree.

A deterministic tree of 5,000 files (~50 MB: mostly ``.cu`` / ``.cuh`` / ``.cpp`` / ``.h`` with
CUDA host and kernel code at a realistic density, some ``.py``, a ``requirements.txt`` and a
``Dockerfile``) is written to a temporary folder. Timed, on one core (``taskset -c 0`` when
available), median of 5 runs each:

- ``pin audit TREE --format json -o /dev/null`` as a whole process (target <= 5 s);
- ``grep -rE PATTERNS TREE`` with the same triggers the C/C++ scanner looks for (the floor);
  issue 31 §5 asks the audit to stay within 2x of it;
- ``rg -j1`` (ripgrep, one thread) with the same triggers, printed as a ratio too (issue 31
  §5); without ``rg`` on PATH the bench says so and goes on;
- the C/C++ scanner alone in-process (:func:`pinning.audit.kernels.scan_source` over the
  source files), and its throughput on one 10 MB synthetic ``.cu`` text (MB/s).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import median_s, report

from pinning.audit.kernels import scan_cuda_text, scan_source
from pinning.audit.model import Context

PIN = str(Path(sys.executable).with_name("pin"))
FILES = 5000
TOTAL_BYTES = 50 * 1000 * 1000
RUNS = 5

# The triggers of pinning.audit.kernels._SOURCE, as one POSIX ERE (comments and strings are
# matched too, as the scanner does to skip them).
GREP_PATTERN = (
    r"__CUDA_ARCH|__(shfl_(up_|down_|xor_)?|ballot_|any_|all_|match_any_|match_all_)sync"
    r"|__activemask|__ballot|__global__|__asm|\basm\b|\bcu(da|blas|fft|rand|sparse|solver|dnn"
    r"|tensor|[Ff]ile|[A-Z_])[A-Za-z0-9_]*|\bC(U|u[A-Z])[A-Za-z0-9_]*|\bnvrtc|\bNVRTC"
    r'|\bmake_cu|//|/\*|"|#[ \t]*(include|define)|<<<|>>[ \t]*5\b|&[ \t]*(31|0x1[fF])\b'
    r"|%[ \t]*32\b|/[ \t]*32\b|\b32 ?/|=[ \t]*(16|32)[ \t]*;|warp_?([sS]ize|[tT]hreads)"
    r"|W[aA][rR][pP]|\bwmma::"
    r"|nvcuda::wmma|__device__|=[ \t]*(4294967295|~[ \t]*0|-[ \t]*1)|\b0[xX][fF]{8}"
    r"|\bSM[1-9][0-9]_|maxregcount|'")

KERNEL = """// Copyright (c) {year} Example Authors. Licensed under the Apache License 2.0.
// {name}: fused {op} kernel with a warp-level reduction.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include "{name}_utils.cuh"

#define CHECK_CUDA(call) do {{ cudaError_t err_ = (call); \\
  if (err_ != cudaSuccess) {{ fprintf(stderr, "%s:%d %s\\n", __FILE__, __LINE__, \\
  cudaGetErrorString(err_)); exit(1); }} }} while (0)

namespace {name}_ns {{

template <typename T>
__device__ __forceinline__ T warp_reduce_{i}(T val) {{
  // Reduce within a warp using shuffles.
  for (int offset = {start}; offset > 0; offset /= 2) {{
    val += __shfl_down_sync({mask}, val, offset);
  }}
  return val;
}}

/* Block-level {op}: each block handles BLOCK * {vec} elements.
   The result is written to out[blockIdx.x]. */
template <typename T, int BLOCK>
__global__ void {name}_kernel_{i}(const T* __restrict__ in, T* __restrict__ out,
                                  const float scale, int n) {{
  __shared__ T smem[BLOCK];
  const int tid = threadIdx.x;
  const int idx = blockIdx.x * blockDim.x + tid;
  T acc = static_cast<T>(0);
  #pragma unroll 4
  for (int k = idx; k < n; k += gridDim.x * blockDim.x) {{
    acc += in[k] * static_cast<T>(scale);
  }}
  smem[tid] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {{
    if (tid < s) {{
      smem[tid] += smem[tid + s];
    }}
    __syncthreads();
  }}
  if (tid == 0) {{
    out[blockIdx.x] = warp_reduce_{i}<T>(smem[0]);
  }}
}}

void launch_{name}_{i}(const float* in, float* out, float scale, int n, cudaStream_t stream) {{
  const int threads = {threads};
  const int blocks = (n + threads - 1) / threads;
  float* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, blocks * sizeof(float)));
  {name}_kernel_{i}<float, {threads}><<<blocks, threads, 0, stream>>>(in, buf, scale, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(out, buf, sizeof(float), cudaMemcpyDeviceToDevice, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(buf));
}}

}}  // namespace {name}_ns
"""

HOST = """// {name}.cpp: host-side bindings for {op}.
#include <vector>
#include <string>
#include <stdexcept>
#include "{name}.h"

namespace {name}_ns {{

class {cls}Runner{i} {{
 public:
  explicit {cls}Runner{i}(int size) : size_(size), current_(0) {{
    buffer_.resize(static_cast<size_t>(size));
  }}
  // Accumulate values into the running buffer.
  void accumulate(const std::vector<float>& values) {{
    for (size_t k = 0; k < values.size(); ++k) {{
      buffer_[(current_ + k) % buffer_.size()] += values[k];
    }}
    current_ = (current_ + values.size()) % buffer_.size();
  }}
  float total() const {{
    float sum = 0.0f;
    for (float v : buffer_) sum += v;
    return sum;
  }}
 private:
  int size_;
  size_t current_;
  std::vector<float> buffer_;
}};

}}  // namespace {name}_ns
"""

PY = '''"""{name}: Python wrapper for the {op} extension."""

import torch

from . import _C


def {name}_{i}(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Apply the fused {op} kernel to ``x`` (on the current CUDA device)."""
    out = torch.empty_like(x)
    _C.launch_{name}_{i}(x, out, scale)
    return out
'''

OPS = ("softmax", "layernorm", "rmsnorm", "gelu", "rope", "topk", "scan", "gemv", "quant")


def _unit(rng: random.Random, i: int, kind: str) -> str:
    name = rng.choice(OPS)
    fields = {"year": 2020 + i % 6, "name": name, "cls": name.title(), "op": name, "i": i,
              "vec": rng.choice((1, 2, 4, 8)), "threads": rng.choice((128, 256, 512)),
              "start": rng.choice(("warpSize / 2", "16")),
              "mask": rng.choice(("__activemask()", "0xffffffff"))}
    return {"cu": KERNEL, "cpp": HOST, "py": PY}[kind].format(**fields)


def make_tree(root: Path) -> tuple[int, int]:
    """Write the tree under ``root``; (files, bytes)."""
    rng = random.Random(13)
    per_file = TOTAL_BYTES // FILES
    suffixes = (".cu", ".cu", ".cuh", ".cpp", ".h", ".cu", ".cpp", ".py")
    total = 0
    for n in range(FILES - 2):
        suffix = suffixes[n % len(suffixes)]
        kind = "py" if suffix == ".py" else ("cpp" if suffix in (".cpp", ".h") else "cu")
        parts, size = [], 0
        i = n * 100
        while size < per_file:
            part = _unit(rng, i, kind)
            parts.append(part)
            size += len(part)
            i += 1
        folder = root / f"pkg{n % 50:02d}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{n:05d}{suffix}"
        path.write_text("".join(parts))
        total += size
    (root / "requirements.txt").write_text("torch==2.4.0\nflash-attn==2.7.4\nnumpy\n")
    (root / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST=\"8.0;9.0\"\n"
        "RUN pip install -r requirements.txt\n")
    return FILES, total


def _one_core() -> list[str]:
    return ["taskset", "-c", "0"] if shutil.which("taskset") else []


def main() -> None:
    rng_text = random.Random(0)
    big = []
    size = 0
    i = 0
    while size < 10_000_000:
        part = _unit(rng_text, i, "cu" if i % 3 else "cpp")
        big.append(part)
        size += len(part)
        i += 1
    text = "".join(big)
    ctx = Context()
    scan_cuda_text("", "warm.cu", ctx)
    t_text = median_s(lambda: scan_cuda_text(text, "big.cu", ctx), RUNS)
    mb_s = len(text.encode()) / 1e6 / t_text

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        files, total = make_tree(root)
        sources = sorted(p for p in root.rglob("*") if p.suffix in (".cu", ".cuh", ".cpp", ".h"))
        core = _one_core()

        def audit() -> None:
            subprocess.run([*core, PIN, "audit", str(root), "--format", "json", "-o",
                            "/dev/null"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)

        def grep() -> None:
            # Output to a pipe: GNU grep stops at the first match when stdout is /dev/null.
            subprocess.run([*core, "grep", "-rEc", GREP_PATTERN, str(root)],
                           capture_output=True, check=False)

        rg = shutil.which("rg")

        def ripgrep() -> None:
            subprocess.run([*core, rg or "rg", "-j1", "-c", "-e", GREP_PATTERN, str(root)],
                           capture_output=True, check=False)

        def scan_all() -> None:
            for path in sources:
                scan_source(path, path.name, ctx)

        probe = subprocess.run([*core, PIN, "audit", str(root), "--format", "json", "-o",
                                "/dev/null"], capture_output=True, text=True, check=False)
        cli_ok = probe.returncode in (0, 11)
        t_grep = median_s(grep, RUNS)
        t_rg = median_s(ripgrep, RUNS) if rg else float("nan")
        t_scan = median_s(scan_all, RUNS)
        t_audit = median_s(audit, RUNS) if cli_ok else float("nan")

    one = "taskset -c 0" if core else "no"
    print(f"tree: {files} files, {total / 1e6:.1f} MB; one core: {one}")
    print(f"C/C++ scanner on a 10 MB .cu text: {mb_s:.1f} MB/s")
    if not cli_ok:
        print(f"pin audit failed (exit {probe.returncode}): {probe.stderr.strip()[:300]}")
    print(f"pin audit / grep -rE: {t_audit / t_grep:.2f}x (target <= 2x); "
          f"scanner alone / grep: {t_scan / t_grep:.2f}x")
    if rg:
        print(f"pin audit / rg -j1: {t_audit / t_rg:.1f}x; grep -rE / rg -j1: "
              f"{t_grep / t_rg:.1f}x")
    else:
        print("ripgrep not installed (apt install ripgrep): no pin audit / rg -j1 ratio")
    report({
        "pin audit tree of 5,000 files / 50 MB (s)": (t_audit, 5.0),
        "grep -rE same patterns, same tree (s)": (t_grep, float("inf")),
        "kernels.scan_source over the sources (s)": (t_scan, 5.0),
        "pin audit / grep (ratio)": (t_audit / t_grep, 2.0),
        **({"rg -j1 same patterns, same tree (s)": (t_rg, float("inf"))} if rg else {}),
        "10 MB .cu text, scan_cuda_text (s)": (t_text, 1.0),
    })


if __name__ == "__main__":
    main()
