// Instances of the FP8 TMA-ring decode GEMM (fp8_ring.cuh): dtype x token tiles x pre-quantized x x
// R in {1, 2}. The support checks and the config live in fp8_gemv_launch.cu.
#include "device_attrs.h"
#include "fp8_gemv_dispatch.cuh"
#include "fp8_ring.cuh"

namespace qlinear {
namespace fp8g {
namespace {

template <typename XT, int NT, int R, bool PQ>
cudaError_t launch_ring_one(const RingParams& rp, int warps, int tgs, bool pdl, cudaStream_t stream) {
  const auto kernel = fp8_ring_kernel<XT, NT, R, PQ>;
  const int smem = ring_layout(R, NT, warps, rp.depth).bytes;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(tgs), static_cast<unsigned>(rp.p.splits));
  return pdl::launch_smem(kernel, grid, dim3(32 * warps), static_cast<size_t>(smem), stream, pdl, 1, rp);
}

template <typename XT, int NT>
cudaError_t launch_ring_nt(const RingParams& rp, bool pq, int r, int warps, int tgs, bool pdl, cudaStream_t stream) {
  if (r == 1)
    return pq ? launch_ring_one<XT, NT, 1, true>(rp, warps, tgs, pdl, stream)
              : launch_ring_one<XT, NT, 1, false>(rp, warps, tgs, pdl, stream);
  if (r == 2)
    return pq ? launch_ring_one<XT, NT, 2, true>(rp, warps, tgs, pdl, stream)
              : launch_ring_one<XT, NT, 2, false>(rp, warps, tgs, pdl, stream);
  return cudaErrorInvalidValue;
}

}  // namespace

bool ring_shape_ok(int r, int warps, int depth, bool two, int smem_cap) {
  return (r == 1 || r == 2) && warps >= 1 && warps <= ring_max_threads(two ? 2 : 1, r) / 32 && depth >= 1 && depth <= kRingMaxDepth &&
         ring_layout(r, two ? 2 : 1, warps, depth).bytes <= smem_cap;
}

cudaError_t launch_ring(const RingParams& rp, bool bf16, bool two, bool pq, int r, int warps, int tgs, bool pdl,
                        cudaStream_t stream) {
  if (bf16)
    return two ? launch_ring_nt<__nv_bfloat16, 2>(rp, pq, r, warps, tgs, pdl, stream)
               : launch_ring_nt<__nv_bfloat16, 1>(rp, pq, r, warps, tgs, pdl, stream);
  return two ? launch_ring_nt<__half, 2>(rp, pq, r, warps, tgs, pdl, stream)
             : launch_ring_nt<__half, 1>(rp, pq, r, warps, tgs, pdl, stream);
}

}  // namespace fp8g
}  // namespace qlinear
