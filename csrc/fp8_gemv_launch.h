// Host launcher of the FP8 block-quantized decode GEMV (fp8_gemv.cuh). Raw pointers, strides in
// elements (bytes for e4m3 tensors), a cudaStream_t; no torch headers, so this compiles with nvcc.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

enum class GemvDType : int { kFloat16 = 0, kBFloat16 = 1 };

// Zeros mean "pick automatically"; benchmarks set them to sweep.
//   warps_k: warps sharing one 16-row tile along K (1..16), tiles: 16-row tiles per block;
//   warps_k * tiles <= 16 (at most 512 threads per block).
struct GemvConfig {
  int warps_k = 0;
  int tiles = 0;
};

struct GemvArgs {
  void* out;                // [M, N] out_dtype, row stride out_stride, unit column stride
  const void* x;            // fused: [M, K] out_dtype (row stride x_stride); else e4m3 [M, K]
  const float* x_scale;     // nullptr = fused activation quantization; else fp32 [M, cdiv(K, bk)]
  const void* w;            // e4m3 [N, K], row stride w_stride bytes
  const float* w_scale;     // fp32 [cdiv(N, bn), cdiv(K, bk)]
  const void* bias;         // [N] out_dtype or nullptr
  int64_t out_stride, x_stride, xs_s0, xs_s1, w_stride, ws_s0, ws_s1;
  int64_t M, N, K, bn, bk;
  float scale_eps;          // floor of a group's amax (fused quantization only)
  GemvDType dtype;
};

// Why the GEMV cannot take these operands (nullptr when it can): M in 1..4, K % 16 == 0,
// bn % 16 == 0, bk % 64 == 0, 16-byte aligned weight rows (and e4m3 activation rows), shared
// memory of the fused quantization <= 48 KiB. Callers check it first and use another GEMM when it
// is not null; the launcher re-checks and returns cudaErrorInvalidValue.
const char* fp8_block_gemv_unsupported(const GemvArgs& a);

// Shared memory bytes a launch of these args would use with `config` (0 when unsupported).
int64_t fp8_block_gemv_smem_bytes(const GemvArgs& a, GemvConfig config = GemvConfig());

cudaError_t fp8_block_gemv_launch(const GemvArgs& a, cudaStream_t stream, GemvConfig config = GemvConfig());

}  // namespace qlinear
