// The L2W instances (weight slice prefetched into L2 before the PDL wait) of the FP8 decode GEMM
// (fp8_gemv_dispatch.cuh), x quantized in the kernel or pre-quantized; the launcher logic is in
// fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {

cudaError_t launch_l2(const Params& p, bool pq, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                      cudaStream_t stream) {
  if (pq) {
    if (bf16)
      return two ? launch_nt_l2<__nv_bfloat16, 2, true>(p, r, pf, warps, tgs, pdl, stream)
                 : launch_nt_l2<__nv_bfloat16, 1, true>(p, r, pf, warps, tgs, pdl, stream);
    return two ? launch_nt_l2<__half, 2, true>(p, r, pf, warps, tgs, pdl, stream)
               : launch_nt_l2<__half, 1, true>(p, r, pf, warps, tgs, pdl, stream);
  }
  if (bf16)
    return two ? launch_nt_l2<__nv_bfloat16, 2, false>(p, r, pf, warps, tgs, pdl, stream)
               : launch_nt_l2<__nv_bfloat16, 1, false>(p, r, pf, warps, tgs, pdl, stream);
  return two ? launch_nt_l2<__half, 2, false>(p, r, pf, warps, tgs, pdl, stream)
             : launch_nt_l2<__half, 1, false>(p, r, pf, warps, tgs, pdl, stream);
}

}  // namespace fp8g
}  // namespace qlinear
