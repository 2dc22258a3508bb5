#include <cuda_runtime.h>
#include <torch/extension.h>

#define WARP_SIZE 32

__device__ float warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffff, v, offset);
  }
  return v;
}

__device__ unsigned lane_id() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__global__ void warp_sum_kernel(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  v = warp_reduce(v);
#if __CUDA_ARCH__ >= 800
  if ((threadIdx.x & 31) == 0) out[i / 32] = v;
#endif
}

torch::Tensor warp_sum(torch::Tensor x) {
  auto out = torch::empty({(x.numel() + 31) / 32}, x.options());
  float* scratch;
  cudaMalloc(&scratch, 16);
  warp_sum_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
  cudaFree(scratch);
  return out;
}
