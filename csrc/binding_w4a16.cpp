// Torch binding for the W4A16 / W8A16 decode GEMV (w4a16_gemv_launch.h): checks devices, dtypes,
// shapes and strides, then launches on the current CUDA stream. Registered as
//   torch.ops.qlinear_C.w4a16_gemv(out, x, qweight, scales, zeros, bias, bits, group_size, k,
//                                  shard_rows, rows_per_team=0, team_lanes=0, block_threads=0)
//   torch.ops.qlinear_C.w4a16_gemv_supported(...same inputs, no out...) -> int (0 = supported)
// x is [M, S*K] (already gathered through the act-order permutations) or [M, K]; out [M, N].
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "w4a16_gemv_launch.h"

namespace {

qlinear::W4A16FType ftype(const at::Tensor& t, const char* name) {
  switch (t.scalar_type()) {
    case at::kHalf:
      return qlinear::W4A16FType::kFloat16;
    case at::kBFloat16:
      return qlinear::W4A16FType::kBFloat16;
    case at::kFloat:
      return qlinear::W4A16FType::kFloat32;
    default:
      TORCH_CHECK_TYPE(false, name, ": expected float16, bfloat16 or float32, got ", t.scalar_type());
  }
  return qlinear::W4A16FType::kFloat32;
}

void check_on(const at::Tensor& t, const char* name, const at::Tensor& x) {
  TORCH_CHECK(t.is_cuda() && t.device() == x.device(), name, ": expected a tensor on ", x.device(), ", got ",
              t.device());
}

// Fills the launcher's arguments from the tensors (out may be undefined: the support query).
qlinear::W4A16GemvArgs make_args(const at::Tensor& out, const at::Tensor& x, const at::Tensor& qweight,
                                 const at::Tensor& scales, const std::optional<at::Tensor>& zeros,
                                 const std::optional<at::Tensor>& bias, int64_t bits, int64_t group_size,
                                 int64_t k, const std::vector<int64_t>& shard_rows) {
  TORCH_CHECK(x.is_cuda(), "x: expected a CUDA tensor, got device ", x.device());
  TORCH_CHECK_TYPE(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16,
                   "x: expected float16 or bfloat16, got ", x.scalar_type());
  TORCH_CHECK(x.dim() == 2 && (x.size(1) <= 1 || x.stride(1) == 1), "x: expected a 2-D [M, S*K] tensor with stride(1) == 1, got sizes ",
              x.sizes(), " strides ", x.strides());
  TORCH_CHECK(shard_rows.size() >= 2, "shard_rows: expected at least 2 bounds, got ", shard_rows.size());
  const int64_t num_shards = static_cast<int64_t>(shard_rows.size()) - 1;
  const int64_t n = shard_rows.back();
  TORCH_CHECK(shard_rows.front() == 0, "shard_rows: must start at 0, got ", shard_rows.front());
  TORCH_CHECK(x.size(1) == k || x.size(1) == num_shards * k, "x: expected ", k, " or ", num_shards * k,
              " columns (K or S*K), got ", x.size(1));
  check_on(qweight, "qweight", x);
  TORCH_CHECK_TYPE(qweight.scalar_type() == at::kInt, "qweight: expected int32, got ", qweight.scalar_type());
  TORCH_CHECK(bits == 4 || bits == 8, "bits: expected 4 or 8, got ", bits);
  const int64_t sb = 16 * (32 / bits);
  const int64_t words = (k + sb - 1) / sb * sb * bits / 32;
  TORCH_CHECK(qweight.dim() == 2 && qweight.size(0) == n && qweight.size(1) == words && qweight.stride(1) == 1,
              "qweight: expected [", n, ", ", words, "] with stride(1) == 1, got sizes ", qweight.sizes(),
              " strides ", qweight.strides());
  check_on(scales, "scales", x);
  TORCH_CHECK(scales.dim() == 2 && scales.size(1) == n && scales.size(0) >= 1 && scales.is_contiguous(),
              "scales: expected a contiguous [G, ", n, "] tensor, got sizes ", scales.sizes(), " strides ",
              scales.strides());
  const int64_t groups = scales.size(0);
  TORCH_CHECK(groups == 1 || groups * group_size == k, "group_size: ", group_size, " x G=", groups,
              " does not cover K=", k);
  if (zeros) {
    check_on(*zeros, "zeros", x);
    TORCH_CHECK_TYPE(zeros->scalar_type() == at::kByte, "zeros: expected uint8, got ", zeros->scalar_type());
    TORCH_CHECK(zeros->sizes() == scales.sizes() && zeros->is_contiguous(), "zeros: expected a contiguous ",
                scales.sizes(), " tensor, got sizes ", zeros->sizes(), " strides ", zeros->strides());
  }
  if (bias) {
    check_on(*bias, "bias", x);
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == n && (n <= 1 || bias->stride(0) == 1),
                "bias: expected a contiguous [", n, "] tensor, got sizes ", bias->sizes());
  }
  if (out.defined()) {
    check_on(out, "out", x);
    TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), "out: dtype ", out.scalar_type(), " differs from x's ",
                     x.scalar_type());
    TORCH_CHECK(out.dim() == 2 && out.size(0) == x.size(0) && out.size(1) == n && (n <= 1 || out.stride(1) == 1),
                "out: expected [", x.size(0), ", ", n, "] with stride(1) == 1, got sizes ", out.sizes(), " strides ",
                out.strides());
  }
  qlinear::W4A16GemvArgs a{};
  a.out = out.defined() ? out.data_ptr() : nullptr;
  a.x = x.data_ptr();
  a.qweight = qweight.data_ptr<int32_t>();
  a.scales = scales.data_ptr();
  a.zeros = zeros ? zeros->data_ptr<uint8_t>() : nullptr;
  a.bias = bias ? bias->data_ptr() : nullptr;
  a.x_row_stride = x.stride(0);
  a.x_shard_stride = x.size(1) == k ? 0 : k;
  a.out_row_stride = out.defined() ? out.stride(0) : n;
  a.qw_row_stride = qweight.stride(0);
  a.m = static_cast<int>(x.size(0));
  a.n = static_cast<int>(n);
  a.k = static_cast<int>(k);
  a.bits = static_cast<int>(bits);
  a.group_size = static_cast<int>(group_size);
  a.num_groups = static_cast<int>(groups);
  a.num_shards = static_cast<int>(num_shards);
  a.shard_rows = shard_rows.data();
  a.x_type = x.scalar_type() == at::kBFloat16 ? qlinear::W4A16XType::kBFloat16 : qlinear::W4A16XType::kFloat16;
  a.scale_type = ftype(scales, "scales");
  a.bias_type = bias ? ftype(*bias, "bias") : qlinear::W4A16FType::kFloat32;
  return a;
}

qlinear::W4A16GemvConfig make_config(int64_t rows_per_team, int64_t team_lanes, int64_t block_threads) {
  qlinear::W4A16GemvConfig c;
  c.rows_per_team = static_cast<int>(rows_per_team);
  c.team_lanes = static_cast<int>(team_lanes);
  c.block_threads = static_cast<int>(block_threads);
  return c;
}

int64_t w4a16_gemv_supported(const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                             const std::optional<at::Tensor>& zeros, const std::optional<at::Tensor>& bias,
                             int64_t bits, int64_t group_size, int64_t k, std::vector<int64_t> shard_rows,
                             int64_t rows_per_team, int64_t team_lanes, int64_t block_threads) {
  const qlinear::W4A16GemvArgs a =
      make_args(at::Tensor(), x, qweight, scales, zeros, bias, bits, group_size, k, shard_rows);
  return static_cast<int64_t>(qlinear::w4a16_gemv_supported(a, make_config(rows_per_team, team_lanes, block_threads)));
}

void w4a16_gemv(const at::Tensor& out, const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                const std::optional<at::Tensor>& zeros, const std::optional<at::Tensor>& bias, int64_t bits,
                int64_t group_size, int64_t k, std::vector<int64_t> shard_rows, int64_t rows_per_team,
                int64_t team_lanes, int64_t block_threads) {
  const qlinear::W4A16GemvArgs a = make_args(out, x, qweight, scales, zeros, bias, bits, group_size, k, shard_rows);
  const qlinear::W4A16GemvConfig cfg = make_config(rows_per_team, team_lanes, block_threads);
  const qlinear::W4A16GemvSupport why = qlinear::w4a16_gemv_supported(a, cfg);
  TORCH_CHECK(why == qlinear::W4A16GemvSupport::kOk, "qlinear w4a16_gemv: case not supported (reason code ",
              static_cast<int>(why), ", see W4A16GemvSupport in csrc/w4a16_gemv_launch.h): M=", a.m, " bits=", bits,
              " group_size=", group_size, " K=", k, " shards=", a.num_shards, " config=(", rows_per_team, ", ",
              team_lanes, ", ", block_threads, ")");
  if (a.m == 0 || a.n == 0) return;
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaError_t err =
      qlinear::w4a16_gemv_launch(a, c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), cfg);
  TORCH_CHECK(err == cudaSuccess, "qlinear w4a16_gemv launch failed: ", cudaGetErrorString(err));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(qlinear_C, m) {
  m.def(
      "w4a16_gemv(Tensor(a!) out, Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, "
      "int bits, int group_size, int k, int[] shard_rows, int rows_per_team=0, int team_lanes=0, "
      "int block_threads=0) -> ()",
      &w4a16_gemv);
  m.def(
      "w4a16_gemv_supported(Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, int bits, "
      "int group_size, int k, int[] shard_rows, int rows_per_team=0, int team_lanes=0, int block_threads=0) -> int",
      &w4a16_gemv_supported);
}
