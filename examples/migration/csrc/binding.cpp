// Python binding of the fused RMSNorm kernel (csrc/rmsnorm.cu).
#include <torch/extension.h>

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &rmsnorm_forward, "RMSNorm over the last dimension (CUDA)",
        py::arg("x"), py::arg("weight"), py::arg("eps") = 1e-6);
}
