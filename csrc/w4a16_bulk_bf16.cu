// The W4A16 bulk ring kernel's bfloat16 instances (w4a16_gemv.cuh, sm_90 cp.async.bulk), a TU of their
// own so they compile in parallel with the ring / register instances and the launcher.
#include "w4a16_gemv.cuh"

namespace qlinear {
namespace w4a16g {

cudaError_t bulk_dispatch_bf16(const Params& p, int code, int nt, bool pdl, cudaStream_t s) {
  return bulk_dispatch<__nv_bfloat16, 0>(p, code, nt, pdl, s);
}

}  // namespace w4a16g
}  // namespace qlinear
