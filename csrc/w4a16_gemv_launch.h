// Host launcher for the W4A16 / W8A16 decode GEMV in w4a16_gemv.cuh. Raw pointers, strides in
// elements, a cudaStream_t; no torch headers, so this compiles with nvcc alone.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

enum class W4A16XType : int { kFloat16 = 0, kBFloat16 = 1 };
// scales / bias dtype
enum class W4A16FType : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

struct W4A16GemvArgs {
  void* out;            // [M, N] x dtype, row stride out_row_stride
  const void* x;        // [M, S*K] (gathered) or [M, K], row stride x_row_stride, 8-byte aligned rows
  const int32_t* qweight;  // [N, Kp*bits/32], 16-byte aligned rows
  const void* scales;   // [G, N]
  const uint8_t* zeros;  // [G, N] or null
  const void* bias;     // [N] or null
  int64_t x_row_stride, x_shard_stride, out_row_stride, qw_row_stride;
  int m, n, k, bits, group_size, num_groups;
  int num_shards;
  const int64_t* shard_rows;  // host array of num_shards + 1 row bounds
  W4A16XType x_type;
  W4A16FType scale_type, bias_type;
};

// Launch choice; zeros mean automatic (benchmarks set them to sweep).
//   rows_per_team (R): 1, 2 or 4 rows per team sharing each x load (R * M <= 8; 4 only for M <= 2;
//                      W8A16 takes R = 1).
//   team_lanes (T): power of two in [4, 256] lanes per row (> 32: several warps, smem reduction).
//   block_threads: power of two in [32, 256], >= T.
struct W4A16GemvConfig {
  int rows_per_team = 0;
  int team_lanes = 0;
  int block_threads = 0;
};

// Why a case is not taken (kOk when it is): the op falls back to another backend on anything else.
enum class W4A16GemvSupport : int {
  kOk = 0,
  kBadM,          // M not in 1..8 (W8A16: 1..4)
  kBadBits,       // not 4 or 8
  kBadGroup,      // group size not 16/32/64 (4-bit) / 16/32 (8-bit), nor a power-of-two multiple of the superblock, nor per channel
  kBadK,          // K not a multiple of 4
  kTooManyShards,  // more than 8 row ranges
  kBadAlignment,  // x / qweight pointers or strides not aligned for vector loads
  kBadConfig,     // a config value outside its range
};

W4A16GemvSupport w4a16_gemv_supported(const W4A16GemvArgs& a, const W4A16GemvConfig& cfg);

// out <- x @ W.T (+ bias). Returns cudaErrorInvalidValue when w4a16_gemv_supported says no.
cudaError_t w4a16_gemv_launch(const W4A16GemvArgs& a, cudaStream_t stream,
                              W4A16GemvConfig cfg = W4A16GemvConfig());

}  // namespace qlinear
