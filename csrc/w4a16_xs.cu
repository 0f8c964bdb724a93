// The x-staged W4A16 decode kernel's instances (w4a16_xs.cuh): both x dtypes, with and without the zero
// fold, in their own translation unit so they compile in parallel with the others.
#include "w4a16_xs.cuh"

namespace qlinear {
namespace w4a16g {

cudaError_t xs_dispatch_bf16(const Params& p, int code, int warps, int fold, bool pdl, cudaStream_t s) {
  return fold ? xs_dispatch<__nv_bfloat16, 1>(p, code, warps, pdl, s)
              : xs_dispatch<__nv_bfloat16, 0>(p, code, warps, pdl, s);
}

cudaError_t xs_dispatch_f16(const Params& p, int code, int warps, int fold, bool pdl, cudaStream_t s) {
  return fold ? xs_dispatch<__half, 1>(p, code, warps, pdl, s) : xs_dispatch<__half, 0>(p, code, warps, pdl, s);
}

}  // namespace w4a16g
}  // namespace qlinear
