// Dispatch of the FP8 decode GEMM (fp8_gemv.cuh) over its compiled instances: dtype x NT x (R, PF)
// for one XQ (where x is quantized). Each XQ is instantiated in its own translation unit
// (fp8_gemv_launch.cu: kXWarp, fp8_gemv_launch_preq.cu: kXPre, fp8_gemv_launch_xg.cu: kXGlobal) so
// the three compile in parallel.
#pragma once

#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

// Compiled (R, PF) pairs as R * 10 + PF, per XQ. kXPre: no R = 4 (its two-token-tile instance
// spills, and without the quantization work to share there is no reason for 4 row tiles per CTA).
// kXGlobal: the pairs the two-token-tile sweeps could pick (R = 4 has no x work left to share).
constexpr int kPairsWarp[] = {10, 11, 12, 13, 20, 21, 22, 40};
constexpr int kPairsPre[] = {10, 11, 12, 13, 20, 21, 22};
constexpr int kPairsGlobal[] = {10, 11, 12, 20, 21};

template <int N>
constexpr bool in_list(const int (&list)[N], int code) {
  for (int c : list)
    if (c == code) return true;
  return false;
}

inline bool pair_compiled(int r, int pf, int xq) {
  const int code = r * 10 + pf;
  return xq == kXPre ? in_list(kPairsPre, code) : (xq == kXGlobal ? in_list(kPairsGlobal, code) : in_list(kPairsWarp, code));
}

template <typename XT, int NT, int R, int PF, int XQ>
cudaError_t launch_one(const Params& p, int tgs, int warps, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(tgs), static_cast<unsigned>(p.splits));
  return pdl::launch_smem(fp8_gemv_kernel<XT, NT, R, PF, XQ>, grid, dim3(32 * warps), smem_bytes(R, NT, warps), stream,
                          pdl, 1, p);
}

// Pairs of another XQ's list are never instantiated here (a switch case per pair of every list,
// discarded at compile time where the pair is not in this XQ's list).
template <typename XT, int NT, int XQ, int R, int PF>
cudaError_t launch_if(const Params& p, int tgs, int warps, bool pdl, cudaStream_t stream) {
  constexpr int code = R * 10 + PF;
  constexpr bool ok = XQ == kXPre ? in_list(kPairsPre, code)
                                  : (XQ == kXGlobal ? in_list(kPairsGlobal, code) : in_list(kPairsWarp, code));
  if constexpr (ok) return launch_one<XT, NT, R, PF, XQ>(p, tgs, warps, pdl, stream);
  else return cudaErrorInvalidValue;
}

template <typename XT, int NT, int XQ>
cudaError_t launch_nt(const Params& p, int r, int pf, int warps, int tgs, bool pdl, cudaStream_t stream) {
  switch (r * 10 + pf) {
    case 10: return launch_if<XT, NT, XQ, 1, 0>(p, tgs, warps, pdl, stream);
    case 11: return launch_if<XT, NT, XQ, 1, 1>(p, tgs, warps, pdl, stream);
    case 12: return launch_if<XT, NT, XQ, 1, 2>(p, tgs, warps, pdl, stream);
    case 13: return launch_if<XT, NT, XQ, 1, 3>(p, tgs, warps, pdl, stream);
    case 20: return launch_if<XT, NT, XQ, 2, 0>(p, tgs, warps, pdl, stream);
    case 21: return launch_if<XT, NT, XQ, 2, 1>(p, tgs, warps, pdl, stream);
    case 22: return launch_if<XT, NT, XQ, 2, 2>(p, tgs, warps, pdl, stream);
    case 40: return launch_if<XT, NT, XQ, 4, 0>(p, tgs, warps, pdl, stream);
    default: return cudaErrorInvalidValue;
  }
}

// bf16: out / bias (and unquantized x) dtype; two: M > 8 (two token tiles). launch_quant: x quantized
// per warp (fp8_gemv_launch.cu), launch_preq: pre-quantized x (fp8_gemv_launch_preq.cu),
// launch_xg: x quantized once into global scratch (fp8_gemv_launch_xg.cu).
cudaError_t launch_quant(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                         cudaStream_t stream);
cudaError_t launch_preq(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                        cudaStream_t stream);
cudaError_t launch_xg(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                      cudaStream_t stream);

#define QLINEAR_FP8G_LAUNCH_XQ(NAME, XQ)                                                                      \
  cudaError_t NAME(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,         \
                   cudaStream_t stream) {                                                                     \
    if (bf16)                                                                                                  \
      return two ? launch_nt<__nv_bfloat16, 2, XQ>(p, r, pf, warps, tgs, pdl, stream)                          \
                 : launch_nt<__nv_bfloat16, 1, XQ>(p, r, pf, warps, tgs, pdl, stream);                         \
    return two ? launch_nt<__half, 2, XQ>(p, r, pf, warps, tgs, pdl, stream)                                   \
               : launch_nt<__half, 1, XQ>(p, r, pf, warps, tgs, pdl, stream);                                  \
  }

}  // namespace fp8g
}  // namespace qlinear
