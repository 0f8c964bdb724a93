// The W4A16 ring and register kernels' float16 instances (w4a16_gemv.cuh), one TU per dtype so they compile in
// parallel with the launcher.
#include "w4a16_gemv.cuh"

namespace qlinear {
namespace w4a16g {

cudaError_t ring_dispatch_f16(const Params& p, int code, int nt, bool pdl, cudaStream_t s) {
  return ring_dispatch<__half, 0>(p, code, nt, pdl, s);
}

cudaError_t reg_dispatch_f16(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  return reg_dispatch<__half, 0>(p, code, warps, pdl, s);
}

}  // namespace w4a16g
}  // namespace qlinear
