// Host launcher of the fused residual-add RMSNorm: instantiates the FUSED = true kernels (the
// plain ones are in norm_launch.cu; the shared launch machinery is norm_launch_impl.cuh), so the
// two halves compile in parallel.
#include "norm_launch_impl.cuh"

namespace qlinear {

cudaError_t fused_add_rms_norm_launch(NormOperand x, NormOperand residual, const void* weight,
                                      int64_t n_rows, int64_t n_inner, int64_t hidden, float eps,
                                      NormDType dtype, cudaStream_t stream, NormConfig config) {
  return launch<true>(x, x, residual, weight, n_rows, n_inner, hidden, eps, dtype, stream, config);
}

}  // namespace qlinear
