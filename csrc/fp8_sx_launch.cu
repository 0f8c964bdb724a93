// The instances and launch of the FP8 decode GEMM with x quantized per cluster (fp8_sx.cuh), in a TU of
// their own so they compile in parallel with the other FP8 instances. Called by fp8_gemv_launch.cu for
// T = 2 codes after its support checks.
#include "fp8_sx.cuh"

namespace qlinear {
namespace fp8g {

namespace {

template <typename XT, int NT, int PF>
cudaError_t sx_launch(const Params& p, int cluster, bool prefetch, int warps, int tgs, bool pdl, cudaStream_t stream) {
  SxParams sp{};
  sp.p = p;
  sp.p.splits = 1;
  sp.p.kb_per_split = p.kb;
  sp.cluster = cluster;
  sp.pitch = p.kb * 128 + 64;
  sp.prefetch = prefetch ? 1 : 0;
  const size_t smem = sx_smem_bytes(NT, static_cast<int64_t>(p.kb) * 128, warps);
  const auto kernel = fp8_sx_kernel<XT, NT, PF>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  const unsigned ctas = static_cast<unsigned>((tgs + cluster - 1) / cluster * cluster);
  return pdl::launch_smem(kernel, dim3(ctas), dim3(32 * warps), smem, stream, pdl, cluster, sp);
}

template <typename XT>
cudaError_t sx_dispatch(const Params& p, int cluster, int pf, bool prefetch, int warps, int tgs, bool pdl,
                        cudaStream_t stream) {
  const bool two = p.m > 8;
  switch (pf * 10 + (two ? 2 : 1)) {
    case 11: return sx_launch<XT, 1, 1>(p, cluster, prefetch, warps, tgs, pdl, stream);
    case 12: return sx_launch<XT, 2, 1>(p, cluster, prefetch, warps, tgs, pdl, stream);
    case 21: return sx_launch<XT, 1, 2>(p, cluster, prefetch, warps, tgs, pdl, stream);
    case 22: return sx_launch<XT, 2, 2>(p, cluster, prefetch, warps, tgs, pdl, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_sx(const Params& p, bool bf16, int cluster, int pf, bool prefetch, int warps, int tgs, bool pdl,
                      cudaStream_t stream) {
  return bf16 ? sx_dispatch<__nv_bfloat16>(p, cluster, pf, prefetch, warps, tgs, pdl, stream)
              : sx_dispatch<__half>(p, cluster, pf, prefetch, warps, tgs, pdl, stream);
}

}  // namespace fp8g
}  // namespace qlinear
