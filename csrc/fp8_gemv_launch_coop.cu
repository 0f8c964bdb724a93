// The cooperative-quantization instances (CQ, fp8_gemv.cuh) of the FP8 decode GEMM
// (fp8_gemv_dispatch.cuh); the launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {

namespace {

template <typename XT, int NT>
cudaError_t launch_coop_nt(const Params& p, int pf, bool xa, int warps, int tgs, bool pdl, bool coop,
                           cudaStream_t stream) {
  switch ((xa ? 100 : 0) + 10 + pf) {
    case 11: return launch_coop_one<XT, NT, 1, false>(p, tgs, warps, pdl, coop, stream);
    case 111: return launch_coop_one<XT, NT, 1, true>(p, tgs, warps, pdl, coop, stream);
    case 112: return launch_coop_one<XT, NT, 2, true>(p, tgs, warps, pdl, coop, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_coop(const Params& p, bool bf16, bool two, int pf, bool xa, int warps, int tgs, bool pdl, bool coop,
                        cudaStream_t stream) {
  if (bf16)
    return two ? launch_coop_nt<__nv_bfloat16, 2>(p, pf, xa, warps, tgs, pdl, coop, stream)
               : launch_coop_nt<__nv_bfloat16, 1>(p, pf, xa, warps, tgs, pdl, coop, stream);
  return two ? launch_coop_nt<__half, 2>(p, pf, xa, warps, tgs, pdl, coop, stream)
             : launch_coop_nt<__half, 1>(p, pf, xa, warps, tgs, pdl, coop, stream);
}

}  // namespace fp8g
}  // namespace qlinear
