// Dispatch of the FP8 decode GEMM (fp8_gemv.cuh) over its compiled instances: dtype x NT x (R, PF)
// for one PQ (x quantized in the kernel / pre-quantized). Each PQ value is instantiated in its own
// translation unit (fp8_gemv_launch.cu: PQ = false, fp8_gemv_launch_preq.cu: PQ = true) so the two
// compile in parallel.
#pragma once

#include "code_list.h"
#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

// Compiled (R, PF) pairs as R * 10 + PF (pre-quantized x: all but 40); with x ahead (XA) 11 and 12.
constexpr int kPairs[] = {10, 11, 12, 13, 20, 21, 22, 40};
constexpr int kPairsXA[] = {11, 12};
inline bool pair_compiled(int r, int pf, bool pq, bool xa = false) {
  if (xa) return code_listed(kPairsXA, r * 10 + pf);
  return !(pq && r == 4) && code_listed(kPairs, r * 10 + pf);
}

template <typename XT, int NT, int R, int PF, bool PQ, bool XA = false>
cudaError_t launch_one(const Params& p, int tgs, int warps, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(tgs), static_cast<unsigned>(p.splits));
  return pdl::launch_smem_cv(fp8_gemv_kernel<XT, NT, R, PF, PQ, XA>, grid, dim3(32 * warps),
                             smem_bytes(R, NT, warps), stream, pdl, 1, p.carveout, p);
}

template <typename XT, int NT, bool PQ>
cudaError_t launch_nt(const Params& p, int r, int pf, bool xa, int warps, int tgs, bool pdl, cudaStream_t stream) {
  if (xa) {
    switch (r * 10 + pf) {
      case 11: return launch_one<XT, NT, 1, 1, PQ, true>(p, tgs, warps, pdl, stream);
      case 12: return launch_one<XT, NT, 1, 2, PQ, true>(p, tgs, warps, pdl, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  switch (r * 10 + pf) {
    case 10: return launch_one<XT, NT, 1, 0, PQ>(p, tgs, warps, pdl, stream);
    case 11: return launch_one<XT, NT, 1, 1, PQ>(p, tgs, warps, pdl, stream);
    case 12: return launch_one<XT, NT, 1, 2, PQ>(p, tgs, warps, pdl, stream);
    case 13: return launch_one<XT, NT, 1, 3, PQ>(p, tgs, warps, pdl, stream);
    case 20: return launch_one<XT, NT, 2, 0, PQ>(p, tgs, warps, pdl, stream);
    case 21: return launch_one<XT, NT, 2, 1, PQ>(p, tgs, warps, pdl, stream);
    case 22: return launch_one<XT, NT, 2, 2, PQ>(p, tgs, warps, pdl, stream);
    case 40:
      // not compiled pre-quantized: its two-token-tile instance spills, and without the quantization
      // work to share there is no reason for 4 row tiles per CTA
      if constexpr (PQ) return cudaErrorInvalidValue;
      else return launch_one<XT, NT, 4, 0, PQ>(p, tgs, warps, pdl, stream);
    default: return cudaErrorInvalidValue;
  }
}

// bf16: out / bias (and unquantized x) dtype; two: M > 8 (two token tiles); xa: x ahead. launch_quant:
// x quantized in the kernel (fp8_gemv_launch.cu), launch_preq: pre-quantized x (fp8_gemv_launch_preq.cu).
cudaError_t launch_quant(const Params& p, bool bf16, bool two, int r, int pf, bool xa, int warps, int tgs, bool pdl,
                         cudaStream_t stream);
cudaError_t launch_preq(const Params& p, bool bf16, bool two, int r, int pf, bool xa, int warps, int tgs, bool pdl,
                        cudaStream_t stream);

#define QLINEAR_FP8G_LAUNCH_PQ(NAME, PQ)                                                                      \
  cudaError_t NAME(const Params& p, bool bf16, bool two, int r, int pf, bool xa, int warps, int tgs, bool pdl, \
                   cudaStream_t stream) {                                                                     \
    if (bf16)                                                                                                  \
      return two ? launch_nt<__nv_bfloat16, 2, PQ>(p, r, pf, xa, warps, tgs, pdl, stream)                      \
                 : launch_nt<__nv_bfloat16, 1, PQ>(p, r, pf, xa, warps, tgs, pdl, stream);                     \
    return two ? launch_nt<__half, 2, PQ>(p, r, pf, xa, warps, tgs, pdl, stream)                               \
               : launch_nt<__half, 1, PQ>(p, r, pf, xa, warps, tgs, pdl, stream);                              \
  }

}  // namespace fp8g
}  // namespace qlinear
