// Torch binding of the fused RMSNorm -> FP8 launcher and of the plain per-token-group FP8 quantizer:
// checks devices, dtypes, shapes and strides, then launches on the current CUDA stream. Python reaches
// them as torch.ops.qlinear_C.rms_norm_quant_fp8 and .group_quant_fp8 (qlinear.ops.fp8 allocates q /
// scales and calls them).
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>

#include "binding_util.h"
#include "msg.h"
#include "group_quant_launch.h"
#include "norm_quant_launch.h"

namespace {

namespace msg = qlinear::msg;  // messages without stream number formatting: see msg.h

void check_cuda(const at::Tensor& t, const char* name, const at::Tensor& x) {
  TORCH_CHECK(t.is_cuda() && t.device() == x.device(),
              msg::cat(name, ": expected a tensor on ", x.device(), ", got ", t.device()));
}

bool overlap(const at::Tensor& a, const at::Tensor& b) {
  // byte ranges [first, last element]; conservative for strided views
  const auto span = [](const at::Tensor& t) {
    const char* p = static_cast<const char*>(t.data_ptr());
    int64_t last = 0;
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    return std::make_pair(p, p + (last + 1) * static_cast<int64_t>(t.element_size()));
  };
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto sa = span(a), sb = span(b);
  return sa.first < sb.second && sb.first < sa.second;
}

// Checks x [M, K], q and scales (devices, dtypes, shapes, strides, no overlap with x) and fills the shared
// operands; raises naming the parameter. padded: q / scales may have more rows than x (M_pad >= M, taken
// from q), else exactly M.
void fill_quant_operands(qlinear::QuantOperands& a, const at::Tensor& q, const at::Tensor& scales,
                         const at::Tensor& x, int64_t group_size, double scale_eps, bool padded) {
  TORCH_CHECK(x.is_cuda(), msg::cat("x: expected a CUDA tensor, got device ", x.device()));
  TORCH_CHECK(x.dim() == 2, msg::cat("x: expected [M, K], got ", msg::num(x.dim()), " dims"));
  const int64_t M = x.size(0), K = x.size(1);
  TORCH_CHECK(K > 0, msg::cat("x: expected K > 0, got shape ", msg::shape(x)));
  TORCH_CHECK(x.stride(1) == 1, msg::cat("x: expected stride(1) == 1, got strides ", msg::strides(x)));
  TORCH_CHECK(group_size > 0, msg::cat("group_size: expected a positive integer, got ", msg::num(group_size)));
  a.dtype = qlinear::float_dtype<qlinear::NqDType>(x, "x");
  const int64_t G = (K + group_size - 1) / group_size;

  check_cuda(q, "q", x);
  TORCH_CHECK_TYPE(q.scalar_type() == at::kFloat8_e4m3fn,
                   msg::cat("q: expected float8_e4m3fn, got ", q.scalar_type()));
  if (padded) {
    TORCH_CHECK(q.dim() == 2 && q.size(0) >= M && q.size(1) == K && q.stride(1) == 1,
                msg::cat("q: expected [M_pad >= ", msg::num(M), ", ", msg::num(K),
                         "] with stride(1) == 1, got shape ", msg::shape(q), " strides ", msg::strides(q)));
  } else {
    TORCH_CHECK(q.dim() == 2 && q.size(0) == M && q.size(1) == K && q.stride(1) == 1,
                msg::cat("q: expected [", msg::num(M), ", ", msg::num(K), "] with stride(1) == 1, got shape ",
                         msg::shape(q), " strides ", msg::strides(q)));
  }
  const int64_t rows_out = q.size(0);
  check_cuda(scales, "scales", x);
  TORCH_CHECK_TYPE(scales.scalar_type() == at::kFloat,
                   msg::cat("scales: expected float32, got ", scales.scalar_type()));
  TORCH_CHECK(scales.dim() == 2 && scales.size(0) == rows_out && scales.size(1) == G,
              msg::cat("scales: expected shape [", msg::num(rows_out), ", ", msg::num(G), "], got ",
                       msg::shape(scales)));
  TORCH_CHECK(!overlap(q, x) && !overlap(scales, x), "q / scales: must not overlap x");

  a.x = x.data_ptr();
  a.x_stride = x.stride(0);
  a.q = q.data_ptr();
  a.q_stride = q.stride(0);
  a.scales = scales.data_ptr<float>();
  a.s_row_stride = scales.stride(0);
  a.s_col_stride = scales.stride(1);
  a.rows = M;
  a.hidden = K;
  a.group_size = group_size;
  a.scale_eps = static_cast<float>(scale_eps);
}

// Returns what ran: 2 = fixed-size row kernel, 3 = its bulk-copy form, 8 / 16 = register kernel with
// that many vectors per lane, 5 = block-per-row kernel, 1 = two-pass vector kernel, 0 = generic
// element-wise kernel, -1 = nothing (zero rows).
int64_t rms_norm_quant_fp8_variant(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x,
                                   const std::optional<at::Tensor>& residual, const at::Tensor& weight, double eps,
                                   double scale_eps, int64_t group_size, int64_t warps_per_block,
                                   int64_t blocks_per_sm, int64_t path, int64_t prefetch, int64_t variant) {
  qlinear::NormQuantArgs a;
  fill_quant_operands(a, q, scales, x, group_size, scale_eps, false);
  const int64_t K = x.size(1);
  check_cuda(weight, "weight", x);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == K && (K == 1 || weight.stride(0) == 1),
              msg::cat("weight: expected a contiguous [", msg::num(K), "], got shape ", msg::shape(weight),
                       " strides ", msg::strides(weight)));
  a.weight = weight.data_ptr();
  a.weight_dtype = qlinear::float_dtype<qlinear::NqDType>(weight, "weight");
  if (residual.has_value()) {
    const at::Tensor& r = *residual;
    check_cuda(r, "residual", x);
    TORCH_CHECK_TYPE(r.scalar_type() == x.scalar_type(),
                     msg::cat("residual: dtype ", r.scalar_type(), " differs from x's ", x.scalar_type()));
    TORCH_CHECK(r.dim() == 2 && r.sizes() == x.sizes() && r.stride(1) == 1,
                msg::cat("residual: expected shape ", msg::shape(x), " with stride(1) == 1, got shape ",
                         msg::shape(r), " strides ", msg::strides(r)));
    // x is read through the read-only cache while residual is written
    TORCH_CHECK(!overlap(r, x), "residual: must not overlap x");
    a.residual = r.data_ptr();
    a.residual_stride = r.stride(0);
  }
  a.eps = static_cast<float>(eps);

  qlinear::NormQuantConfig cfg;
  cfg.warps_per_block = static_cast<int>(warps_per_block);
  cfg.blocks_per_sm = static_cast<int>(blocks_per_sm);
  cfg.path = static_cast<int>(path);
  cfg.prefetch = static_cast<int>(prefetch);
  cfg.variant = static_cast<int>(variant);
  int used = -1;
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaError_t err = qlinear::rms_norm_quant_fp8_launch(
      a, c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), cfg, &used);
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear rms_norm_quant_fp8 launch failed: ", cudaGetErrorString(err)));
  return used;
}

int64_t rms_norm_quant_fp8(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x,
                           const std::optional<at::Tensor>& residual, const at::Tensor& weight, double eps,
                           double scale_eps, int64_t group_size, int64_t warps_per_block, int64_t blocks_per_sm,
                           int64_t path, int64_t prefetch) {
  return rms_norm_quant_fp8_variant(q, scales, x, residual, weight, eps, scale_eps, group_size, warps_per_block,
                                    blocks_per_sm, path, prefetch, 0);
}

// The quantizer's arguments for q [M_pad, K] / scales [M_pad, G] written from x [M <= M_pad, K].
qlinear::GroupQuantArgs group_quant_args(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x,
                                         int64_t group_size, double scale_eps) {
  qlinear::GroupQuantArgs a;
  fill_quant_operands(a, q, scales, x, group_size, scale_eps, true);
  a.rows_pad = q.size(0);
  return a;
}

// 0 when group_quant_fp8 takes these operands, else the GroupQuantSupport reason (group_quant_launch.h).
int64_t group_quant_fp8_supported(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x,
                                  int64_t group_size) {
  return qlinear::group_quant_fp8_supported(group_quant_args(q, scales, x, group_size, 1e-10));
}

void group_quant_fp8(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x, int64_t group_size,
                     double scale_eps, bool pdl, int64_t trigger, int64_t threads, bool prefetch, int64_t carveout) {
  const qlinear::GroupQuantArgs a = group_quant_args(q, scales, x, group_size, scale_eps);
  const int why = qlinear::group_quant_fp8_supported(a);
  TORCH_CHECK(why == 0, msg::cat("qlinear group_quant_fp8: case not supported (code ", msg::num(why),
                                 ", see GroupQuantSupport in csrc/group_quant_launch.h): x ", msg::shape(x),
                                 " strides ", msg::strides(x), " ", x.scalar_type(), ", group_size ",
                                 msg::num(group_size)));
  TORCH_CHECK(trigger >= 0 && trigger <= 3,
              msg::cat("trigger: expected 0 (late), 1 (early), 2 (first) or 3 (exit), got ", msg::num(trigger)));
  TORCH_CHECK(threads == 0 || (threads >= 32 && threads <= 512 && threads % 32 == 0),
              msg::cat("threads: expected 0 or a multiple of 32 from 32 to 512, got ", msg::num(threads)));
  qlinear::check_carveout(carveout);
  qlinear::GroupQuantLaunch launch;
  launch.threads = static_cast<int>(threads);
  launch.pdl = pdl;
  launch.trigger = static_cast<int>(trigger);
  launch.prefetch = prefetch;
  launch.carveout = static_cast<int>(carveout);
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaError_t err =
      qlinear::group_quant_fp8_launch(a, c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), launch);
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear group_quant_fp8 launch failed: ", cudaGetErrorString(err)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(qlinear_C, m) {
  m.def(
      "rms_norm_quant_fp8(Tensor(a!) q, Tensor(b!) scales, Tensor x, Tensor(c!)? residual, Tensor weight, "
      "float eps, float scale_eps, int group_size, int warps_per_block=0, int blocks_per_sm=0, int path=0, "
      "int prefetch=0) -> int",
      &rms_norm_quant_fp8);
  // the same with the row kernel's launch variant (benchmarks and tests; see NormQuantConfig)
  m.def(
      "rms_norm_quant_fp8_variant(Tensor(a!) q, Tensor(b!) scales, Tensor x, Tensor(c!)? residual, "
      "Tensor weight, float eps, float scale_eps, int group_size, int warps_per_block, int blocks_per_sm, "
      "int path, int prefetch, int variant) -> int",
      &rms_norm_quant_fp8_variant);
  // the plain per-token-group quantizer (q may have padding rows past x's; see group_quant_launch.h)
  m.def("group_quant_fp8_supported(Tensor q, Tensor scales, Tensor x, int group_size) -> int",
        &group_quant_fp8_supported);
  m.def(
      "group_quant_fp8(Tensor(a!) q, Tensor(b!) scales, Tensor x, int group_size, float scale_eps, bool pdl=False, "
      "int trigger=0, int threads=0, bool prefetch=False, int carveout=-1) -> ()",
      &group_quant_fp8);
}
