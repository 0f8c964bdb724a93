// The shared-memory ring instances of the FP8 decode GEMM (fp8_gemv_dispatch.cuh), pre-quantized x (PQ = true);
// the launcher logic is in fp8_gemv_launch.cu.
#include "fp8_gemv_dispatch.cuh"

namespace qlinear {
namespace fp8g {
QLINEAR_FP8G_LAUNCH_RING(launch_ring_preq, true)
}  // namespace fp8g
}  // namespace qlinear
