// The W4A16 register kernel's staged-x instances (XS, w4a16_gemv.cuh), in their own TU so they compile in
// parallel with the other instances.
#include "w4a16_gemv.cuh"

namespace qlinear {
namespace w4a16g {

cudaError_t reg_xs_dispatch_bf16(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  return reg_xs_dispatch<__nv_bfloat16>(p, code, warps, pdl, s);
}

cudaError_t reg_xs_dispatch_f16(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  return reg_xs_dispatch<__half>(p, code, warps, pdl, s);
}

}  // namespace w4a16g
}  // namespace qlinear
