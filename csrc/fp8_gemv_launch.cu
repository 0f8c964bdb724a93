// Host side of the FP8 decode GEMV: operand checks, the (warps_k, tiles) choice and the launch.
// One translation unit with every instantiation: M in 1..4 x {bf16, fp16} x {pre-quantized, fused
// activation quantization} = 16 small kernels.
#include "fp8_gemv.cuh"
#include "fp8_gemv_launch.h"

namespace qlinear {
namespace {

using gemv::Params;

constexpr int kMaxWarps = 16;
constexpr int64_t kMaxSmem = 48 * 1024;  // the default dynamic limit: no cudaFuncSetAttribute call
// Warps wanted in flight over the whole GPU (~16 per SM on 132 SMs): each holds 4 steps x 2 x 16 B
// per lane, so 16 warps keep ~64 KiB of weight loads in flight per SM.
constexpr int kTargetWarps = 132 * 16;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

GemvConfig resolve(const GemvArgs& a, GemvConfig c) {
  const int64_t tiles_total = cdiv(a.N, gemv::kTileRows);
  const int64_t steps = cdiv(a.K, gemv::kStepCols);
  if (c.warps_k <= 0) {
    int64_t want = cdiv(kTargetWarps, tiles_total);
    int wk = 1;
    while (wk < want && wk < kMaxWarps) wk *= 2;
    c.warps_k = static_cast<int>(wk > steps ? steps : wk);
  }
  if (c.tiles <= 0) {
    // >= 8 warps per block, but never more tiles than exist
    int tb = c.warps_k >= 8 ? 1 : 8 / c.warps_k;
    c.tiles = static_cast<int>(tb > tiles_total ? tiles_total : tb);
  }
  return c;
}

int64_t smem_bytes(const GemvArgs& a, const GemvConfig& c) {
  int64_t bytes = c.warps_k > 1 ? int64_t{c.tiles} * c.warps_k * 32 * 4 * 4 : 0;
  if (a.x_scale == nullptr) {
    const int64_t G = cdiv(a.K, a.bk);
    bytes = (bytes + 15) / 16 * 16 + (a.M * a.K + 15) / 16 * 16 + a.M * G * 4;
  }
  return bytes;
}

template <int M, typename T, bool F>
cudaError_t launch_one(const Params& p, int64_t blocks, int threads, int64_t smem, cudaStream_t stream) {
  gemv::fp8_block_gemv_kernel<M, T, F><<<static_cast<unsigned>(blocks), threads, static_cast<size_t>(smem), stream>>>(p);
  return cudaGetLastError();
}

template <int M, typename T>
cudaError_t launch_m(const Params& p, bool fused, int64_t blocks, int threads, int64_t smem, cudaStream_t s) {
  return fused ? launch_one<M, T, true>(p, blocks, threads, smem, s) : launch_one<M, T, false>(p, blocks, threads, smem, s);
}

template <typename T>
cudaError_t launch_t(const Params& p, int64_t M, bool fused, int64_t blocks, int threads, int64_t smem, cudaStream_t s) {
  switch (M) {
    case 1: return launch_m<1, T>(p, fused, blocks, threads, smem, s);
    case 2: return launch_m<2, T>(p, fused, blocks, threads, smem, s);
    case 3: return launch_m<3, T>(p, fused, blocks, threads, smem, s);
    case 4: return launch_m<4, T>(p, fused, blocks, threads, smem, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

const char* fp8_block_gemv_unsupported(const GemvArgs& a) {
  if (a.M < 1 || a.M > 4) return "M (rows of x) must be in 1..4";
  if (a.N < 1 || a.K < 16) return "N must be >= 1 and K >= 16";
  if (a.K % 16) return "K must be a multiple of 16";
  if (a.bn <= 0 || a.bn % 16) return "block_n must be a positive multiple of 16";
  if (a.bk <= 0 || a.bk % 64) return "block_k must be a positive multiple of 64";
  if (!aligned16(a.w) || a.w_stride % 16) return "weight rows must be 16-byte aligned";
  if (a.x_scale != nullptr && (!aligned16(a.x) || (a.M > 1 && a.x_stride % 16)))
    return "e4m3 activation rows must be 16-byte aligned";
  if (a.K > (int64_t{1} << 30) || a.N > (int64_t{1} << 30)) return "N and K must be < 2^30";
  if (smem_bytes(a, resolve(a, GemvConfig())) > kMaxSmem)
    return "the fused activation quantization needs more than 48 KiB of shared memory";
  return nullptr;
}

int64_t fp8_block_gemv_smem_bytes(const GemvArgs& a, GemvConfig config) {
  if (fp8_block_gemv_unsupported(a) != nullptr) return 0;
  return smem_bytes(a, resolve(a, config));
}

cudaError_t fp8_block_gemv_launch(const GemvArgs& a, cudaStream_t stream, GemvConfig config) {
  if (fp8_block_gemv_unsupported(a) != nullptr) return cudaErrorInvalidValue;
  const GemvConfig c = resolve(a, config);
  if (c.warps_k < 1 || c.tiles < 1 || c.warps_k * c.tiles > kMaxWarps) return cudaErrorInvalidValue;
  const int64_t smem = smem_bytes(a, c);
  if (smem > kMaxSmem) return cudaErrorInvalidValue;
  Params p;
  p.out = a.out;
  p.x = a.x;
  p.x_scale = a.x_scale;
  p.w = static_cast<const uint8_t*>(a.w);
  p.w_scale = a.w_scale;
  p.bias = a.bias;
  p.out_stride = a.out_stride;
  p.x_stride = a.x_stride;
  p.xs_s0 = a.xs_s0;
  p.xs_s1 = a.xs_s1;
  p.w_stride = a.w_stride;
  p.ws_s0 = a.ws_s0;
  p.ws_s1 = a.ws_s1;
  p.N = static_cast<int>(a.N);
  p.K = static_cast<int>(a.K);
  p.G = static_cast<int>(cdiv(a.K, a.bk));
  p.bn = static_cast<int>(a.bn);
  p.bk = static_cast<int>(a.bk);
  p.warps_k = c.warps_k;
  p.tiles = c.tiles;
  p.scale_eps = a.scale_eps;
  const int64_t blocks = cdiv(cdiv(a.N, gemv::kTileRows), c.tiles);
  const int threads = 32 * c.warps_k * c.tiles;
  const bool fused = a.x_scale == nullptr;
  if (a.dtype == GemvDType::kBFloat16) return launch_t<__nv_bfloat16>(p, a.M, fused, blocks, threads, smem, stream);
  return launch_t<__half>(p, a.M, fused, blocks, threads, smem, stream);
}

}  // namespace qlinear
