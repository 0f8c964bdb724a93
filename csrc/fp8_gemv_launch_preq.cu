// The pre-quantized-x instances (PQ = true) of the FP8 decode GEMM (fp8_gemv_dispatch.cuh), and the
// grid-quantized ones (GQ) built on them; the launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {
QLINEAR_FP8G_LAUNCH_PQ(launch_preq, true)

cudaError_t launch_gq(const Params& p, bool bf16, bool two, int warps, int tgs, bool pdl, cudaStream_t stream) {
  if (bf16)
    return two ? launch_gq_nt<__nv_bfloat16, 2>(p, warps, tgs, pdl, stream)
               : launch_gq_nt<__nv_bfloat16, 1>(p, warps, tgs, pdl, stream);
  return two ? launch_gq_nt<__half, 2>(p, warps, tgs, pdl, stream) : launch_gq_nt<__half, 1>(p, warps, tgs, pdl, stream);
}
}  // namespace fp8g
}  // namespace qlinear
