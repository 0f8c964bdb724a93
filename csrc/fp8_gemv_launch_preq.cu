// The pre-quantized-x instances (PQ = true) of the FP8 decode GEMM (fp8_gemv_dispatch.cuh); the
// launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {
QLINEAR_FP8G_LAUNCH_PQ(launch_preq, true)
}  // namespace fp8g
}  // namespace qlinear
