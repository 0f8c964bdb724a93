// Torch binding of the FP8 block-quantized decode GEMV (fp8_gemv_launch.h): device / dtype /
// shape / stride checks, then the launch on the current CUDA stream. Adds to the qlinear_C
// library that binding.cpp creates; Python reaches the ops as torch.ops.qlinear_C.fp8_block_gemv
// and torch.ops.qlinear_C.fp8_block_gemv_unsupported.
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>
#include <string>

#include "fp8_gemv_launch.h"

namespace {

void check_device(const at::Tensor& t, const char* name, const at::Tensor& ref) {
  TORCH_CHECK(t.is_cuda() && t.device() == ref.device(), name, ": expected a tensor on ", ref.device(),
              ", got ", t.device());
}

void check_2d(const at::Tensor& t, const char* name, int64_t rows, int64_t cols) {
  TORCH_CHECK(t.dim() == 2 && t.size(0) == rows && t.size(1) == cols, name, ": expected shape (", rows,
              ", ", cols, "), got ", t.sizes());
}

// Fills the launcher's arguments from tensors; x e4m3 with x_scale = pre-quantized activations,
// x bf16 / fp16 without x_scale = quantized inside the kernel.
qlinear::GemvArgs make_args(const at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& x_scale,
                            const at::Tensor& weight, const at::Tensor& weight_scale,
                            const std::optional<at::Tensor>& bias, int64_t block_n, int64_t block_k,
                            double scale_eps) {
  check_device(x, "x", out);
  check_device(weight, "weight", out);
  check_device(weight_scale, "weight_scale", out);
  TORCH_CHECK_TYPE(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf,
                   "out: expected bfloat16 or float16, got ", out.scalar_type());
  TORCH_CHECK(x.dim() == 2, "x: expected [M, K], got ", x.sizes());
  const int64_t M = x.size(0), K = x.size(1);
  TORCH_CHECK_TYPE(weight.scalar_type() == at::kFloat8_e4m3fn, "weight: expected float8_e4m3fn, got ",
                   weight.scalar_type());
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) == K, "weight: expected [N, ", K, "], got ", weight.sizes());
  const int64_t N = weight.size(0);
  TORCH_CHECK(block_n > 0 && block_k > 0, "block_n, block_k: expected positive, got ", block_n, ", ", block_k);
  const int64_t G = (K + block_k - 1) / block_k;
  TORCH_CHECK_TYPE(weight_scale.scalar_type() == at::kFloat, "weight_scale: expected float32, got ",
                   weight_scale.scalar_type());
  check_2d(weight_scale, "weight_scale", (N + block_n - 1) / block_n, G);
  check_2d(out, "out", M, N);
  TORCH_CHECK(N <= 1 || out.stride(1) == 1, "out: expected stride(1) == 1, got strides ", out.strides());
  TORCH_CHECK(K <= 1 || weight.stride(1) == 1, "weight: expected stride(1) == 1, got strides ", weight.strides());
  TORCH_CHECK(K <= 1 || x.stride(1) == 1, "x: expected stride(1) == 1, got strides ", x.strides());
  qlinear::GemvArgs a{};
  a.out = out.data_ptr();
  a.x = x.data_ptr();
  a.w = weight.data_ptr();
  a.w_scale = weight_scale.data_ptr<float>();
  a.out_stride = out.stride(0);
  a.x_stride = x.stride(0);
  a.w_stride = weight.stride(0);
  a.ws_s0 = weight_scale.stride(0);
  a.ws_s1 = weight_scale.stride(1);
  a.M = M;
  a.N = N;
  a.K = K;
  a.bn = block_n;
  a.bk = block_k;
  a.scale_eps = static_cast<float>(scale_eps);
  a.dtype = out.scalar_type() == at::kBFloat16 ? qlinear::GemvDType::kBFloat16 : qlinear::GemvDType::kFloat16;
  if (x_scale.has_value()) {
    const at::Tensor& s = *x_scale;
    TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat8_e4m3fn, "x: with x_scale expected float8_e4m3fn, got ",
                     x.scalar_type());
    check_device(s, "x_scale", out);
    TORCH_CHECK_TYPE(s.scalar_type() == at::kFloat, "x_scale: expected float32, got ", s.scalar_type());
    check_2d(s, "x_scale", M, G);
    a.x_scale = s.data_ptr<float>();
    a.xs_s0 = s.stride(0);
    a.xs_s1 = s.stride(1);
  } else {
    TORCH_CHECK_TYPE(x.scalar_type() == out.scalar_type(), "x: without x_scale expected out's dtype ",
                     out.scalar_type(), ", got ", x.scalar_type());
    a.x_scale = nullptr;
  }
  if (bias.has_value()) {
    const at::Tensor& b = *bias;
    check_device(b, "bias", out);
    TORCH_CHECK(b.dim() == 1 && b.size(0) == N && b.scalar_type() == out.scalar_type() && (N <= 1 || b.stride(0) == 1),
                "bias: expected a contiguous (", N, ",) ", out.scalar_type(), " tensor, got ", b.sizes(), " ",
                b.scalar_type());
    a.bias = b.data_ptr();
  } else {
    a.bias = nullptr;
  }
  return a;
}

// out <- x @ deq(weight).T (+ bias); see fp8_gemv.cuh for the formula.
void fp8_block_gemv(const at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& x_scale,
                    const at::Tensor& weight, const at::Tensor& weight_scale, const std::optional<at::Tensor>& bias,
                    int64_t block_n, int64_t block_k, double scale_eps, int64_t warps_k, int64_t tiles) {
  const qlinear::GemvArgs a = make_args(out, x, x_scale, weight, weight_scale, bias, block_n, block_k, scale_eps);
  const char* why = qlinear::fp8_block_gemv_unsupported(a);
  TORCH_CHECK(why == nullptr, "fp8_block_gemv: unsupported operands: ", why ? why : "");
  qlinear::GemvConfig c;
  c.warps_k = static_cast<int>(warps_k);
  c.tiles = static_cast<int>(tiles);
  const c10::cuda::CUDAGuard guard(out.device());
  const cudaError_t err =
      qlinear::fp8_block_gemv_launch(a, c10::cuda::getCurrentCUDAStream(out.device().index()).stream(), c);
  TORCH_CHECK(err == cudaSuccess, "qlinear fp8_block_gemv launch failed (warps_k=", warps_k, ", tiles=", tiles,
              "): ", cudaGetErrorString(err));
}

// "" when fp8_block_gemv takes these operands, else the reason (no launch, no allocation).
std::string fp8_block_gemv_unsupported(const at::Tensor& out, const at::Tensor& x,
                                       const std::optional<at::Tensor>& x_scale, const at::Tensor& weight,
                                       const at::Tensor& weight_scale, const std::optional<at::Tensor>& bias,
                                       int64_t block_n, int64_t block_k) {
  const qlinear::GemvArgs a = make_args(out, x, x_scale, weight, weight_scale, bias, block_n, block_k, 0.0);
  const char* why = qlinear::fp8_block_gemv_unsupported(a);
  return why == nullptr ? std::string() : std::string(why);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(qlinear_C, m) {
  m.def(
      "fp8_block_gemv(Tensor(a!) out, Tensor x, Tensor? x_scale, Tensor weight, Tensor weight_scale, "
      "Tensor? bias, int block_n, int block_k, float scale_eps, int warps_k=0, int tiles=0) -> ()",
      &fp8_block_gemv);
  m.def(
      "fp8_block_gemv_unsupported(Tensor out, Tensor x, Tensor? x_scale, Tensor weight, Tensor weight_scale, "
      "Tensor? bias, int block_n, int block_k) -> str",
      &fp8_block_gemv_unsupported);
}
