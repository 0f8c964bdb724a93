// Torch binding of the one-launch FP8 block-scaled decode GEMM (fp8_gemv_launch.h): checks devices,
// dtypes, shapes and strides, then launches on the current CUDA stream.
//   torch.ops.qlinear_C.fp8_block_gemv(x, weight, weight_scale_inv, bias, workspace, config=0, pdl=False,
//                                      scale_eps=1e-10) -> Tensor [M, N] in x's dtype
//   torch.ops.qlinear_C.fp8_block_gemv_supported(x, weight, weight_scale_inv, workspace, config=0) -> int
//                                      (0 = supported, else a Fp8GemvSupport code)
//   torch.ops.qlinear_C.fp8_block_gemv_resolve(x, weight, weight_scale_inv, workspace, config=0) -> int
//                                      (the config code a launch would use)
//   torch.ops.qlinear_C.fp8_block_gemv_configs() -> int[]   (compiled (R, PF) pairs as R * 10 + PF)
// x [M <= 16, K] fp16 / bf16 (stride(1) == 1), weight e4m3 [N, K] (stride(1) == 1), weight_scale_inv
// fp32 [cdiv(N, 128), K / 128], bias [N] in x's dtype, workspace int32 (counters zeroed once).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "fp8_gemv_launch.h"

namespace {

void check_on(const at::Tensor& t, const char* name, const at::Tensor& x) {
  TORCH_CHECK(t.is_cuda() && t.device() == x.device(), name, ": expected a tensor on ", x.device(), ", got ",
              t.device());
}

qlinear::Fp8GemvArgs make_args(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                               const at::Tensor& workspace) {
  TORCH_CHECK(x.is_cuda(), "x: expected a CUDA tensor, got device ", x.device());
  TORCH_CHECK_TYPE(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16,
                   "x: expected float16 or bfloat16, got ", x.scalar_type());
  TORCH_CHECK(x.dim() == 2 && x.stride(1) == 1, "x: expected [M, K] with stride(1) == 1, got sizes ", x.sizes(),
              " strides ", x.strides());
  const int64_t k = x.size(1);
  check_on(w, "weight", x);
  TORCH_CHECK_TYPE(w.scalar_type() == at::kFloat8_e4m3fn, "weight: expected float8_e4m3fn, got ", w.scalar_type());
  TORCH_CHECK(w.dim() == 2 && w.size(1) == k && w.stride(1) == 1, "weight: expected [N, ", k,
              "] with stride(1) == 1, got sizes ", w.sizes(), " strides ", w.strides());
  const int64_t n = w.size(0);
  check_on(wsi, "weight_scale_inv", x);
  TORCH_CHECK_TYPE(wsi.scalar_type() == at::kFloat, "weight_scale_inv: expected float32, got ", wsi.scalar_type());
  TORCH_CHECK(wsi.dim() == 2 && wsi.size(0) == (n + 127) / 128 && wsi.size(1) == (k + 127) / 128,
              "weight_scale_inv: expected [", (n + 127) / 128, ", ", (k + 127) / 128, "], got sizes ", wsi.sizes());
  check_on(workspace, "workspace", x);
  TORCH_CHECK_TYPE(workspace.scalar_type() == at::kInt, "workspace: expected int32, got ", workspace.scalar_type());
  TORCH_CHECK(workspace.is_contiguous() && workspace.numel() >= qlinear::kFp8GemvCounters,
              "workspace: expected a contiguous int32 tensor of at least ", qlinear::kFp8GemvCounters,
              " elements, got sizes ", workspace.sizes(), " strides ", workspace.strides());
  qlinear::Fp8GemvArgs a;
  a.x = x.data_ptr();
  a.x_stride = x.stride(0);
  a.dtype = x.scalar_type() == at::kHalf ? qlinear::Fp8GDType::kFloat16 : qlinear::Fp8GDType::kBFloat16;
  a.weight = static_cast<const uint8_t*>(w.data_ptr());
  a.w_stride = w.stride(0);
  a.wsi = wsi.data_ptr<float>();
  a.wsi_s0 = wsi.stride(0);
  a.wsi_s1 = wsi.stride(1);
  a.workspace = workspace.data_ptr<int32_t>();
  a.workspace_words = workspace.numel();
  a.m = x.size(0);
  a.n = n;
  a.k = k;
  return a;
}

int64_t fp8_block_gemv_supported(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                                 const at::Tensor& workspace, int64_t config) {
  return static_cast<int64_t>(qlinear::fp8_gemv_supported(make_args(x, w, wsi, workspace), config));
}

int64_t fp8_block_gemv_resolve(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                               const at::Tensor& workspace, int64_t config) {
  const c10::cuda::CUDAGuard guard(x.device());
  return qlinear::fp8_gemv_encode(qlinear::fp8_gemv_resolve(make_args(x, w, wsi, workspace), config));
}

at::Tensor fp8_block_gemv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                          const std::optional<at::Tensor>& bias, const at::Tensor& workspace, int64_t config,
                          bool pdl, double scale_eps) {
  qlinear::Fp8GemvArgs a = make_args(x, w, wsi, workspace);
  if (bias) {
    check_on(*bias, "bias", x);
    TORCH_CHECK(bias->scalar_type() == x.scalar_type() && bias->dim() == 1 && bias->size(0) == a.n &&
                    (a.n <= 1 || bias->stride(0) == 1),
                "bias: expected a contiguous [", a.n, "] of dtype ", x.scalar_type(), ", got sizes ", bias->sizes(),
                " strides ", bias->strides(), " dtype ", bias->scalar_type());
    a.bias = bias->data_ptr();
  }
  TORCH_CHECK(scale_eps >= 1e-30, "scale_eps: expected >= 1e-30 (a normal fp32 scale), got ", scale_eps);
  a.scale_eps = static_cast<float>(scale_eps);
  at::Tensor out = at::empty({a.m, a.n}, x.options());
  if (a.m == 0 || a.n == 0) return out;
  a.out = out.data_ptr();
  a.out_stride = out.stride(0);
  const c10::cuda::CUDAGuard guard(x.device());
  const qlinear::Fp8GemvSupport why = qlinear::fp8_gemv_supported(a, config);
  TORCH_CHECK(why == qlinear::Fp8GemvSupport::kOk, "qlinear fp8_block_gemv: case not supported (code ",
              static_cast<int>(why), ", see Fp8GemvSupport in csrc/fp8_gemv_launch.h): M=", a.m, " N=", a.n,
              " K=", a.k, " x row stride=", a.x_stride, " weight row stride=", a.w_stride, " config=", config);
  const cudaError_t err =
      qlinear::fp8_gemv_launch(a, c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), config, pdl);
  TORCH_CHECK(err == cudaSuccess, "qlinear fp8_block_gemv launch failed: ", cudaGetErrorString(err));
  return out;
}

std::vector<int64_t> fp8_block_gemv_configs() {
  int codes[32];
  const int n = qlinear::fp8_gemv_configs(codes, 32);
  return std::vector<int64_t>(codes, codes + (n < 32 ? n : 32));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(qlinear_C, m) {
  m.def(
      "fp8_block_gemv(Tensor x, Tensor weight, Tensor weight_scale_inv, Tensor? bias, Tensor workspace, "
      "int config=0, bool pdl=False, float scale_eps=1e-10) -> Tensor",
      &fp8_block_gemv);
  m.def(
      "fp8_block_gemv_supported(Tensor x, Tensor weight, Tensor weight_scale_inv, Tensor workspace, "
      "int config=0) -> int",
      &fp8_block_gemv_supported);
  m.def(
      "fp8_block_gemv_resolve(Tensor x, Tensor weight, Tensor weight_scale_inv, Tensor workspace, "
      "int config=0) -> int",
      &fp8_block_gemv_resolve);
  m.def("fp8_block_gemv_configs() -> int[]", &fp8_block_gemv_configs);
}
