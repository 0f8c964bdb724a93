// Host-side TMA tensor maps (CUDA runtime only, no torch headers): cuTensorMapEncodeTiled, looked up
// from the driver once (no link against libcuda), and 2-D / 3-D tiled map encoders, for launchers whose
// kernels load operands with cp.async.bulk.tensor (the W4A16 wgmma GEMM and TMA ring).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace tmap {

inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    (void)cudaGetLastError();
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A map's row pitch in bytes: the tensor's row stride, or for a single row (whose stride is never used)
// any 16-byte multiple covering it, since the driver wants one.
inline uint64_t row_pitch(int64_t rows, int64_t stride_bytes, int64_t row_bytes) {
  return static_cast<uint64_t>(rows > 1 ? stride_bytes : (row_bytes + 15) / 16 * 16);
}

// A tiled map of rank R: dims / box innermost first, the strides of dims 1 .. R - 1 in bytes (multiples of
// 16), unit element strides; elements outside the tensor load as zeros, L2 promotion 256 B. False when the
// driver entry point is missing or rejects it.
template <int R>
inline bool encode_tiled(CUtensorMap* map, CUtensorMapDataType dt, const void* base, const cuuint64_t (&dims)[R],
                         const cuuint64_t (&strides)[R - 1], const cuuint32_t (&box)[R], CUtensorMapSwizzle swizzle) {
  const auto fn = encode_fn();
  if (fn == nullptr) return false;
  cuuint32_t estr[R];
  for (int i = 0; i < R; ++i) estr[i] = 1;
  return fn(map, dt, R, const_cast<void*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// A 2-D tiled map: dims (d0, d1) and box (b0, b1) innermost first, row stride in bytes.
inline bool encode_2d(CUtensorMap* map, CUtensorMapDataType dt, const void* base, uint64_t d0, uint64_t d1,
                      uint64_t row_bytes, uint32_t b0, uint32_t b1, CUtensorMapSwizzle swizzle) {
  return encode_tiled<2>(map, dt, base, {d0, d1}, {row_bytes}, {b0, b1}, swizzle);
}

// A 3-D tiled map: dims / box innermost first, the strides of dims 1 and 2 in bytes.
inline bool encode_3d(CUtensorMap* map, CUtensorMapDataType dt, const void* base, const uint64_t (&dims)[3],
                      uint64_t stride1, uint64_t stride2, const uint32_t (&box)[3], CUtensorMapSwizzle swizzle) {
  return encode_tiled<3>(map, dt, base, {dims[0], dims[1], dims[2]}, {stride1, stride2}, {box[0], box[1], box[2]},
                         swizzle);
}

}  // namespace tmap
}  // namespace qlinear
