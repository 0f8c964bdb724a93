// Torch binding of the W4A16 tensor-core decode launcher (w4a16_gemv_launch.h): checks devices,
// dtypes, shapes and strides, then launches on the current CUDA stream.
//   torch.ops.qlinear_C.w4a16_gemv(out, x, qweight, scales, zeros, bias, group_size, row_tiles=0,
//                                  chunk=0, warps=0, pdl=0, ring=0, pipe=0, fold=0) -> int   (ring
//                                  code used, or -warps for the register kernel)
//   torch.ops.qlinear_C.w4a16_gemv_supported(x, qweight, scales, zeros, group_size, row_tiles=0,
//                                            chunk=0, warps=0, ring=0, pipe=0, fold=0) -> int   (0 =
//                                            supported, else a W4GemvSupport code)
//   torch.ops.qlinear_C.w4a16_ring_configs(int nt) -> int[]   (compiled ring codes, then bulk ring codes >= 10000)
//   torch.ops.qlinear_C.w4a16_reg_configs() -> int[]   (compiled register-kernel codes R U NT pipe)
//   torch.ops.qlinear_C.w4a16_reg_fold_configs() -> int[]   (the codes also compiled with fold 1)
//   torch.ops.qlinear_C.w4a16_xs_configs() -> int[]   (the x-staged kernel's codes R U NT 3, pipe 3; fold 0 and 1)
//   torch.ops.qlinear_C.w4a16_gemm(out, x, qweight, scales, zeros, bias, group_size, counters, warps=0,
//                                  tokens=0, splits=0, stages=0) -> int   (the GEMM of w4a16_gemm.cuh for
//                                  M > 16; counters: zeroed int32 split-K counters the kernel leaves
//                                  zeroed; returns the config used, warps * 10^7 + tokens * 10^4 +
//                                  splits * 10 + stages)
//   torch.ops.qlinear_C.w4a16_gemm_supported(x, qweight, scales, zeros, group_size, counters, warps=0,
//                                            tokens=0, splits=0, stages=0) -> int   (a W4GemmSupport code)
//   torch.ops.qlinear_C.w4a16_gemm_configs() -> int[]   (compiled warps * 1000 + tokens / 8 * 10 + stages)
//   torch.ops.qlinear_C.w4a16_wgmma(out, x, qweight, scales, zeros, bias, group_size, counters, tokens=0,
//                                   splits=0, stages=0, reduce=0, rows=0, producer=0, pdl=0) -> int   (the
//                                   Hopper wgmma GEMM of w4a16_wgmma.cuh; rows: weight rows per CTA, 64, 128
//                                   or 192, 0 = 128; producer 1: a producer warpgroup issues the stage fills,
//                                   2 (64 rows): the warpgroups take alternate superblocks; 3 / 4 (192 rows x
//                                   176 tokens): one A buffer / A double-buffered over half superblocks;
//                                   same counters as w4a16_gemm, two per tile for a spread or pair
//                                   reduction (reduce 2 / 3); pdl 1:
//                                   programmatic dependent launch; returns w4a16_gemm's value with warps =
//                                   rows / 16, + reduce * 10^9)
//   torch.ops.qlinear_C.w4a16_wgmma_supported(x, qweight, scales, zeros, group_size, counters, tokens=0,
//                                             splits=0, stages=0, reduce=0, rows=0, producer=0) -> int   (a
//                                             W4GemmSupport code)
//   torch.ops.qlinear_C.w4a16_wgmma_configs() -> int[]   (compiled P * 10000 + H * 1000 + tokens / 8 * 10 +
//                                                         stages, H = 0 / 1 / 2 for 128 / 64 / 192 rows per
//                                                         CTA, P = 1 with a producer warpgroup, P = 2 64-row
//                                                         warpgroups on alternate superblocks, P = 3 / 4 one A
//                                                         buffer / half-superblock A buffers)
//   torch.ops.qlinear_C.w4a16_wgmma_built() -> int   (1: the current GPU runs the sm_90a wgmma code)
// x [M, K] (stride(1) == 1), out [M, N]; qweight int32 [N, ceil(K/128)*16]; scales [G, N];
// zeros uint8 [G, N] or None; 4-bit weights without act-order only.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "binding_util.h"
#include "msg.h"
#include "w4a16_gemm_launch.h"
#include "w4a16_gemv_launch.h"

namespace {

namespace msg = qlinear::msg;  // messages without stream number formatting: see msg.h

void check_on(const at::Tensor& t, const char* name, const at::Tensor& x) {
  TORCH_CHECK(t.is_cuda() && t.device() == x.device(),
              msg::cat(name, ": expected a tensor on ", x.device(), ", got ", t.device()));
}

qlinear::W4GemvArgs make_args(const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                              const std::optional<at::Tensor>& zeros, int64_t group_size) {
  TORCH_CHECK(x.is_cuda(), msg::cat("x: expected a CUDA tensor, got device ", x.device()));
  TORCH_CHECK_TYPE(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16,
                   msg::cat("x: expected float16 or bfloat16, got ", x.scalar_type()));
  TORCH_CHECK(x.dim() == 2 && (x.size(1) <= 1 || x.stride(1) == 1),
              msg::cat("x: expected [M, K] with stride(1) == 1, got sizes ", msg::shape(x), " strides ",
                       msg::strides(x)));
  const int64_t k = x.size(1);
  check_on(qweight, "qweight", x);
  TORCH_CHECK_TYPE(qweight.scalar_type() == at::kInt,
                   msg::cat("qweight: expected int32, got ", qweight.scalar_type()));
  const int64_t words = (k + 127) / 128 * 16;
  TORCH_CHECK(qweight.dim() == 2 && qweight.size(1) == words && qweight.stride(1) == 1,
              msg::cat("qweight: expected [N, ", msg::num(words), "] with stride(1) == 1, got sizes ",
                       msg::shape(qweight), " strides ", msg::strides(qweight)));
  const int64_t n = qweight.size(0);
  check_on(scales, "scales", x);
  TORCH_CHECK(scales.dim() == 2 && scales.size(1) == n && scales.size(0) >= 1 && scales.is_contiguous(),
              msg::cat("scales: expected a contiguous [G, ", msg::num(n), "], got sizes ", msg::shape(scales),
                       " strides ", msg::strides(scales)));
  const int64_t groups = scales.size(0);
  TORCH_CHECK(groups == 1 || groups * group_size == k,
              msg::cat("group_size: ", msg::num(group_size), " x G=", msg::num(groups), " does not cover K=",
                       msg::num(k)));
  if (zeros) {
    check_on(*zeros, "zeros", x);
    TORCH_CHECK_TYPE(zeros->scalar_type() == at::kByte,
                     msg::cat("zeros: expected uint8, got ", zeros->scalar_type()));
    TORCH_CHECK(zeros->sizes() == scales.sizes() && zeros->is_contiguous(),
                msg::cat("zeros: expected a contiguous ", msg::shape(scales), ", got sizes ", msg::shape(*zeros),
                         " strides ", msg::strides(*zeros)));
  }
  qlinear::W4GemvArgs a;
  a.x = x.data_ptr();
  a.x_stride = x.stride(0);
  a.x_dtype = qlinear::float_dtype<qlinear::W4GDType>(x, "x");
  a.qweight = qweight.data_ptr<int32_t>();
  a.qw_stride = qweight.stride(0);
  a.scales = scales.data_ptr();
  a.scale_dtype = qlinear::float_dtype<qlinear::W4GDType>(scales, "scales");
  a.zeros = zeros ? zeros->data_ptr<uint8_t>() : nullptr;
  a.m = x.size(0);
  a.n = n;
  a.k = k;
  a.group_size = groups == 1 ? k : group_size;
  a.num_groups = groups;
  return a;
}

// out [M, N] in x's dtype (stride(1) == 1) and bias [N] (contiguous, any float dtype) into a.
void set_out_bias(qlinear::W4GemvArgs& a, const at::Tensor& out, const std::optional<at::Tensor>& bias,
                  const at::Tensor& x) {
  check_on(out, "out", x);
  TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(),
                   msg::cat("out: dtype ", out.scalar_type(), " differs from x's ", x.scalar_type()));
  TORCH_CHECK(out.dim() == 2 && out.size(0) == a.m && out.size(1) == a.n && (a.n <= 1 || out.stride(1) == 1),
              msg::cat("out: expected [", msg::num(a.m), ", ", msg::num(a.n), "] with stride(1) == 1, got sizes ",
                       msg::shape(out), " strides ", msg::strides(out)));
  a.out = out.data_ptr();
  a.out_stride = out.stride(0);
  if (bias) {
    check_on(*bias, "bias", x);
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == a.n && (a.n <= 1 || bias->stride(0) == 1),
                msg::cat("bias: expected a contiguous [", msg::num(a.n), "], got sizes ", msg::shape(*bias),
                         " strides ", msg::strides(*bias)));
    a.bias = bias->data_ptr();
    a.bias_dtype = qlinear::float_dtype<qlinear::W4GDType>(*bias, "bias");
  }
}

qlinear::W4GemvConfig make_config(int64_t row_tiles, int64_t chunk, int64_t warps, int64_t pdl, int64_t ring,
                                  int64_t pipe = 0, int64_t fold = 0) {
  qlinear::W4GemvConfig c;
  c.row_tiles = static_cast<int>(row_tiles);
  c.chunk = static_cast<int>(chunk);
  c.warps = static_cast<int>(warps);
  c.pdl = static_cast<int>(pdl);
  c.ring = static_cast<int>(ring);
  c.pipe = static_cast<int>(pipe);
  c.fold = static_cast<int>(fold);
  return c;
}

int64_t w4a16_gemv_supported(const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                             const std::optional<at::Tensor>& zeros, int64_t group_size, int64_t row_tiles,
                             int64_t chunk, int64_t warps, int64_t ring, int64_t pipe, int64_t fold) {
  const qlinear::W4GemvArgs a = make_args(x, qweight, scales, zeros, group_size);
  const c10::cuda::CUDAGuard guard(x.device());
  return static_cast<int64_t>(qlinear::w4_gemv_supported(a, make_config(row_tiles, chunk, warps, 0, ring, pipe, fold)));
}

int64_t w4a16_gemv(const at::Tensor& out, const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                   const std::optional<at::Tensor>& zeros, const std::optional<at::Tensor>& bias, int64_t group_size,
                   int64_t row_tiles, int64_t chunk, int64_t warps, int64_t pdl, int64_t ring, int64_t pipe,
                   int64_t fold) {
  qlinear::W4GemvArgs a = make_args(x, qweight, scales, zeros, group_size);
  set_out_bias(a, out, bias, x);
  if (a.m == 0 || a.n == 0) return 0;
  const c10::cuda::CUDAGuard guard(x.device());  // the support check reads the device's attributes
  const qlinear::W4GemvConfig cfg = make_config(row_tiles, chunk, warps, pdl, ring, pipe, fold);
  const qlinear::W4GemvSupport why = qlinear::w4_gemv_supported(a, cfg);
  TORCH_CHECK(why == qlinear::W4GemvSupport::kOk,
              msg::cat("qlinear w4a16_gemv: case not supported (code ", msg::num(static_cast<int>(why)), ": ",
                       qlinear::w4_gemv_support_reason(why), "; W4GemvSupport in csrc/w4a16_gemv_launch.h): M=",
                       msg::num(a.m), " N=", msg::num(a.n), " K=", msg::num(a.k), " group_size=", msg::num(group_size),
                       " config=(", msg::num(row_tiles), ", ", msg::num(chunk), ", ", msg::num(warps), ", ",
                       msg::num(pipe), ") ring=", msg::num(ring), " fold=", msg::num(fold)));
  qlinear::W4GemvConfig used;
  const cudaError_t err =
      qlinear::w4_gemv_launch(a, c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), cfg, &used);
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear w4a16_gemv launch failed: ", cudaGetErrorString(err), " (M=",
                                           msg::num(a.m), " N=", msg::num(a.n), " K=", msg::num(a.k), " ring=",
                                           msg::num(used.ring), " warps=", msg::num(used.warps), ")"));
  return used.ring > 0 ? used.ring : -used.warps;
}

std::vector<int64_t> w4a16_ring_configs(int64_t nt) {
  TORCH_CHECK(nt == 1 || nt == 2, msg::cat("nt: expected 1 or 2, got ", msg::num(nt)));
  int codes[32];
  const int n = qlinear::w4_ring_configs(static_cast<int>(nt), codes, 32);
  return std::vector<int64_t>(codes, codes + (n < 32 ? n : 32));
}

// A launcher's compiled-code list (at most 64 entries) as the op's int[].
std::vector<int64_t> code_list(int (*list)(int*, int)) {
  int codes[64];
  const int n = list(codes, 64);
  return std::vector<int64_t>(codes, codes + (n < 64 ? n : 64));
}

std::vector<int64_t> w4a16_reg_configs() { return code_list(qlinear::w4_reg_configs); }

std::vector<int64_t> w4a16_reg_fold_configs() { return code_list(qlinear::w4_reg_fold_configs); }

std::vector<int64_t> w4a16_xs_configs() { return code_list(qlinear::w4_xs_configs); }

qlinear::W4GemmConfig gemm_config(int64_t warps, int64_t tokens, int64_t splits, int64_t stages, int64_t reduce = 0,
                                  int64_t pdl = 0, int64_t producer = 0) {
  qlinear::W4GemmConfig c;
  c.warps = static_cast<int>(warps);
  c.tokens = static_cast<int>(tokens);
  c.splits = static_cast<int>(splits);
  c.stages = static_cast<int>(stages);
  c.reduce = static_cast<int>(reduce);
  c.pdl = static_cast<int>(pdl);
  c.producer = static_cast<int>(producer);
  return c;
}

void check_counters(const at::Tensor& counters, const at::Tensor& x) {
  check_on(counters, "counters", x);
  TORCH_CHECK_TYPE(counters.scalar_type() == at::kInt, msg::cat("counters: expected int32, got ", counters.scalar_type()));
  TORCH_CHECK(counters.dim() == 1 && counters.is_contiguous(),
              msg::cat("counters: expected a contiguous 1-D tensor, got sizes ", msg::shape(counters)));
}

// The launcher entry points of one GEMM family (mma.sync w4a16_gemm.cuh, or wgmma w4a16_wgmma.cuh).
struct GemmFamily {
  const char* op;
  int64_t (*workspace)(const qlinear::W4GemvArgs&, const qlinear::W4GemmConfig&);
  qlinear::W4GemmSupport (*supported)(const qlinear::W4GemvArgs&, const qlinear::W4GemmConfig&, int64_t, int64_t);
  cudaError_t (*launch)(const qlinear::W4GemvArgs&, const qlinear::W4GemmConfig&, float*, int64_t, int32_t*, int64_t,
                        cudaStream_t, qlinear::W4GemmConfig*);
};
constexpr GemmFamily kMmaGemm{"w4a16_gemm", qlinear::w4_gemm_workspace_floats, qlinear::w4_gemm_supported,
                              qlinear::w4_gemm_launch};
constexpr GemmFamily kWgmmaGemm{"w4a16_wgmma", qlinear::w4_wgmma_workspace_floats, qlinear::w4_wgmma_supported,
                                qlinear::w4_wgmma_launch};

int64_t gemm_supported(const GemmFamily& f, const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                       const std::optional<at::Tensor>& zeros, int64_t group_size, const at::Tensor& counters,
                       const qlinear::W4GemmConfig& c) {
  const qlinear::W4GemvArgs a = make_args(x, qweight, scales, zeros, group_size);
  check_counters(counters, x);
  const c10::cuda::CUDAGuard guard(x.device());
  // the op allocates the workspace it needs: only the config and operands are checked here
  return static_cast<int64_t>(f.supported(a, c, f.workspace(a, c), counters.numel()));
}

// Returns the config used in decimal fields: warps * 10^7 + tokens * 10^4 + splits * 10 + stages.
int64_t gemm_run(const GemmFamily& f, const at::Tensor& out, const at::Tensor& x, const at::Tensor& qweight,
                 const at::Tensor& scales, const std::optional<at::Tensor>& zeros,
                 const std::optional<at::Tensor>& bias, int64_t group_size, const at::Tensor& counters,
                 const qlinear::W4GemmConfig& cfg) {
  qlinear::W4GemvArgs a = make_args(x, qweight, scales, zeros, group_size);
  set_out_bias(a, out, bias, x);
  check_counters(counters, x);
  if (a.m == 0 || a.n == 0) return 0;
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t need = f.workspace(a, cfg);
  const qlinear::W4GemmSupport why = f.supported(a, cfg, need, counters.numel());
  TORCH_CHECK(why == qlinear::W4GemmSupport::kOk,
              msg::cat("qlinear ", f.op, ": case not supported (code ", msg::num(static_cast<int>(why)), ": ",
                       qlinear::w4_gemm_support_reason(why), "; W4GemmSupport in csrc/w4a16_gemm_launch.h): M=",
                       msg::num(a.m), " N=", msg::num(a.n), " K=", msg::num(a.k), " group_size=", msg::num(group_size),
                       " config=(", msg::num(cfg.warps), ", ", msg::num(cfg.tokens), ", ", msg::num(cfg.splits), ", ",
                       msg::num(cfg.stages), ") reduce=", msg::num(cfg.reduce)));
  // fp32 partials of a K split from the caching allocator (stream-ordered; a graph capture owns it)
  at::Tensor ws = at::empty({need > 0 ? need : 1}, x.options().dtype(at::kFloat));
  qlinear::W4GemmConfig used;
  const cudaError_t err =
      f.launch(a, cfg, ws.data_ptr<float>(), need, counters.data_ptr<int32_t>(), counters.numel(),
               c10::cuda::getCurrentCUDAStream(x.device().index()).stream(), &used);
  TORCH_CHECK(err == cudaSuccess, msg::cat("qlinear ", f.op, " launch failed: ", cudaGetErrorString(err), " (M=",
                                           msg::num(a.m), " N=", msg::num(a.n), " K=", msg::num(a.k), ")"));
  const int64_t code = int64_t{used.warps} * 10000000 + int64_t{used.tokens} * 10000 + int64_t{used.splits} * 10 + used.stages;
  return &f == &kWgmmaGemm ? code + int64_t{used.reduce} * 1000000000 : code;
}

int64_t w4a16_gemm_supported(const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                             const std::optional<at::Tensor>& zeros, int64_t group_size, const at::Tensor& counters,
                             int64_t warps, int64_t tokens, int64_t splits, int64_t stages) {
  return gemm_supported(kMmaGemm, x, qweight, scales, zeros, group_size, counters,
                        gemm_config(warps, tokens, splits, stages));
}

int64_t w4a16_gemm(const at::Tensor& out, const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                   const std::optional<at::Tensor>& zeros, const std::optional<at::Tensor>& bias, int64_t group_size,
                   const at::Tensor& counters, int64_t warps, int64_t tokens, int64_t splits, int64_t stages) {
  return gemm_run(kMmaGemm, out, x, qweight, scales, zeros, bias, group_size, counters,
                  gemm_config(warps, tokens, splits, stages));
}

// The wgmma GEMM's rows per CTA as the config's 16-row tiles (0 = automatic).
int64_t wgmma_warps(int64_t rows) {
  TORCH_CHECK(rows == 0 || rows == 64 || rows == 128 || rows == 192,
              msg::cat("w4a16_wgmma: rows: expected 0 (automatic), 64, 128 or 192 weight rows per CTA, got ",
                       msg::num(rows)));
  return rows / 16;
}

int64_t w4a16_wgmma_supported(const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                              const std::optional<at::Tensor>& zeros, int64_t group_size, const at::Tensor& counters,
                              int64_t tokens, int64_t splits, int64_t stages, int64_t reduce, int64_t rows,
                              int64_t producer) {
  return gemm_supported(kWgmmaGemm, x, qweight, scales, zeros, group_size, counters,
                        gemm_config(wgmma_warps(rows), tokens, splits, stages, reduce, 0, producer));
}

int64_t w4a16_wgmma(const at::Tensor& out, const at::Tensor& x, const at::Tensor& qweight, const at::Tensor& scales,
                    const std::optional<at::Tensor>& zeros, const std::optional<at::Tensor>& bias, int64_t group_size,
                    const at::Tensor& counters, int64_t tokens, int64_t splits, int64_t stages, int64_t reduce,
                    int64_t rows, int64_t producer, int64_t pdl) {
  return gemm_run(kWgmmaGemm, out, x, qweight, scales, zeros, bias, group_size, counters,
                  gemm_config(wgmma_warps(rows), tokens, splits, stages, reduce, pdl, producer));
}

std::vector<int64_t> w4a16_wgmma_configs() { return code_list(qlinear::w4_wgmma_configs); }

// 1 when the current device runs the extension's wgmma device code (sm_90a build on an sm_90 GPU).
int64_t w4a16_wgmma_built() { return qlinear::w4_wgmma_built(); }

std::vector<int64_t> w4a16_gemm_configs() { return code_list(qlinear::w4_gemm_configs); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(qlinear_C, m) {
  m.def(
      "w4a16_gemv(Tensor(a!) out, Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, "
      "int group_size, int row_tiles=0, int chunk=0, int warps=0, int pdl=0, int ring=0, int pipe=0, int fold=0) -> int",
      &w4a16_gemv);
  m.def(
      "w4a16_gemv_supported(Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, int group_size, "
      "int row_tiles=0, int chunk=0, int warps=0, int ring=0, int pipe=0, int fold=0) -> int",
      &w4a16_gemv_supported);
  m.def("w4a16_ring_configs(int nt) -> int[]", &w4a16_ring_configs);
  m.def("w4a16_reg_configs() -> int[]", &w4a16_reg_configs);
  m.def("w4a16_reg_fold_configs() -> int[]", &w4a16_reg_fold_configs);
  m.def("w4a16_xs_configs() -> int[]", &w4a16_xs_configs);
  m.def(
      "w4a16_gemm(Tensor(a!) out, Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, "
      "int group_size, Tensor(b!) counters, int warps=0, int tokens=0, int splits=0, int stages=0) -> int",
      &w4a16_gemm);
  m.def(
      "w4a16_gemm_supported(Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, int group_size, "
      "Tensor counters, int warps=0, int tokens=0, int splits=0, int stages=0) -> int",
      &w4a16_gemm_supported);
  m.def("w4a16_gemm_configs() -> int[]", &w4a16_gemm_configs);
  m.def(
      "w4a16_wgmma(Tensor(a!) out, Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, "
      "int group_size, Tensor(b!) counters, int tokens=0, int splits=0, int stages=0, int reduce=0, int rows=0, "
      "int producer=0, int pdl=0) -> int",
      &w4a16_wgmma);
  m.def(
      "w4a16_wgmma_supported(Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, int group_size, "
      "Tensor counters, int tokens=0, int splits=0, int stages=0, int reduce=0, int rows=0, int producer=0) -> int",
      &w4a16_wgmma_supported);
  m.def("w4a16_wgmma_configs() -> int[]", &w4a16_wgmma_configs);
  m.def("w4a16_wgmma_built() -> int", &w4a16_wgmma_built);
}
