// Thin torch binding for the RMSNorm launchers: checks device / dtype / shape / stride, then
// calls the launcher on the current CUDA stream. Registered with TORCH_LIBRARY (no pybind11, no
// Python headers) to keep the first build short; Python reaches the ops as
// torch.ops.qlinear_C.rms_norm / torch.ops.qlinear_C.fused_add_rms_norm /
// torch.ops.qlinear_C.rms_norm_slices.
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

#include "binding_util.h"
#include "msg.h"
#include "norm_launch.h"

namespace {

namespace msg = qlinear::msg;  // messages without stream number formatting: see msg.h

void check_operand(const at::Tensor& t, const char* name, const at::Tensor& ref) {
  TORCH_CHECK(t.is_cuda(), msg::cat(name, ": expected a CUDA tensor, got device ", t.device()));
  TORCH_CHECK(t.device() == ref.device(), msg::cat(name, ": on ", t.device(), " but x is on ", ref.device()));
  TORCH_CHECK_TYPE(t.scalar_type() == ref.scalar_type(),
                   msg::cat(name, ": dtype ", t.scalar_type(), " differs from x's ", ref.scalar_type()));
  TORCH_CHECK(t.dim() == 3,
              msg::cat(name, ": expected a 3-D [outer, inner, H] view, got ", msg::num(t.dim()), " dims"));
  TORCH_CHECK(t.sizes() == ref.sizes(),
              msg::cat(name, ": shape ", msg::shape(t), " differs from x's ", msg::shape(ref)));
  TORCH_CHECK(t.size(2) <= 1 || t.stride(2) == 1,
              msg::cat(name, ": expected stride(-1) == 1, got strides ", msg::strides(t)));
}

void check_weight(const at::Tensor& w, const at::Tensor& x) {
  TORCH_CHECK(w.is_cuda() && w.device() == x.device(),
              msg::cat("weight: expected a tensor on ", x.device(), ", got ", w.device()));
  TORCH_CHECK_TYPE(w.scalar_type() == x.scalar_type(),
                   msg::cat("weight: dtype ", w.scalar_type(), " differs from x's ", x.scalar_type()));
  TORCH_CHECK(w.dim() == 1 && w.size(0) == x.size(2),
              msg::cat("weight: expected shape (", msg::num(x.size(2)), ",), got ", msg::shape(w)));
  TORCH_CHECK(w.size(0) <= 1 || w.stride(0) == 1,
              msg::cat("weight: expected a contiguous vector, got stride ", msg::num(w.stride(0))));
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
      static_cast<float>(eps), qlinear::float_dtype<qlinear::NormDType>(x, "x"), c10::cuda::getCurrentCUDAStream(x.device().index()).stream(),
      make_config(vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints));
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear rms_norm launch failed: ", cudaGetErrorString(err)));
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
      static_cast<float>(eps), qlinear::float_dtype<qlinear::NormDType>(x, "x"), c10::cuda::getCurrentCUDAStream(x.device().index()).stream(),
      make_config(vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints));
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear fused_add_rms_norm launch failed: ", cudaGetErrorString(err)));
}

// outs[s] <- rms_norm(x[..., bounds[s]:bounds[s + 1]], weights[s]) for every slice, one launch.
// x, outs: 3-D [outer, inner, *] views of one leading shape; at most kNormMaxSlices slices (the
// Python wrapper splits longer lists). Overlap rules (outs[s] is x's slice s itself or disjoint
// from x and the other outputs) are checked by the Python op.
void rms_norm_slices(at::TensorList outs, const at::Tensor& x, at::IntArrayRef bounds, at::TensorList weights,
                     double eps, int64_t vecs_per_thread, int64_t block_threads, int64_t pdl) {
  check_operand(x, "x", x);
  const int64_t n = static_cast<int64_t>(weights.size());
  TORCH_CHECK(n >= 1 && n <= qlinear::kNormMaxSlices,
              msg::cat("weights: expected 1 to ", msg::num(qlinear::kNormMaxSlices), " slices per launch, got ",
                       msg::num(n)));
  TORCH_CHECK(static_cast<int64_t>(outs.size()) == n,
              msg::cat("outs: expected ", msg::num(n), " tensors (one per weight), got ", msg::num(outs.size())));
  TORCH_CHECK(static_cast<int64_t>(bounds.size()) == n + 1,
              msg::cat("bounds: expected ", msg::num(n + 1), " column offsets for ", msg::num(n), " slices, got ",
                       msg::num(bounds.size())));
  TORCH_CHECK(bounds[0] >= 0 && bounds[n] <= x.size(2),
              msg::cat("bounds: expected offsets within [0, ", msg::num(x.size(2)), "], got ", msg::dims(bounds)));
  qlinear::NormSlice slices[qlinear::kNormMaxSlices];
  for (int64_t s = 0; s < n; ++s) {
    TORCH_CHECK(bounds[s] < bounds[s + 1],
                msg::cat("bounds: expected strictly increasing offsets, got ", msg::dims(bounds)));
    const int64_t width = bounds[s + 1] - bounds[s];
    const at::Tensor& o = outs[s];
    const at::Tensor& w = weights[s];
    TORCH_CHECK(o.is_cuda() && o.device() == x.device(),
                msg::cat("outs[", msg::num(s), "]: expected a tensor on ", x.device(), ", got ", o.device()));
    TORCH_CHECK_TYPE(o.scalar_type() == x.scalar_type(),
                     msg::cat("outs[", msg::num(s), "]: dtype ", o.scalar_type(), " differs from x's ",
                              x.scalar_type()));
    TORCH_CHECK(o.dim() == 3 && o.size(0) == x.size(0) && o.size(1) == x.size(1) && o.size(2) == width,
                msg::cat("outs[", msg::num(s), "]: expected shape [", msg::num(x.size(0)), ", ",
                         msg::num(x.size(1)), ", ", msg::num(width), "], got ", msg::shape(o)));
    TORCH_CHECK(width <= 1 || o.stride(2) == 1,
                msg::cat("outs[", msg::num(s), "]: expected stride(-1) == 1, got strides ", msg::strides(o)));
    TORCH_CHECK(w.is_cuda() && w.device() == x.device(),
                msg::cat("weights[", msg::num(s), "]: expected a tensor on ", x.device(), ", got ", w.device()));
    TORCH_CHECK_TYPE(w.scalar_type() == x.scalar_type(),
                     msg::cat("weights[", msg::num(s), "]: dtype ", w.scalar_type(), " differs from x's ",
                              x.scalar_type()));
    TORCH_CHECK(w.dim() == 1 && w.size(0) == width,
                msg::cat("weights[", msg::num(s), "]: expected shape (", msg::num(width), ",), got ", msg::shape(w)));
    TORCH_CHECK(width <= 1 || w.stride(0) == 1,
                msg::cat("weights[", msg::num(s), "]: expected a contiguous vector, got stride ",
                         msg::num(w.stride(0))));
    slices[s] = qlinear::NormSlice{operand(o), w.data_ptr(), bounds[s], width};
  }
  const c10::cuda::CUDAGuard guard(x.device());
  qlinear::NormSlicesConfig cfg;
  cfg.vecs_per_thread = static_cast<int>(vecs_per_thread);
  cfg.block_threads = static_cast<int>(block_threads);
  cfg.pdl = static_cast<int>(pdl);
  const cudaError_t err = qlinear::rms_norm_slices_launch(
      operand(x), slices, static_cast<int>(n), x.size(0) * x.size(1), x.size(1), static_cast<float>(eps),
      qlinear::float_dtype<qlinear::NormDType>(x, "x"), c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), cfg);
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear rms_norm_slices launch failed: ", cudaGetErrorString(err)));
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
  m.def(
      "rms_norm_slices(Tensor(a!)[] outs, Tensor x, int[] bounds, Tensor[] weights, float eps, "
      "int vecs_per_thread=0, int block_threads=0, int pdl=0) -> ()",
      &rms_norm_slices);
}
