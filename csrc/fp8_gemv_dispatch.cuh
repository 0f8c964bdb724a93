// Dispatch of the FP8 decode GEMM (fp8_gemv.cuh) over its compiled instances: dtype x NT x (R, PF)
// for one PQ (x quantized in the kernel / pre-quantized), and dtype x NT x R for the shared-memory
// ring. Each (PQ, ring) family is instantiated in its own translation unit (fp8_gemv_launch.cu,
// fp8_gemv_launch_preq.cu: register path; fp8_gemv_ring.cu, fp8_gemv_ring_preq.cu: ring) so the
// four compile in parallel.
#pragma once

#include "device_attrs.h"
#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

// Compiled (R, PF) pairs as R * 10 + PF (pre-quantized x: all but 40); ring instances (any G) as
// 100 + R * 10.
constexpr int kPairs[] = {10, 11, 12, 13, 20, 21, 22, 40, 110, 120, 140};
inline bool pair_compiled(int r, int pf, bool pq, int ring = 0) {
  if (ring > 0) return pf == 0 && (r == 1 || r == 2 || r == 4);
  if (pq && r == 4) return false;
  for (int c : kPairs)
    if (c == r * 10 + pf) return true;
  return false;
}

// Largest dynamic shared memory per CTA (opt-in) of the current device.
inline int smem_optin() {
  static int cache[64] = {0};
  return devattr::cached(cudaDevAttrMaxSharedMemoryPerBlockOptin, 48 * 1024, cache);
}

template <typename XT, int NT, int R, int PF, bool PQ, bool RING>
cudaError_t launch_one(const Params& p, int tgs, int warps, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(tgs), static_cast<unsigned>(p.splits));
  auto* kernel = fp8_gemv_kernel<XT, NT, R, PF, PQ, RING>;
  const size_t smem = smem_bytes(R, NT, warps, RING ? p.ring : 0);
  if (smem > 48 * 1024) {
    // opt in once per (instance, device) to the device's maximum, not per launch
    static int opted[64] = {0};
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return cudaErrorInvalidValue;
    if (!opted[dev]) {
      const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin());
      if (e != cudaSuccess) return e;
      opted[dev] = 1;
    }
  }
  return pdl::launch_smem(kernel, grid, dim3(32 * warps), smem, stream, pdl, 1, p);
}

template <typename XT, int NT, bool PQ>
cudaError_t launch_nt(const Params& p, int r, int pf, int warps, int tgs, bool pdl, cudaStream_t stream) {
  switch (r * 10 + pf) {
    case 10: return launch_one<XT, NT, 1, 0, PQ, false>(p, tgs, warps, pdl, stream);
    case 11: return launch_one<XT, NT, 1, 1, PQ, false>(p, tgs, warps, pdl, stream);
    case 12: return launch_one<XT, NT, 1, 2, PQ, false>(p, tgs, warps, pdl, stream);
    case 13: return launch_one<XT, NT, 1, 3, PQ, false>(p, tgs, warps, pdl, stream);
    case 20: return launch_one<XT, NT, 2, 0, PQ, false>(p, tgs, warps, pdl, stream);
    case 21: return launch_one<XT, NT, 2, 1, PQ, false>(p, tgs, warps, pdl, stream);
    case 22: return launch_one<XT, NT, 2, 2, PQ, false>(p, tgs, warps, pdl, stream);
    case 40:
      // not compiled pre-quantized: its two-token-tile instance spills, and without the quantization
      // work to share there is no reason for 4 row tiles per CTA
      if constexpr (PQ) return cudaErrorInvalidValue;
      else return launch_one<XT, NT, 4, 0, PQ, false>(p, tgs, warps, pdl, stream);
    default: return cudaErrorInvalidValue;
  }
}

// The ring instances (p.ring = G stages; pf is 0).
template <typename XT, int NT, bool PQ>
cudaError_t launch_ring_nt(const Params& p, int r, int /*pf*/, int warps, int tgs, bool pdl, cudaStream_t stream) {
  switch (r) {
    case 1: return launch_one<XT, NT, 1, 0, PQ, true>(p, tgs, warps, pdl, stream);
    case 2: return launch_one<XT, NT, 2, 0, PQ, true>(p, tgs, warps, pdl, stream);
    case 4: return launch_one<XT, NT, 4, 0, PQ, true>(p, tgs, warps, pdl, stream);
    default: return cudaErrorInvalidValue;
  }
}

// bf16: out / bias (and unquantized x) dtype; two: M > 8 (two token tiles). launch_quant: x quantized
// in the kernel (fp8_gemv_launch.cu), launch_preq: pre-quantized x (fp8_gemv_launch_preq.cu);
// launch_ring_quant / launch_ring_preq: the same through the shared-memory ring (fp8_gemv_ring.cu,
// fp8_gemv_ring_preq.cu).
cudaError_t launch_quant(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                         cudaStream_t stream);
cudaError_t launch_preq(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                        cudaStream_t stream);
cudaError_t launch_ring_quant(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                              cudaStream_t stream);
cudaError_t launch_ring_preq(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,
                             cudaStream_t stream);

#define QLINEAR_FP8G_LAUNCH_FAMILY(NAME, NTFN, PQ)                                                            \
  cudaError_t NAME(const Params& p, bool bf16, bool two, int r, int pf, int warps, int tgs, bool pdl,         \
                   cudaStream_t stream) {                                                                     \
    if (bf16)                                                                                                  \
      return two ? NTFN<__nv_bfloat16, 2, PQ>(p, r, pf, warps, tgs, pdl, stream)                               \
                 : NTFN<__nv_bfloat16, 1, PQ>(p, r, pf, warps, tgs, pdl, stream);                              \
    return two ? NTFN<__half, 2, PQ>(p, r, pf, warps, tgs, pdl, stream)                                        \
               : NTFN<__half, 1, PQ>(p, r, pf, warps, tgs, pdl, stream);                                       \
  }
#define QLINEAR_FP8G_LAUNCH_PQ(NAME, PQ) QLINEAR_FP8G_LAUNCH_FAMILY(NAME, launch_nt, PQ)
#define QLINEAR_FP8G_LAUNCH_RING(NAME, PQ) QLINEAR_FP8G_LAUNCH_FAMILY(NAME, launch_ring_nt, PQ)

}  // namespace fp8g
}  // namespace qlinear
