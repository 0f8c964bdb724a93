// The x-staging instances of the FP8 decode GEMM (fp8_gemv_xs.cuh): dtype x NT x PF; the support checks and
// the config decoding are in fp8_gemv_launch.cu.
#include "fp8_gemv_xs.cuh"
#include "pdl.cuh"

namespace qlinear {
namespace fp8g {

int xs_smem_bytes(int nt, int warps, int kb, int kbs) { return xs_layout(nt, warps, kb, kbs).bytes; }

namespace {

template <typename XT, int NT, int PF>
cudaError_t launch_xs_one(const Params& p, int warps, int tgs, int cl, bool pdl, cudaStream_t stream) {
  XsParams xp{};
  xp.p = p;
  const int kbs = p.kb_per_split;
  xp.l = xs_layout(NT, warps, p.kb, kbs);
  xp.ck = warps;
  xp.nc = (kbs + warps - 1) / warps;
  if (xp.nc > kXsChunks) {
    xp.ck = (kbs + kXsChunks - 1) / kXsChunks;
    xp.nc = (kbs + xp.ck - 1) / xp.ck;
  }
  xp.cl = cl;
  const auto kernel = fp8_gemv_xs_kernel<XT, NT, PF>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, xp.l.bytes);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(tgs), static_cast<unsigned>(p.splits));
  return pdl::launch_smem(kernel, grid, dim3(32 * warps), static_cast<size_t>(xp.l.bytes), stream, pdl, cl, xp);
}

template <typename XT, int NT>
cudaError_t launch_xs_nt(const Params& p, int pf, int warps, int tgs, int cl, bool pdl, cudaStream_t stream) {
  switch (pf) {
    case 1: return launch_xs_one<XT, NT, 1>(p, warps, tgs, cl, pdl, stream);
    case 2: return launch_xs_one<XT, NT, 2>(p, warps, tgs, cl, pdl, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_xs(const Params& p, bool bf16, bool two, int pf, int warps, int tgs, int cl, bool pdl,
                      cudaStream_t stream) {
  if (bf16)
    return two ? launch_xs_nt<__nv_bfloat16, 2>(p, pf, warps, tgs, cl, pdl, stream)
               : launch_xs_nt<__nv_bfloat16, 1>(p, pf, warps, tgs, cl, pdl, stream);
  return two ? launch_xs_nt<__half, 2>(p, pf, warps, tgs, cl, pdl, stream)
             : launch_xs_nt<__half, 1>(p, pf, warps, tgs, cl, pdl, stream);
}

}  // namespace fp8g
}  // namespace qlinear
