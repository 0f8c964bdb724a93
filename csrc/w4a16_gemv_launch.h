// Host launcher for the W4A16 tensor-core decode kernel of w4a16_gemv.cuh (M <= 16 rows of x).
// Raw pointers, strides in elements, a cudaStream_t; no torch headers (compiles with nvcc alone).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

enum class W4GDType : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

// out [m, n] (row stride out_stride, x's dtype) = x [m, k] (row stride x_stride, fp16 / bf16) times
// the packed 4-bit weight: qweight int32 [n, ceil(k / 128) * 16] (row stride qw_stride words),
// scales [num_groups, n] contiguous, zeros uint8 [num_groups, n] contiguous or null, bias [n] or null.
struct W4GemvArgs {
  void* out = nullptr;
  int64_t out_stride = 0;
  const void* x = nullptr;
  int64_t x_stride = 0;
  W4GDType x_dtype = W4GDType::kBFloat16;
  const int32_t* qweight = nullptr;
  int64_t qw_stride = 0;
  const void* scales = nullptr;
  W4GDType scale_dtype = W4GDType::kBFloat16;
  const uint8_t* zeros = nullptr;
  const void* bias = nullptr;
  W4GDType bias_dtype = W4GDType::kBFloat16;
  int64_t m = 0, n = 0, k = 0;
  int64_t group_size = 128;  // K for per channel
  int64_t num_groups = 1;
};

// Launch choices; zeros mean automatic. rows_tiles (R) * chunk (U) must be one of the compiled
// pairs (see w4a16_gemv_launch.cu); warps: 1 .. 16 warps per CTA splitting K; pdl: 1 launch with
// programmatic stream serialization (the first weights are requested before waiting: into registers
// by the register kernel, which at M <= 8 also lets its dependents launch at its start; as L2
// prefetches or ring copies by the others).
// ring: the cp.async ring kernel's shape WR * 1000 + WK * 100 + S * 10 + ST (16 WR rows per CTA,
// WK warps over K, S superblocks per warp per stage, ST stages; see w4_ring_configs()), 0 = auto
// (the ring kernel for M <= 8 on rows of <= 16 superblocks where it applies, else the register
// kernel), -1 = the register kernel (row_tiles / chunk / warps / pipe then apply). 10000 + the same
// four digits = the bulk ring kernel (sm_90 cp.async.bulk copies on mbarriers instead of per-thread
// cp.async: same stage layout and compute; needs N % 16 == 0, K % 128 == 0, 16-byte aligned x /
// scales / zeros, x row stride % 8 == 0, else kNoBulk), only when asked for (auto never picks it).
// 5-digit codes: 1 WR WK S ST (e.g. 11424 = the bulk 1424). F R KS ST CW with F = 2 (3: with the zero
// fold, 7: the k-step split, 2 CW consumer warps in pairs, 5 / 6: the pair split without / with it, 8: a
// diagnostic without math) = the TMA ring kernel (w4a16_tma.cuh: one producer warp streams 16 R rows x
// KS superblocks per stage through ST stages with tensor maps, CW consumer warps; sm_90, groups >= 128
// or per channel, fp16 / bf16 scales, N % 16 == 0, 16-byte aligned x / scales / zeros, x row stride % 8
// == 0, else kNoTma); 100000 + such a code: the same with x in TMA's 128-byte swizzle (M > 8 only).
// pipe: the register kernel's chunk schedule. 0: each warp a contiguous slice of K, one chunk of
// `chunk` superblocks at a time; 1: the same, double-buffered (next chunk's loads issued before this
// chunk's math); 2: chunks dealt round-robin over the warps (neighbouring warps read neighbouring
// pieces of each row), single-buffered, the pipe 0 instances; 3: the x-staged kernel (w4a16_xs.cuh:
// the warps split the rows, `row_tiles` tiles each over the whole K, double-buffered chunks, x copied
// once per CTA into shared memory; sm_90, K % 8 == 0, x 16-byte aligned with row stride % 8 == 0, else
// kNoXs). Compiled (row_tiles, chunk, NT, pipe 0 / 1) codes: w4_reg_configs(); pipe 3's (R U NT 3):
// w4_xs_configs(), each with fold 0 and 1. Other values: kBadConfig.
// fold: the register kernel's zero-point fold (w4a16_gemv.cuh FOLD: 1 = on, per-token x sums; 0 =
// off); 1 selects the register kernel when ring is 0 and needs a code in w4_reg_fold_configs()
// (groups >= 128 or per channel), else kBadConfig (as is any other value).
struct W4GemvConfig {
  int row_tiles = 0;
  int chunk = 0;
  int warps = 0;
  int pdl = 0;
  int ring = 0;
  int pipe = 0;
  int fold = 0;
};

// Why a case is not taken (0 = supported).
enum class W4GemvSupport : int {
  kOk = 0,
  kBadM = 1,          // m < 1 or m > 16
  kBadDtype = 2,      // x not fp16 / bf16
  kBadK = 3,          // k % 4 != 0 or k < 1
  kBadGroup = 4,      // group size not in {16, 32, 64, multiples of 128, K}
  kMisaligned = 5,    // x pointer not 8-byte aligned or x row stride % 4 != 0, qweight not 16-byte aligned
  kBadConfig = 6,     // (row_tiles, chunk) not compiled (with fold: not in w4_reg_fold_configs) or warps out of
                      // range, or fold not in {0, 1} / with a ring code / groups < 128, or pipe not in {0, 1, 2}
  kTooLarge = 7,      // n >= 2^31 or k >= 2^22
  kNoRing = 8,        // ring kernel asked for: groups < 128, N % 4 != 0 or scales / zeros not 4-byte aligned
  kNoBulk = 9,        // bulk ring asked for: not sm_90+, groups < 128, N % 16 != 0, K % 128 != 0, x / scales /
                      // zeros not 16-byte aligned or x row stride % 8 != 0
  kTooMuchSmem = 10,  // the ring / bulk code's dynamic shared memory at this M exceeds the device's per-CTA
                      // opt-in limit (227 KB on sm_90: every compiled code fits there; smaller on sm_8x)
  kNoTma = 11,        // TMA ring asked for: not sm_90+, groups < 128, fp32 scales, N % 16 != 0, x / scales /
                      // zeros not 16-byte aligned or x row stride % 8 != 0
  kNoXs = 12,         // x-staged kernel (pipe 3) asked for: not sm_90+, groups < 128, K % 8 != 0 or K > 8192,
                      // x not 16-byte aligned or x row stride % 8 != 0 (its x rows past the shared memory
                      // limit: kTooMuchSmem)
};

// A short reason for a W4GemvSupport value ("supported" for kOk), for error messages.
const char* w4_gemv_support_reason(W4GemvSupport s);

// Dynamic shared memory (bytes) a ring, bulk ring (>= 10000) or TMA ring (>= 20000) code needs at M rows
// of x, 0 for other codes.
size_t w4_ring_smem_bytes(int code, int64_t m);

W4GemvSupport w4_gemv_supported(const W4GemvArgs& a, const W4GemvConfig& cfg);

// The compiled ring shapes for M <= 8 (nt = 1) or M <= 16 (nt = 2), cp.async ring codes, bulk ring
// codes (>= 10000), then TMA ring codes (>= 20000): writes up to `cap` codes, returns how many there are.
int w4_ring_configs(int nt, int* codes, int cap);

// The compiled register-kernel configs: codes R * 1000 + U * 100 + NT * 10 + pipe (NT = 1: M <= 8,
// 2: M <= 16); writes up to `cap`, returns how many there are.
int w4_reg_configs(int* codes, int cap);

// The register-kernel codes compiled with the zero fold (fold 1); as w4_reg_configs.
int w4_reg_fold_configs(int* codes, int cap);

// The x-staged kernel's codes (pipe 3): R U NT 3, each compiled with fold 0 and 1; as w4_reg_configs.
int w4_xs_configs(int* codes, int cap);

// The config the launcher would use (zeros resolved); *used receives it when non-null.
W4GemvConfig w4_gemv_resolve(const W4GemvArgs& a, const W4GemvConfig& cfg);

// cudaErrorInvalidValue for unsupported cases (check w4_gemv_supported first), else the launch error.
cudaError_t w4_gemv_launch(const W4GemvArgs& a, cudaStream_t stream, W4GemvConfig cfg = W4GemvConfig(),
                           W4GemvConfig* used = nullptr);

}  // namespace qlinear
