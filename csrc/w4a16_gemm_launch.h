// Host launcher for the W4A16 GEMM of w4a16_gemm.cuh (M > 16 rows of x): the operands of the decode
// launcher (w4a16_gemv_launch.h W4GemvArgs), a launch config, and for a K split a caller-owned fp32
// workspace plus zeroed int32 counters (the kernel leaves them zeroed). No torch headers.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "w4a16_gemv_launch.h"

namespace qlinear {

// Zeros mean automatic. warps: 16-row tiles per CTA (one per warp); tokens: x rows per CTA (a
// multiple of 8); splits: CTAs splitting K per output tile; stages: superblocks of x in the shared
// memory ring. (warps, tokens / 8, stages) must be compiled: w4_gemm_configs() lists them as
// warps * 1000 + (tokens / 8) * 10 + stages.
// reduce (wgmma GEMM only; the mma.sync GEMM takes 0 or 1): how a K split's partials are summed, 1 = by
// the last CTA of a tile to arrive, 2 = spread over all the tile's CTAs (a cooperative launch, so only
// when the grid fits on the GPU at once), 3 = in pairs through distributed shared memory (an even number
// of splits, clusters of two CTAs, no producer warpgroup; w4a16_wgmma.cuh's header); 0 = spread where it
// fits, else 1.
// pdl (wgmma GEMM only, else 0): 1 = launch with programmatic dependent launch (the kernel requests its
// first weights before griddepcontrol.wait and lets the next grid launch at once); not part of the
// resolved config.
struct W4GemmConfig {
  int warps = 0;
  int tokens = 0;
  int splits = 0;
  int stages = 0;
  int reduce = 0;
  int pdl = 0;
  int producer = 0;  // wgmma GEMM only: 1 = a producer warpgroup issues the stage fills (w4a16_wgmma.cuh kProd);
                     // 2 = 64-row CTAs whose warpgroups take alternate superblocks (kAlt)
};

enum class W4GemmSupport : int {
  kOk = 0,
  kBadM = 1,          // m < 1
  kBadDtype = 2,      // x not fp16 / bf16
  kBadK = 3,          // k % 8 != 0 or k < 8
  kBadGroup = 4,      // group size neither per channel nor a multiple of 128
  kMisaligned = 5,    // x not 16-byte aligned or x row stride % 8 != 0 (16-byte cp.async); qweight not
                      // 16-byte aligned or its row stride % 4 != 0; scales / zeros not 4-byte aligned or
                      // N % 4 != 0 (4-byte cp.async of a group's row)
  kBadConfig = 6,     // (warps, tokens, stages) not compiled, splits out of 1 .. superblocks, reduce out of
                      // 0 .. 2 (mma.sync: 0 .. 1), or a spread reduction whose grid exceeds the SM count
  kTooLarge = 7,      // n >= 2^31, k >= 2^22 or more output tiles than counters
  kWorkspace = 8,     // a K split without a workspace of w4_gemm_workspace_floats() floats
  kTooMuchSmem = 9,   // the x ring exceeds the device's per-CTA shared memory opt-in
  kNoWgmma = 10,      // wgmma GEMM only: no sm_90a device code for the current GPU (w4_wgmma_built)
};

const char* w4_gemm_support_reason(W4GemmSupport s);
// The config a launch uses (automatic fields resolved) and the fp32 workspace it needs (0 unsplit).
W4GemmConfig w4_gemm_resolve(const W4GemvArgs& a, const W4GemmConfig& c);
int64_t w4_gemm_workspace_floats(const W4GemvArgs& a, const W4GemmConfig& c);
// counters: how many int32 counters the caller provides (one per output tile is needed, two for a spread
// reduction).
W4GemmSupport w4_gemm_supported(const W4GemvArgs& a, const W4GemmConfig& c, int64_t workspace_floats,
                                int64_t counters);
int w4_gemm_configs(int* codes, int cap);
// The operand checks both GEMMs share (m, dtype, K, group size, alignment): the first of kBadM ..
// kMisaligned that applies, else kOk.
W4GemmSupport w4_gemm_operands_supported(const W4GemvArgs& a);
// The checks both GEMMs share once their config is resolved and compiled: splits in 1 .. superblocks
// (kBadConfig), sizes and one counter per output tile (kTooLarge), the workspace a split needs
// (need_floats, kWorkspace), the ring's shared memory against the device's opt-in (kTooMuchSmem).
W4GemmSupport w4_gemm_config_limits(const W4GemvArgs& a, int splits, int64_t tiles, int64_t need_floats,
                                    int64_t workspace_floats, int64_t counters, int smem);
// cudaErrorInvalidValue for unsupported cases (check w4_gemm_supported first), else the launch error.
cudaError_t w4_gemm_launch(const W4GemvArgs& a, const W4GemmConfig& c, float* workspace, int64_t workspace_floats,
                           int32_t* counters, int64_t num_counters, cudaStream_t stream, W4GemmConfig* used = nullptr);

// The Hopper wgmma GEMM (w4a16_wgmma.cuh, w4a16_wgmma_launch.cu): the same operands, config struct,
// support codes, workspace and counters protocol. warps = 16-row tiles per CTA: 0 or 8 (128 weight rows,
// two warpgroups), 4 (64 rows, the two warpgroups splitting each superblock's k-steps) or 12 (192 rows,
// three warpgroups); tokens 64, 128 or 256 per CTA; (rows, tokens, stages) compiled: w4_wgmma_configs()
// lists them as H * 1000 + (tokens / 8) * 10 + stages, H = 0 / 1 / 2 for 128 / 64 / 192 rows. Automatic
// splits: see w4_wgmma_resolve (which keeps 128 rows unless asked).
// w4_wgmma_built: 1 when the current device runs this build's sm_90a device code (read once per device
// from a device variable), else 0 (then every case is kNoWgmma).
int w4_wgmma_built();
W4GemmConfig w4_wgmma_resolve(const W4GemvArgs& a, const W4GemmConfig& c);
int64_t w4_wgmma_workspace_floats(const W4GemvArgs& a, const W4GemmConfig& c);
W4GemmSupport w4_wgmma_supported(const W4GemvArgs& a, const W4GemmConfig& c, int64_t workspace_floats,
                                 int64_t counters);
int w4_wgmma_configs(int* codes, int cap);
cudaError_t w4_wgmma_launch(const W4GemvArgs& a, const W4GemmConfig& c, float* workspace, int64_t workspace_floats,
                            int32_t* counters, int64_t num_counters, cudaStream_t stream, W4GemmConfig* used = nullptr);

}  // namespace qlinear
