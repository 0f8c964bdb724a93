// Thin torch binding for the RMSNorm launchers: checks device / dtype / shape / stride, then
// calls the launcher on the current CUDA stream. Registered with TORCH_LIBRARY (no pybind11, no
// Python headers) to keep the first build short; Python reaches the ops as
// torch.ops.qlinear_C.rms_norm / torch.ops.qlinear_C.fused_add_rms_norm.
//
// The trailing int arguments are the launcher's NormConfig knobs (0 = automatic / off; see
// norm_launch.h); qlinear.ops.norm passes its dispatch table's values, benchmarks sweep them.
//
// Operands are 3-D views [n_outer, n_inner, H] with stride(2) == 1 (qlinear.ops.norm collapses
// any [..., H] view to this form without copying).
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "norm_launch.h"

namespace {

qlinear::NormDType to_norm_dtype(const at::Tensor& t, const char* name) {
  switch (t.scalar_type()) {
    case at::kHalf:
      return qlinear::NormDType::kFloat16;
    case at::kBFloat16:
      return qlinear::NormDType::kBFloat16;
    case at::kFloat:
      return qlinear::NormDType::kFloat32;
    default:
      TORCH_CHECK_TYPE(false, name, ": expected float16, bfloat16 or float32, got ", t.scalar_type());
  }
  return qlinear::NormDType::kFloat32;
}

void check_operand(const at::Tensor& t, const char* name, const at::Tensor& ref) {
  TORCH_CHECK(t.is_cuda(), name, ": expected a CUDA tensor, got device ", t.device());
  TORCH_CHECK(t.device() == ref.device(), name, ": on ", t.device(), " but x is on ", ref.device());
  TORCH_CHECK_TYPE(t.scalar_type() == ref.scalar_type(), name, ": dtype ", t.scalar_type(),
                   " differs from x's ", ref.scalar_type());
  TORCH_CHECK(t.dim() == 3, name, ": expected a 3-D [outer, inner, H] view, got ", t.dim(), " dims");
  TORCH_CHECK(t.sizes() == ref.sizes(), name, ": shape ", t.sizes(), " differs from x's ", ref.sizes());
  TORCH_CHECK(t.size(2) <= 1 || t.stride(2) == 1, name, ": expected stride(-1) == 1, got strides ",
              t.strides());
}

void check_weight(const at::Tensor& w, const at::Tensor& x) {
  TORCH_CHECK(w.is_cuda() && w.device() == x.device(), "weight: expected a tensor on ", x.device(),
              ", got ", w.device());
  TORCH_CHECK_TYPE(w.scalar_type() == x.scalar_type(), "weight: dtype ", w.scalar_type(),
                   " differs from x's ", x.scalar_type());
  TORCH_CHECK(w.dim() == 1 && w.size(0) == x.size(2), "weight: expected shape (", x.size(2),
              ",), got ", w.sizes());
  TORCH_CHECK(w.size(0) <= 1 || w.stride(0) == 1, "weight: expected a contiguous vector, got stride ",
              w.stride(0));
}

qlinear::NormOperand operand(const at::Tensor& t) {
  return qlinear::NormOperand{t.data_ptr(), t.stride(0), t.stride(1)};
}

qlinear::NormConfig make_config(int64_t vecs_per_thread, int64_t threads_per_row, int64_t rows_per_block,
                                int64_t prefetch_weight, int64_t pdl, int64_t cluster, int64_t cache_hints) {
  qlinear::NormConfig c;
  c.pdl = static_cast<int>(pdl);
  c.cluster = static_cast<int>(cluster);
  c.cache_hints = static_cast<int>(cache_hints);
  c.vecs_per_thread = static_cast<int>(vecs_per_thread);
  c.threads_per_row = static_cast<int>(threads_per_row);
  c.rows_per_block = static_cast<int>(rows_per_block);
  c.prefetch_weight = static_cast<int>(prefetch_weight);
  return c;
}

void rms_norm(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, double eps,
              int64_t vecs_per_thread, int64_t threads_per_row, int64_t rows_per_block,
              int64_t prefetch_weight, int64_t pdl, int64_t cluster, int64_t cache_hints) {
  check_operand(x, "x", x);
  check_operand(out, "out", x);
  check_weight(weight, x);
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaError_t err = qlinear::rms_norm_launch(
      operand(out), operand(x), weight.data_ptr(), x.size(0) * x.size(1), x.size(1), x.size(2),
      static_cast<float>(eps), to_norm_dtype(x, "x"), c10::cuda::getCurrentCUDAStream(x.device().index()).stream(),
      make_config(vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints));
  TORCH_CHECK(err == cudaSuccess, "qlinear rms_norm launch failed: ", cudaGetErrorString(err));
}

void fused_add_rms_norm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                        double eps, int64_t vecs_per_thread, int64_t threads_per_row,
                        int64_t rows_per_block, int64_t prefetch_weight, int64_t pdl, int64_t cluster,
                        int64_t cache_hints) {
  check_operand(x, "x", x);
  check_operand(residual, "residual", x);
  check_weight(weight, x);
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaError_t err = qlinear::fused_add_rms_norm_launch(
      operand(x), operand(residual), weight.data_ptr(), x.size(0) * x.size(1), x.size(1), x.size(2),
      static_cast<float>(eps), to_norm_dtype(x, "x"), c10::cuda::getCurrentCUDAStream(x.device().index()).stream(),
      make_config(vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints));
  TORCH_CHECK(err == cudaSuccess, "qlinear fused_add_rms_norm launch failed: ", cudaGetErrorString(err));
}

}  // namespace

TORCH_LIBRARY(qlinear_C, m) {
  m.def(
      "rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps, int vecs_per_thread=0, "
      "int threads_per_row=0, int rows_per_block=0, int prefetch_weight=0, int pdl=0, int cluster=0, "
      "int cache_hints=0) -> ()",
      &rms_norm);
  m.def(
      "fused_add_rms_norm(Tensor(a!) x, Tensor(b!) residual, Tensor weight, float eps, "
      "int vecs_per_thread=0, int threads_per_row=0, int rows_per_block=0, int prefetch_weight=0, "
      "int pdl=0, int cluster=0, int cache_hints=0) -> ()",
      &fused_add_rms_norm);
}
