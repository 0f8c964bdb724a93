// Host launchers: validate sizes, choose between the 16-byte register kernel and the generic
// kernel, pick threads per row / rows per block, and launch on the given stream.
// This translation unit instantiates the plain-norm and the multi-slice kernels, and
// norm_launch_fused.cu the fused residual-add ones, so the two compile in parallel and a first build
// stays short; the launch machinery both use is norm_launch_impl.cuh. Kernels per half: 3 dtypes x
// {vec NV=1,2,4 with the weight loaded after / before the reduction, vec NV=8, generic, cluster
// NV=1,2}; for fp16 / bf16 the cache-hinted vec kernels (NV=2,4 x 5 hint sets), the vec kernel with
// the shuffle reduction (NV=4, weight after / before the reduction) and the one-row-per-block kernel
// (NV=1,2, plus its 32-register variant); the two-pass loop kernel (3 dtypes x 2 / 4 vectors per
// step) and its fp16 / bf16 store / load variants (VAR 1..3); the row kernel with hints 4 / 5 (fp16 /
// bf16, NV=1,2, both launch bounds); the mbarrier cluster kernel (fp16 / bf16, NV=1,2, block or warp
// pushes; the plain half also with the weight before the PDL wait). Plain only: the vec kernels
// with the weight loaded before the PDL wait, the persistent kernel (NV=2,4) and the multi-slice
// kernel (3 dtypes x NV=2,4).
#define QLINEAR_NORM_LAUNCH_SLICES
#include "norm_launch_impl.cuh"

namespace qlinear {

cudaError_t rms_norm_slices_launch(NormOperand x, const NormSlice* slices, int n_slices, int64_t n_rows,
                                   int64_t n_inner, float eps, NormDType dtype, cudaStream_t stream,
                                   NormSlicesConfig config) {
  return slices_impl(x, slices, n_slices, n_rows, n_inner, eps, dtype, stream, config);
}

cudaError_t rms_norm_launch(NormOperand out, NormOperand x, const void* weight, int64_t n_rows,
                            int64_t n_inner, int64_t hidden, float eps, NormDType dtype,
                            cudaStream_t stream, NormConfig config) {
  return launch<false>(out, x, NormOperand{nullptr, 0, 0}, weight, n_rows, n_inner, hidden, eps,
                       dtype, stream, config);
}

}  // namespace qlinear
