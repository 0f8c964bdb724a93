// The stream-K instances of the FP8 decode GEMM (fp8_gemv.cuh fp8_gemv_sk_kernel, dispatched in
// fp8_gemv_dispatch.cuh): dtype x token tiles x pre-quantized x x PF, in their own translation unit
// so they compile in parallel with the other instances; the launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {

cudaError_t launch_sk(const Params& p, bool bf16, bool two, bool pq, int pf, int warps, int ctas, bool pdl,
                      cudaStream_t stream) {
  if (bf16) {
    if (pq)
      return two ? launch_sk_nt<__nv_bfloat16, 2, true>(p, pf, warps, ctas, pdl, stream)
                 : launch_sk_nt<__nv_bfloat16, 1, true>(p, pf, warps, ctas, pdl, stream);
    return two ? launch_sk_nt<__nv_bfloat16, 2, false>(p, pf, warps, ctas, pdl, stream)
               : launch_sk_nt<__nv_bfloat16, 1, false>(p, pf, warps, ctas, pdl, stream);
  }
  if (pq)
    return two ? launch_sk_nt<__half, 2, true>(p, pf, warps, ctas, pdl, stream)
               : launch_sk_nt<__half, 1, true>(p, pf, warps, ctas, pdl, stream);
  return two ? launch_sk_nt<__half, 2, false>(p, pf, warps, ctas, pdl, stream)
             : launch_sk_nt<__half, 1, false>(p, pf, warps, ctas, pdl, stream);
}

}  // namespace fp8g
}  // namespace qlinear
