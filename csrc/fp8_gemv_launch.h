// Host launcher of the one-launch FP8 block-scaled decode GEMM (fp8_gemv.cuh): x [m <= 16, k] fp16 /
// bf16 quantized in the kernel (or pre-quantized: e4m3 codes + fp32 group scales), e4m3 weight [n, k]
// with fp32 128 x 128 block scales. Raw pointers, strides in elements (weight and codes: bytes), a
// cudaStream_t; no torch headers.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

enum class Fp8GDType : int { kFloat16 = 0, kBFloat16 = 1 };

// Counters at the front of the int32 workspace (one per tile group of a split-K launch); the fp32
// partials follow them. Zeroed once by the caller, reset by the kernel after each use.
constexpr int64_t kFp8GemvCounters = 4096;

// out [m, n] (row stride out_stride, x's dtype) = quant(x [m, k]) @ (weight * block scales).T + bias.
struct Fp8GemvArgs {
  void* out = nullptr;
  int64_t out_stride = 0;
  const void* x = nullptr;  // x [m, k] in `dtype`, or its e4m3 codes when x_scales is set
  int64_t x_stride = 0;     // elements (codes: bytes)
  const float* x_scales = nullptr;  // pre-quantized x: fp32 group scales [m, k / 128], strides xs_s0, xs_s1
  int64_t xs_s0 = 0, xs_s1 = 0;
  Fp8GDType dtype = Fp8GDType::kBFloat16;  // x (unless pre-quantized), out and bias
  const uint8_t* weight = nullptr;         // e4m3 [n, k], row stride w_stride bytes
  int64_t w_stride = 0;
  const float* wsi = nullptr;  // [cdiv(n, 128), k / 128], strides wsi_s0, wsi_s1
  int64_t wsi_s0 = 0, wsi_s1 = 0;
  const void* bias = nullptr;  // [n] or null
  int32_t* workspace = nullptr;  // kFp8GemvCounters counters, then fp32 partials
  int64_t workspace_words = 0;
  int64_t m = 0, n = 0, k = 0;
  float scale_eps = 1e-10f;
  int carveout = -1;  // the launch's preferred shared-memory carveout, percent of the SM's most (-1: none; pdl.cuh)
};

// A launch config, code X * 10000000 + Q * 1000000 + S * 10000 + R * 1000 + PF * 100 + W (0 = automatic): R row
// tiles of 16 per CTA (1, 2, 4), PF = k-blocks of weights loaded ahead of the one being multiplied
// (0 .. 3; which (R, PF) pairs are compiled: fp8_gemv_configs), W warps per CTA splitting the
// k-blocks (1 .. 16, fewer where the register cap allows fewer threads), S CTAs splitting K (1 .. 99;
// S > 1 uses the workspace). Q = 1: x pre-quantized (x_scales set); a code with Q = 1 is refused
// without x_scales, the operands decide otherwise (the digit tells the Python caller which op to
// run). fp8_gemv_configs lists the compiled (R, PF) pairs as R * 10 + PF. X = 1: each warp loads its
// next k-block's x operands before multiplying the current one (fp8_gemv.cuh XA; compiled for R = 1
// with PF 1 or 2 only, which fp8_gemv_configs does not list). T * 100000000 on top, T = 1: the TMA ring
// kernel (fp8_tma.cuh, sm_90, Q = 1 only) with S = KS k-blocks per stage, R row tiles, PF = ST stages and W
// = CW consumer warps (one producer warp more), shape key R KS ST CW as decimal digits (fp8g::kTmaKeys;
// zero fields: 2, 4, 4, 4), X = 1 triggering the dependent grid (PDL) at the kernel's start instead of after
// its main loop; 101042404 = 2 row tiles, 4 k-blocks per stage, 4 stages, 4 consumer warps.
struct Fp8GemvConfig {
  int r = 0, pf = 0, warps = 0, splits = 0, preq = 0, xa = 0;
  int tma = 0;  // T = 1: the TMA ring kernel (fp8_tma.cuh); then splits = KS, pf = ST, warps = CW
};

enum class Fp8GemvSupport : int {
  kOk = 0,
  kBadM = 1,           // m < 1 or m > 16
  kBadK = 2,           // k % 128 != 0 or k < 128 or k >= 2^24
  kBadN = 3,           // n < 1 or n >= 2^30
  kMisaligned = 4,     // x / weight not 16-byte aligned, x row stride % 8 (codes: bytes % 16) or weight
                       // row stride % 16 != 0; T = 1: scale rows not contiguous, not 16-byte multiples or
                       // not at 16-byte aligned addresses
  kBadConfig = 5,      // (R, PF) not compiled, warps or splits out of range, Q = 1 without x_scales, X > 1,
                       // X = 1 with (R, PF) other than (1, 1) / (1, 2), or a digit above T; T = 1 without
                       // x_scales, off sm_90 or with a shape key not compiled (scale rows its tensor maps
                       // cannot describe: kMisaligned)
  kWorkspace = 6,      // split-K needs more counters / partials than the workspace holds
  kBadPointer = 7,     // x, weight, weight scales or (pre-quantized) x_scales null
};

Fp8GemvConfig fp8_gemv_decode(int64_t code);
int64_t fp8_gemv_encode(const Fp8GemvConfig& c);
// The config the launcher uses for code `code` on these operands (automatic fields resolved).
Fp8GemvConfig fp8_gemv_resolve(const Fp8GemvArgs& a, int64_t code);
Fp8GemvSupport fp8_gemv_supported(const Fp8GemvArgs& a, int64_t code);
int fp8_gemv_configs(int* codes, int cap);
// cudaErrorInvalidValue for unsupported cases (check fp8_gemv_supported first), else the launch error.
cudaError_t fp8_gemv_launch(const Fp8GemvArgs& a, cudaStream_t stream, int64_t code, bool pdl,
                            Fp8GemvConfig* used = nullptr);

}  // namespace qlinear
