// Host launcher of the multi-slice RMSNorm with FP8 outputs (norm_slices_quant.cuh): raw pointers,
// strides in elements, a cudaStream_t; no torch headers.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

constexpr int kNsqMaxSlices = 4;

enum class NsqDType : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

// Slice s: columns [col, col + width) of x's rows, normalized with `weight` ([width], x's dtype,
// contiguous). scales == nullptr: written to `out` in x's dtype (row stride out_stride elements;
// x's slice itself for in place, or a buffer disjoint from x and the other outputs). Otherwise
// `out` receives e4m3 codes (row stride out_stride bytes) and scales[r * s_row + g * s_col] the
// fp32 scale of group g (group_size columns) of row r.
struct NsqSlice {
  void* out = nullptr;
  int64_t out_stride = 0;
  float* scales = nullptr;
  int64_t s_row = 0;
  int64_t s_col = 0;
  const void* weight = nullptr;
  int64_t col = 0;
  int64_t width = 0;
};

// x: [rows, W] with row stride x_stride (elements), last stride 1.
struct NsqArgs {
  const void* x = nullptr;
  int64_t x_stride = 0;
  int64_t rows = 0;
  NsqDType dtype = NsqDType::kBFloat16;
  const NsqSlice* slices = nullptr;
  int n_slices = 0;
  int64_t group_size = 128;
  float eps = 1e-6f;
  float scale_eps = 1e-10f;
};

// Launch choices, zeros = automatic.
//   warps_per_block: 1..8 (rounded to whole tokens: a block holds k tokens x n slices warps);
//                    0: one token per block up to 4 rows per SM, else 8 / n tokens (at least 1)
//   pdl:             1 = programmatic dependent launch (sm_90+): the weights are read before the
//                    wait, so they must not be written by the kernel launched just before
struct NsqConfig {
  int warps_per_block = 0;
  int pdl = 0;
};

// True when the one-launch kernel takes these arguments (16-bit dtype, sm_89+, group 128, 16-byte
// aligned rows and slices, widths % 8 (plain) / % 128 (quantized), widths <= 2048, 8-byte aligned
// code rows, (rows + 32) x slices < 2^31); callers fall back to per-slice kernels otherwise.
bool rms_norm_slices_quant_supported(const NsqArgs& args);

// All slices in one launch; cudaErrorNotSupported when !rms_norm_slices_quant_supported(args),
// cudaErrorInvalidValue for invalid sizes, cudaSuccess without a launch for zero rows.
cudaError_t rms_norm_slices_quant_launch(const NsqArgs& args, cudaStream_t stream, NsqConfig config = NsqConfig());

}  // namespace qlinear
