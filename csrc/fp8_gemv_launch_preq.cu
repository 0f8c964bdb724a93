// The pre-quantized-x instances (XQ = kXPre) of the FP8 decode GEMM (fp8_gemv_dispatch.cuh); the
// launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {
QLINEAR_FP8G_LAUNCH_XQ(launch_preq, kXPre)
}  // namespace fp8g
}  // namespace qlinear
