// Torch binding of the multi-slice RMSNorm with FP8 outputs (norm_slices_quant_launch.h):
// torch.ops.qlinear_C.rms_norm_slices_quant and rms_norm_slices_quant_supported. The Python op
// (qlinear.ops.norm.rms_norm_slices with quant_fp8) allocates the outputs, checks overlaps and
// calls these; unsupported shapes go to per-slice kernels there.
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "binding_util.h"
#include "msg.h"
#include "norm_slices_quant_launch.h"

namespace {

namespace msg = qlinear::msg;  // messages without stream number formatting: see msg.h

// outs[s]: x's dtype [M, W_s] (plain) or float8_e4m3fn [M, W_s] (quantized, scales[s] given);
// scales[s]: fp32 [M, cdiv(W_s, group_size)], any strides.
std::vector<qlinear::NsqSlice> make_slices(at::TensorList outs, const std::vector<std::optional<at::Tensor>>& scales,
                                           const at::Tensor& x, at::IntArrayRef bounds, at::TensorList weights,
                                           int64_t group_size) {
  TORCH_CHECK(x.is_cuda(), msg::cat("x: expected a CUDA tensor, got device ", x.device()));
  TORCH_CHECK(x.dim() == 2 && (x.size(1) <= 1 || x.stride(1) == 1),
              msg::cat("x: expected [M, W] with stride(1) == 1, got shape ", msg::shape(x), " strides ",
                       msg::strides(x)));
  TORCH_CHECK(group_size > 0, msg::cat("group_size: expected a positive integer, got ", msg::num(group_size)));
  const int64_t n = static_cast<int64_t>(weights.size());
  TORCH_CHECK(n >= 1 && n <= qlinear::kNsqMaxSlices,
              msg::cat("weights: expected 1 to ", msg::num(qlinear::kNsqMaxSlices), " slices per launch, got ",
                       msg::num(n)));
  TORCH_CHECK(static_cast<int64_t>(outs.size()) == n && static_cast<int64_t>(scales.size()) == n &&
                  static_cast<int64_t>(bounds.size()) == n + 1,
              msg::cat("outs / scales / bounds: expected ", msg::num(n), " / ", msg::num(n), " / ", msg::num(n + 1),
                       " entries, got ", msg::num(outs.size()), " / ", msg::num(scales.size()), " / ",
                       msg::num(bounds.size())));
  const int64_t M = x.size(0);
  std::vector<qlinear::NsqSlice> sl(n);
  for (int64_t s = 0; s < n; ++s) {
    const int64_t col = bounds[s], width = bounds[s + 1] - bounds[s];
    TORCH_CHECK(col >= 0 && width > 0 && bounds[s + 1] <= x.size(1),
                msg::cat("bounds: slice ", msg::num(s), " [", msg::num(col), ", ", msg::num(bounds[s + 1]),
                         ") outside x's ", msg::num(x.size(1)), " columns or empty"));
    const at::Tensor& w = weights[s];
    TORCH_CHECK(w.device() == x.device() && w.scalar_type() == x.scalar_type() && w.dim() == 1 &&
                    w.size(0) == width && (width == 1 || w.stride(0) == 1),
                msg::cat("weights[", msg::num(s), "]: expected a contiguous [", msg::num(width), "] ",
                         x.scalar_type(), " on ", x.device(), ", got shape ", msg::shape(w), " strides ",
                         msg::strides(w), " dtype ", w.scalar_type(), " on ", w.device()));
    const at::Tensor& o = outs[s];
    const bool quant = scales[s].has_value();
    TORCH_CHECK(o.device() == x.device() && o.dim() == 2 && o.size(0) == M && o.size(1) == width &&
                    (width == 1 || o.stride(1) == 1),
                msg::cat("outs[", msg::num(s), "]: expected [", msg::num(M), ", ", msg::num(width),
                         "] with stride(1) == 1 on ", x.device(), ", got shape ", msg::shape(o), " strides ",
                         msg::strides(o), " on ", o.device()));
    qlinear::NsqSlice& d = sl[s];
    d.out = o.data_ptr();
    d.out_stride = o.stride(0);
    d.weight = w.data_ptr();
    d.col = col;
    d.width = width;
    if (quant) {
      TORCH_CHECK_TYPE(o.scalar_type() == at::kFloat8_e4m3fn,
                       msg::cat("outs[", msg::num(s), "]: expected float8_e4m3fn, got ", o.scalar_type()));
      const at::Tensor& sc = *scales[s];
      const int64_t G = (width + group_size - 1) / group_size;
      TORCH_CHECK(sc.device() == x.device() && sc.scalar_type() == at::kFloat && sc.dim() == 2 && sc.size(0) == M &&
                      sc.size(1) == G,
                  msg::cat("scales[", msg::num(s), "]: expected float32 [", msg::num(M), ", ", msg::num(G), "] on ",
                           x.device(), ", got shape ", msg::shape(sc), " dtype ", sc.scalar_type(), " on ",
                           sc.device()));
      d.scales = sc.data_ptr<float>();
      d.s_row = sc.stride(0);
      d.s_col = sc.stride(1);
    } else {
      TORCH_CHECK_TYPE(o.scalar_type() == x.scalar_type(),
                       msg::cat("outs[", msg::num(s), "]: expected ", x.scalar_type(), " (x's dtype), got ",
                                o.scalar_type()));
    }
  }
  return sl;
}

qlinear::NsqArgs make_args(const at::Tensor& x, const std::vector<qlinear::NsqSlice>& sl, int64_t group_size,
                           double eps, double scale_eps) {
  qlinear::NsqArgs a;
  a.x = x.data_ptr();
  a.x_stride = x.stride(0);
  a.rows = x.size(0);
  a.dtype = qlinear::float_dtype<qlinear::NsqDType>(x, "x");
  a.slices = sl.data();
  a.n_slices = static_cast<int>(sl.size());
  a.group_size = group_size;
  a.eps = static_cast<float>(eps);
  a.scale_eps = static_cast<float>(scale_eps);
  return a;
}

bool rms_norm_slices_quant_supported(at::TensorList outs, const std::vector<std::optional<at::Tensor>>& scales,
                                     const at::Tensor& x, at::IntArrayRef bounds, at::TensorList weights,
                                     int64_t group_size, double scale_eps) {
  const auto sl = make_slices(outs, scales, x, bounds, weights, group_size);
  const c10::cuda::CUDAGuard guard(x.device());
  return qlinear::rms_norm_slices_quant_supported(make_args(x, sl, group_size, 1e-6, scale_eps));
}

// Returns false, launching nothing, where the one-launch kernel does not take the arguments (the
// caller runs per-slice kernels then); true after the launch.
bool rms_norm_slices_quant(at::TensorList outs, const std::vector<std::optional<at::Tensor>>& scales,
                           const at::Tensor& x, at::IntArrayRef bounds, at::TensorList weights, double eps,
                           double scale_eps, int64_t group_size, int64_t warps_per_block, int64_t pdl) {
  const auto sl = make_slices(outs, scales, x, bounds, weights, group_size);
  qlinear::NsqConfig cfg;
  cfg.warps_per_block = static_cast<int>(warps_per_block);
  cfg.pdl = static_cast<int>(pdl);
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaError_t err = qlinear::rms_norm_slices_quant_launch(
      make_args(x, sl, group_size, eps, scale_eps), c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), cfg);
  if (err == cudaErrorNotSupported) return false;
  TORCH_CHECK(err == cudaSuccess,
              msg::cat("qlinear rms_norm_slices_quant launch failed: ", cudaGetErrorString(err)));
  return true;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(qlinear_C, m) {
  m.def(
      "rms_norm_slices_quant(Tensor(a!)[] outs, Tensor(b!)?[] scales, Tensor x, int[] bounds, Tensor[] weights, "
      "float eps, float scale_eps, int group_size, int warps_per_block, int pdl) -> bool",
      &rms_norm_slices_quant);
  m.def(
      "rms_norm_slices_quant_supported(Tensor[] outs, Tensor?[] scales, Tensor x, int[] bounds, Tensor[] weights, "
      "int group_size, float scale_eps) -> bool",
      &rms_norm_slices_quant_supported);
}
