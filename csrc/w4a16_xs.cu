// The x-staged W4A16 decode kernel's instances (w4a16_xs.cuh): both x dtypes, without the zero fold
// (kXsCodes) and with it (kXsFoldCodes), in their own translation unit so they compile in parallel
// with the others.
#include "w4a16_xs.cuh"

namespace qlinear {
namespace w4a16g {

cudaError_t xs_dispatch_bf16(const Params& p, int code, int warps, int fold, bool pdl, cudaStream_t s) {
  return fold ? xs_dispatch<__nv_bfloat16, 1, kXsFoldCodes>(p, code, warps, pdl, s)
              : xs_dispatch<__nv_bfloat16, 0, kXsCodes>(p, code, warps, pdl, s);
}

cudaError_t xs_dispatch_f16(const Params& p, int code, int warps, int fold, bool pdl, cudaStream_t s) {
  return fold ? xs_dispatch<__half, 1, kXsFoldCodes>(p, code, warps, pdl, s)
              : xs_dispatch<__half, 0, kXsCodes>(p, code, warps, pdl, s);
}

}  // namespace w4a16g
}  // namespace qlinear
