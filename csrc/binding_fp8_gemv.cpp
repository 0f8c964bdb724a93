// Torch binding of the one-launch FP8 block-scaled decode GEMM (fp8_gemv_launch.h): checks devices,
// dtypes, shapes and strides, then launches on the current CUDA stream.
//   torch.ops.qlinear_C.fp8_block_gemv(x, weight, weight_scale_inv, bias, workspace, config=0, pdl=False,
//                                      scale_eps=1e-10, carveout=-1) -> Tensor [M, N] in x's dtype
//   torch.ops.qlinear_C.fp8_block_gemv_preq(xq, x_scales, weight, weight_scale_inv, bias, workspace,
//                                      out_dtype, config=0, pdl=False, carveout=-1) -> Tensor [M, N] in out_dtype
//       (carveout: the launch's preferred shared-memory carveout, percent 0 .. 100, -1 none; pdl.cuh says why)
//       (x pre-quantized by per_token_group_quant_fp8: e4m3 codes xq [M, K], fp32 x_scales [M, K / 128])
//   torch.ops.qlinear_C.fp8_block_gemv_supported(x, weight, weight_scale_inv, workspace, config=0,
//                                      x_scales=None) -> int   (0 = supported, else a Fp8GemvSupport code)
//   torch.ops.qlinear_C.fp8_block_gemv_resolve(x, weight, weight_scale_inv, workspace, config=0,
//                                      x_scales=None) -> int   (the config code a launch would use)
//   torch.ops.qlinear_C.fp8_block_gemv_configs() -> int[]   (compiled (R, PF) pairs as R * 10 + PF)
// x [M <= 16, K] fp16 / bf16 (stride(1) == 1; with x_scales: e4m3 codes), weight e4m3 [N, K]
// (stride(1) == 1), weight_scale_inv fp32 [cdiv(N, 128), K / 128], bias [N] in the output dtype,
// workspace int32 (counters zeroed once).
//
// Every operand is validated (devices, dtypes, dims, sizes, strides) into an error message before
// any data pointer is read, and the message is thrown directly from this file (C10_THROW_ERROR).
// Messages are built by msg::cat from strings only: on the H200 image any c10 error whose message
// streams a number (the weight_scale_inv shape check here) kills the process with a segfault, while
// string-only messages raise normally (see msg.h).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "binding_util.h"
#include "fp8_gemv_launch.h"
#include "msg.h"

namespace {

namespace msg = qlinear::msg;  // messages without stream number formatting: see msg.h

// An operand error: `type` selects TypeError (wrong dtype) over RuntimeError.
struct Problem {
  std::string msg;
  bool type = false;
  explicit operator bool() const { return !msg.empty(); }
};

// args: strings, ScalarTypes and Devices (msg::cat; numbers through msg::num / msg::shape).
template <typename... Args>
Problem problem(bool type, const Args&... args) {
  Problem p;
  p.msg = msg::cat(args...);
  p.type = type;
  return p;
}

[[noreturn]] void throw_problem(const Problem& p) {
  if (p.type) C10_THROW_ERROR(TypeError, p.msg);
  C10_THROW_ERROR(Error, p.msg);
}

void throw_if(const Problem& p) {
  if (p) throw_problem(p);
}

Problem check_on(const at::Tensor& t, const char* name, const at::Tensor& x) {
  if (t.is_cuda() && t.device() == x.device()) return {};
  return problem(false, name, ": expected a tensor on ", x.device(), ", got ", t.device());
}

// Operands shared by both ops; x is the activation (fp16 / bf16) or, with `preq`, its e4m3 codes.
Problem check_operands(const at::Tensor& x, bool preq, const at::Tensor& w, const at::Tensor& wsi,
                       const at::Tensor& workspace) {
  const char* xname = preq ? "xq" : "x";
  if (!x.is_cuda()) return problem(false, xname, ": expected a CUDA tensor, got device ", x.device());
  if (preq ? x.scalar_type() != at::kFloat8_e4m3fn
           : (x.scalar_type() != at::kHalf && x.scalar_type() != at::kBFloat16))
    return problem(true, xname, ": expected ", preq ? "float8_e4m3fn" : "float16 or bfloat16", ", got ",
                   x.scalar_type());
  if (x.dim() != 2 || x.stride(1) != 1)
    return problem(false, xname, ": expected [M, K] with stride(1) == 1, got sizes ", msg::shape(x), " strides ",
                   msg::strides(x));
  const int64_t k = x.size(1);
  if (Problem p = check_on(w, "weight", x)) return p;
  if (w.scalar_type() != at::kFloat8_e4m3fn)
    return problem(true, "weight: expected float8_e4m3fn, got ", w.scalar_type());
  if (w.dim() != 2 || w.size(1) != k || w.stride(1) != 1)
    return problem(false, "weight: expected [N, ", msg::num(k), "] with stride(1) == 1, got sizes ", msg::shape(w),
                   " strides ", msg::strides(w));
  const int64_t n = w.size(0);
  if (Problem p = check_on(wsi, "weight_scale_inv", x)) return p;
  if (wsi.scalar_type() != at::kFloat)
    return problem(true, "weight_scale_inv: expected float32, got ", wsi.scalar_type());
  if (wsi.dim() != 2 || wsi.size(0) != (n + 127) / 128 || wsi.size(1) != (k + 127) / 128)
    return problem(false, "weight_scale_inv: expected [", msg::num((n + 127) / 128), ", ", msg::num((k + 127) / 128),
                   "], got sizes ", msg::shape(wsi));
  if (Problem p = check_on(workspace, "workspace", x)) return p;
  if (workspace.scalar_type() != at::kInt)
    return problem(true, "workspace: expected int32, got ", workspace.scalar_type());
  if (!workspace.is_contiguous() || workspace.numel() < qlinear::kFp8GemvCounters)
    return problem(false, "workspace: expected a contiguous int32 tensor of at least ",
                   msg::num(qlinear::kFp8GemvCounters), " elements, got sizes ", msg::shape(workspace), " strides ",
                   msg::strides(workspace));
  return {};
}

Problem check_x_scales(const at::Tensor& xs, const at::Tensor& xq) {
  if (Problem p = check_on(xs, "x_scales", xq)) return p;
  if (xs.scalar_type() != at::kFloat) return problem(true, "x_scales: expected float32, got ", xs.scalar_type());
  const int64_t g = (xq.size(1) + 127) / 128;
  if (xs.dim() != 2 || xs.size(0) != xq.size(0) || xs.size(1) != g)
    return problem(false, "x_scales: expected [", msg::num(xq.size(0)), ", ", msg::num(g), "], got sizes ",
                   msg::shape(xs));
  return {};
}

Problem check_bias(const std::optional<at::Tensor>& bias, const at::Tensor& x, at::ScalarType dtype, int64_t n) {
  if (!bias) return {};
  if (Problem p = check_on(*bias, "bias", x)) return p;
  if (bias->scalar_type() != dtype || bias->dim() != 1 || bias->size(0) != n || (n > 1 && bias->stride(0) != 1))
    return problem(false, "bias: expected a contiguous [", msg::num(n), "] of dtype ", dtype, ", got sizes ",
                   msg::shape(*bias), " strides ", msg::strides(*bias), " dtype ", bias->scalar_type());
  return {};
}

// Only after the checks above: reads the data pointers.
qlinear::Fp8GemvArgs make_args(const at::Tensor& x, const std::optional<at::Tensor>& xs, const at::Tensor& w,
                               const at::Tensor& wsi, const at::Tensor& workspace, at::ScalarType out_dtype) {
  qlinear::Fp8GemvArgs a;
  a.x = x.data_ptr();
  a.x_stride = x.stride(0);
  if (xs) {
    a.x_scales = xs->data_ptr<float>();
    a.xs_s0 = xs->stride(0);
    a.xs_s1 = xs->stride(1);
  }
  a.dtype = out_dtype == at::kHalf ? qlinear::Fp8GDType::kFloat16 : qlinear::Fp8GDType::kBFloat16;
  a.weight = static_cast<const uint8_t*>(w.data_ptr());
  a.w_stride = w.stride(0);
  a.wsi = wsi.data_ptr<float>();
  a.wsi_s0 = wsi.stride(0);
  a.wsi_s1 = wsi.stride(1);
  a.workspace = workspace.data_ptr<int32_t>();
  a.workspace_words = workspace.numel();
  a.m = x.size(0);
  a.n = w.size(0);
  a.k = x.size(1);
  return a;
}

// supported / resolve: x is the activation, or its codes when x_scales is given.
qlinear::Fp8GemvArgs checked_args(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                                  const at::Tensor& workspace, const std::optional<at::Tensor>& xs) {
  throw_if(check_operands(x, xs.has_value(), w, wsi, workspace));
  if (xs) throw_if(check_x_scales(*xs, x));
  return make_args(x, xs, w, wsi, workspace, xs ? at::kBFloat16 : x.scalar_type());
}

int64_t fp8_block_gemv_supported(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                                 const at::Tensor& workspace, int64_t config, const std::optional<at::Tensor>& xs) {
  const c10::cuda::CUDAGuard guard(x.device());
  return static_cast<int64_t>(qlinear::fp8_gemv_supported(checked_args(x, w, wsi, workspace, xs), config));
}

int64_t fp8_block_gemv_resolve(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                               const at::Tensor& workspace, int64_t config, const std::optional<at::Tensor>& xs) {
  const c10::cuda::CUDAGuard guard(x.device());
  return qlinear::fp8_gemv_encode(qlinear::fp8_gemv_resolve(checked_args(x, w, wsi, workspace, xs), config));
}

at::Tensor run(qlinear::Fp8GemvArgs& a, const at::Tensor& x, const std::optional<at::Tensor>& bias,
               at::ScalarType out_dtype, int64_t config, bool pdl, int64_t carveout) {
  const c10::cuda::CUDAGuard guard(x.device());
  qlinear::check_carveout(carveout);
  a.carveout = static_cast<int>(carveout);
  if (bias) a.bias = bias->data_ptr();
  at::Tensor out = at::empty({a.m, a.n}, x.options().dtype(out_dtype));
  if (a.m == 0 || a.n == 0) return out;
  a.out = out.data_ptr();
  a.out_stride = out.stride(0);
  const qlinear::Fp8GemvSupport why = qlinear::fp8_gemv_supported(a, config);
  if (why != qlinear::Fp8GemvSupport::kOk)
    throw_problem(problem(false, "qlinear fp8_block_gemv: case not supported (code ", msg::num(static_cast<int>(why)),
                          ", see Fp8GemvSupport in csrc/fp8_gemv_launch.h): M=", msg::num(a.m), " N=", msg::num(a.n),
                          " K=", msg::num(a.k), " x row stride=", msg::num(a.x_stride), " weight row stride=",
                          msg::num(a.w_stride), " config=", msg::num(config), " workspace words=",
                          msg::num(a.workspace_words)));
  const cudaError_t err =
      qlinear::fp8_gemv_launch(a, c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), config, pdl);
  if (err != cudaSuccess)
    throw_problem(problem(false, "qlinear fp8_block_gemv launch failed: ", cudaGetErrorString(err)));
  return out;
}

at::Tensor fp8_block_gemv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& wsi,
                          const std::optional<at::Tensor>& bias, const at::Tensor& workspace, int64_t config,
                          bool pdl, double scale_eps, int64_t carveout) {
  throw_if(check_operands(x, false, w, wsi, workspace));
  throw_if(check_bias(bias, x, x.scalar_type(), w.size(0)));
  if (!(scale_eps >= 1e-30))
    throw_problem(problem(false, "scale_eps: expected >= 1e-30 (a normal fp32 scale), got ", msg::num(scale_eps)));
  qlinear::Fp8GemvArgs a = make_args(x, std::nullopt, w, wsi, workspace, x.scalar_type());
  a.scale_eps = static_cast<float>(scale_eps);
  return run(a, x, bias, x.scalar_type(), config, pdl, carveout);
}

at::Tensor fp8_block_gemv_preq(const at::Tensor& xq, const at::Tensor& xs, const at::Tensor& w, const at::Tensor& wsi,
                               const std::optional<at::Tensor>& bias, const at::Tensor& workspace,
                               at::ScalarType out_dtype, int64_t config, bool pdl, int64_t carveout) {
  throw_if(check_operands(xq, true, w, wsi, workspace));
  throw_if(check_x_scales(xs, xq));
  if (out_dtype != at::kHalf && out_dtype != at::kBFloat16)
    throw_problem(problem(true, "out_dtype: expected float16 or bfloat16, got ", out_dtype));
  throw_if(check_bias(bias, xq, out_dtype, w.size(0)));
  qlinear::Fp8GemvArgs a = make_args(xq, xs, w, wsi, workspace, out_dtype);
  return run(a, xq, bias, out_dtype, config, pdl, carveout);
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
      "int config=0, bool pdl=False, float scale_eps=1e-10, int carveout=-1) -> Tensor",
      &fp8_block_gemv);
  m.def(
      "fp8_block_gemv_preq(Tensor xq, Tensor x_scales, Tensor weight, Tensor weight_scale_inv, Tensor? bias, "
      "Tensor workspace, ScalarType out_dtype, int config=0, bool pdl=False, int carveout=-1) -> Tensor",
      &fp8_block_gemv_preq);
  m.def(
      "fp8_block_gemv_supported(Tensor x, Tensor weight, Tensor weight_scale_inv, Tensor workspace, "
      "int config=0, Tensor? x_scales=None) -> int",
      &fp8_block_gemv_supported);
  m.def(
      "fp8_block_gemv_resolve(Tensor x, Tensor weight, Tensor weight_scale_inv, Tensor workspace, "
      "int config=0, Tensor? x_scales=None) -> int",
      &fp8_block_gemv_resolve);
  m.def("fp8_block_gemv_configs() -> int[]", &fp8_block_gemv_configs);
}
