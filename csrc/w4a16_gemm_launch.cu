// Launcher of the W4A16 mma.sync GEMM (w4a16_gemm.cuh): support checks, the automatic config and the dispatch
// over the compiled (dtype, WR, NT, ST) instances.
#include "device_attrs.h"
#include "int_math.h"
#include "w4a16_gemm.cuh"
#include "w4a16_gemm_launch.h"
#include "w4a16_params.cuh"

namespace qlinear {
namespace {

using w4a16g::GemmParams;

int gemm_code(const W4GemmConfig& c) { return c.warps * 1000 + (c.tokens / 8) * 10 + c.stages; }

int64_t output_tiles(const W4GemvArgs& a, const W4GemmConfig& c) {
  return cdiv64(a.n, 16 * c.warps) * cdiv64(a.m, c.tokens);
}

int scale_bytes(const W4GemvArgs& a) { return a.scale_dtype == W4GDType::kFloat32 ? 4 : 2; }

template <typename XT, int C>
cudaError_t launch_code(const GemmParams& gp, dim3 grid, int ssize, cudaStream_t stream) {
  using D = w4a16g::GemmCode<C>;
  const auto kernel = w4a16g::w4_gemm_kernel<XT, D::WR, D::NT, D::ST>;
  const int smem = w4a16g::gemm_smem_bytes(D::WR, D::NT, D::ST, ssize);
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
  }
  kernel<<<grid, dim3(32 * D::WR), smem, stream>>>(gp);
  return cudaGetLastError();
}

template <typename XT>
cudaError_t launch_listed(int code, const GemmParams& gp, dim3 grid, int ssize, cudaStream_t stream) {
  return with_listed_code<w4a16g::kGemmCodes>(code, cudaErrorInvalidValue, [&](auto c) {
    return launch_code<XT, decltype(c)::value>(gp, grid, ssize, stream);
  });
}

}  // namespace

const char* w4_gemm_support_reason(W4GemmSupport s) {
  switch (s) {
    case W4GemmSupport::kOk: return "supported";
    case W4GemmSupport::kBadM: return "M < 1";
    case W4GemmSupport::kBadDtype: return "x is not float16 / bfloat16";
    case W4GemmSupport::kBadK: return "K is not a positive multiple of 8";
    case W4GemmSupport::kBadGroup: return "group size is neither per channel nor a multiple of 128";
    case W4GemmSupport::kMisaligned:
      return "x not 16-byte aligned or its row stride not a multiple of 8, qweight not 16-byte aligned, "
             "scales / zeros not 4-byte aligned or N % 4 != 0";
    case W4GemmSupport::kBadConfig: return "config not compiled (w4_gemm_configs), splits, reduce or pdl out of range";
    case W4GemmSupport::kTooLarge: return "N >= 2^31, K >= 2^22 or more output tiles than counters";
    case W4GemmSupport::kWorkspace: return "a K split needs a larger fp32 workspace";
    case W4GemmSupport::kTooMuchSmem: return "the x ring exceeds the device's shared memory per CTA";
    case W4GemmSupport::kNoWgmma: return "wgmma kernel not built for this GPU (needs sm_90a device code)";
  }
  return "unknown";
}

// Automatic choice: tokens per CTA from M (32 up to M = 32, 64 up to 64, else 128: one x stage feeds
// more MMAs per weight byte), 8 warps (128 rows per CTA), 6 stages (4 at 128 tokens: shared memory);
// a K split when the output tiles
// fill less than half of the SMs, so that about one CTA runs per SM, each keeping >= 4 superblocks.
W4GemmConfig w4_gemm_resolve(const W4GemvArgs& a, const W4GemmConfig& cfg) {
  W4GemmConfig c = cfg;
  if (c.tokens <= 0) c.tokens = a.m <= 32 ? 32 : (a.m <= 64 ? 64 : 128);
  if (c.warps <= 0) c.warps = 8;
  if (c.stages <= 0) c.stages = c.tokens >= 128 ? 4 : 6;
  const int64_t nsb = cdiv64(a.k, 128);
  if (c.splits <= 0) {
    const int64_t tiles = output_tiles(a, c);
    const int64_t sms = devattr::sm_count();
    int64_t s = tiles * 2 > sms ? 1 : sms / tiles;
    const int64_t cap = nsb / 4 > 0 ? nsb / 4 : 1;
    s = s < cap ? s : cap;
    c.splits = static_cast<int>(s < 1 ? 1 : s);
  }
  // no empty splits
  if (c.splits >= 1 && c.splits <= nsb) c.splits = static_cast<int>(cdiv64(nsb, cdiv64(nsb, c.splits)));
  if (c.reduce == 0) c.reduce = 1;  // the last CTA to arrive sums (no spread reduction here)
  return c;
}

int64_t w4_gemm_workspace_floats(const W4GemvArgs& a, const W4GemmConfig& cfg) {
  const W4GemmConfig c = w4_gemm_resolve(a, cfg);
  if (c.splits <= 1) return 0;
  return output_tiles(a, c) * c.splits * c.warps * (c.tokens / 8) * 128;
}

W4GemmSupport w4_gemm_operands_supported(const W4GemvArgs& a) {
  if (a.m < 1) return W4GemmSupport::kBadM;
  if (a.x_dtype != W4GDType::kFloat16 && a.x_dtype != W4GDType::kBFloat16) return W4GemmSupport::kBadDtype;
  if (a.k < 8 || a.k % 8 != 0) return W4GemmSupport::kBadK;
  if (a.num_groups > 1 && (a.group_size < 128 || a.group_size % 128 != 0)) return W4GemmSupport::kBadGroup;
  // 16-byte cp.async pieces of x rows and weight rows, 4-byte pieces of the scale / zero rows of a group
  if (reinterpret_cast<uintptr_t>(a.x) % 16 != 0 || (a.m > 1 && a.x_stride % 8 != 0) ||
      reinterpret_cast<uintptr_t>(a.qweight) % 16 != 0 || a.qw_stride % 4 != 0 || a.n % 4 != 0 ||
      reinterpret_cast<uintptr_t>(a.scales) % 4 != 0 || reinterpret_cast<uintptr_t>(a.zeros) % 4 != 0)
    return W4GemmSupport::kMisaligned;
  return W4GemmSupport::kOk;
}

W4GemmSupport w4_gemm_supported(const W4GemvArgs& a, const W4GemmConfig& cfg, int64_t workspace_floats,
                                int64_t counters) {
  const W4GemmSupport base = w4_gemm_operands_supported(a);
  if (base != W4GemmSupport::kOk) return base;
  const W4GemmConfig c = w4_gemm_resolve(a, cfg);
  if (c.tokens % 8 != 0 || !code_listed(w4a16g::kGemmCodes, gemm_code(c)) || c.reduce != 1 || c.pdl != 0)
    return W4GemmSupport::kBadConfig;
  return w4_gemm_config_limits(a, c.splits, output_tiles(a, c), w4_gemm_workspace_floats(a, c), workspace_floats,
                               counters, w4a16g::gemm_smem_bytes(c.warps, c.tokens / 8, c.stages, scale_bytes(a)));
}

W4GemmSupport w4_gemm_config_limits(const W4GemvArgs& a, int splits, int64_t tiles, int64_t need_floats,
                                    int64_t workspace_floats, int64_t counters, int smem) {
  if (splits < 1 || splits > cdiv64(a.k, 128)) return W4GemmSupport::kBadConfig;
  if (a.n >= (int64_t{1} << 31) || a.k >= (int64_t{1} << 22) || (splits > 1 && tiles > counters))
    return W4GemmSupport::kTooLarge;
  if (splits > 1 && workspace_floats < need_floats) return W4GemmSupport::kWorkspace;
  if (smem > devattr::smem_optin()) return W4GemmSupport::kTooMuchSmem;
  return W4GemmSupport::kOk;
}

int w4_gemm_configs(int* codes, int cap) { return append_codes(w4a16g::kGemmCodes, codes, cap, 0); }

cudaError_t w4_gemm_launch(const W4GemvArgs& a, const W4GemmConfig& cfg, float* workspace, int64_t workspace_floats,
                           int32_t* counters, int64_t num_counters, cudaStream_t stream, W4GemmConfig* used) {
  if (w4_gemm_supported(a, cfg, workspace_floats, num_counters) != W4GemmSupport::kOk) return cudaErrorInvalidValue;
  const W4GemmConfig c = w4_gemm_resolve(a, cfg);
  if (used != nullptr) *used = c;
  const GemmParams gp = w4a16g::gemm_params(w4_params(a, 0), workspace, counters, c.splits);
  const dim3 grid(static_cast<unsigned>(cdiv64(a.n, 16 * c.warps)), static_cast<unsigned>(c.splits),
                  static_cast<unsigned>(cdiv64(a.m, c.tokens)));
  const cudaError_t e = a.x_dtype == W4GDType::kBFloat16
                            ? launch_listed<__nv_bfloat16>(gemm_code(c), gp, grid, scale_bytes(a), stream)
                            : launch_listed<__half>(gemm_code(c), gp, grid, scale_bytes(a), stream);
  // a failed launch also sets the thread's last error: consume it, the caller has it
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

}  // namespace qlinear
