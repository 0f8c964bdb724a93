// Host launcher for the fused RMSNorm -> FP8 (e4m3) group quantization kernels of norm_quant.cuh.
// Raw pointers, strides in elements, a cudaStream_t; no torch headers (compiles with nvcc alone).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

enum class NqDType : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

// The operands every FP8 group quantizer here shares: x [rows, hidden] of dtype (row stride x_stride,
// last stride 1), q e4m3 with row stride q_stride, scales fp32 [.., cdiv(hidden, group_size)] at
// scales[r * s_row_stride + g * s_col_stride], each group's scale max(amax, scale_eps) / 448.
struct QuantOperands {
  const void* x = nullptr;
  int64_t x_stride = 0;
  NqDType dtype = NqDType::kBFloat16;
  void* q = nullptr;
  int64_t q_stride = 0;
  float* scales = nullptr;
  int64_t s_row_stride = 0;
  int64_t s_col_stride = 0;
  int64_t rows = 0;
  int64_t hidden = 0;
  int64_t group_size = 128;
  float scale_eps = 1e-10f;
};

// The fused norm's operands: q and scales have `rows` rows; residual like x or nullptr, weight [hidden]
// contiguous.
struct NormQuantArgs : QuantOperands {
  void* residual = nullptr;
  int64_t residual_stride = 0;
  const void* weight = nullptr;
  NqDType weight_dtype = NqDType::kBFloat16;
  float eps = 1e-6f;
};

// Launch choices; zeros mean automatic (the usual case), benchmarks set them to sweep.
//   warps_per_block: 1..16 (rows in flight per block: one per warp)
//   blocks_per_sm:   grid = min(blocks the rows need, SMs x this); 0 = as many as fit (occupancy),
//                    -1 = no cap (one row per warp, no grid-stride)
//   path:            0 automatic (the fixed-size row kernel for 16-bit rows of 512 / 1024 / 1536 /
//                    2048 with group 128, else 16-byte vector kernels where sizes and alignment
//                    allow), 1 the vector kernels without the row kernel, 2 = 0, -1 the generic
//                    element-wise kernel, 3 the block-per-row kernel (16-bit rows of up to 2048 vectors
//                    with the vector kernels' size and alignment conditions; else as 1), which 0
//                    takes for 16-bit rows longer than 32 x 16 vectors
//   prefetch:        the register kernel (plain norm, NV 8) loads the warp's next row before the
//                    current one is done: 0 automatic (on), 1 on, -1 off
//   variant:         the row kernel (bf16, K 512 / 1024 / 1536 / 2048, group 128): 0 = the committed
//                    default per case (row_default in norm_quant_launch.cu: variant, and warps /
//                    blocks_per_sm where the caller leaves them 0); explicit, for benchmarks and tests:
//                    6 the register form (every K), 1 a register-form launch variant (K 512 /
//                    1536), 4 the bulk-copy form with 3 row slots per warp (K 1536, sm_90), 11 / 12
//                    nq_slim_kernel (K 512 / 1536; 11: one row ahead, fused add none; 12: none,
//                    80 registers); a variant that does not exist for the shape falls back to
//                    the vector kernels
struct NormQuantConfig {
  int warps_per_block = 0;
  int blocks_per_sm = 0;
  int path = 0;
  int prefetch = 0;
  int variant = 0;
};

// Returns cudaSuccess or the launch error; *kernel (when given) receives what ran: 2 for the row
// kernel, 3 for its bulk-copy form (nq_bulk_kernel), the register kernel's budget NV (vectors per lane:
// 8 or 16), 1 for the two-pass vector kernel, 5 for the block-per-row kernel (nq_cta_kernel), 0 for the
// generic kernel, -1 for no launch (zero rows). Invalid sizes return cudaErrorInvalidValue.
cudaError_t rms_norm_quant_fp8_launch(const NormQuantArgs& args, cudaStream_t stream,
                                      NormQuantConfig config = NormQuantConfig(), int* kernel = nullptr);

}  // namespace qlinear
