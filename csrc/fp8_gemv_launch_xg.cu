// The x-quantized-once instances (XQ = kXGlobal) of the FP8 decode GEMM (fp8_gemv_dispatch.cuh); the
// launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {
QLINEAR_FP8G_LAUNCH_XQ(launch_xg, kXGlobal)
}  // namespace fp8g
}  // namespace qlinear
