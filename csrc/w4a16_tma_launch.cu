// The W4A16 TMA ring decode kernel's host side (w4a16_tma.cuh): the four tensor maps of a call and the
// dispatch over the compiled (dtype, code, token tiles) instances, in a TU of their own so they compile
// in parallel with the other decode instances. Called by w4a16_gemv_launch.cu for ring codes >= 20000.
#include <type_traits>

#include "tensor_map.h"
#include "w4a16_tma.cuh"

namespace qlinear {
namespace w4a16g {

namespace {

// The maps for code's boxes (R row tiles, KS superblocks) at mb x rows; false when the driver refuses
// one (the launcher's tma_ok checks the alignments it needs first).
bool tma_maps(TmaParams& tp, int code, bool bf16) {
  const Params& p = tp.p;
  const uint32_t rows = static_cast<uint32_t>(16 * (code / 1000 % 10)), ks = static_cast<uint32_t>(code / 100 % 10);
  const uint64_t n = static_cast<uint64_t>(p.n), groups = static_cast<uint64_t>(p.num_groups);
  // one row of x: any stride works (the box has one row), rounded to the 16 bytes a map needs
  const uint64_t x_row =
      p.m > 1 ? static_cast<uint64_t>(p.x_stride) * 2 : (static_cast<uint64_t>(p.k) * 2 + 15) / 16 * 16;
  bool ok = tmap::encode_2d(&tp.wmap, CU_TENSOR_MAP_DATA_TYPE_INT32, p.qw, static_cast<uint64_t>(p.nsb) * 16, n,
                            static_cast<uint64_t>(p.qw_stride) * 4, 16, rows, CU_TENSOR_MAP_SWIZZLE_NONE) &&
            tmap::encode_2d(&tp.xmap, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, p.x,
                            static_cast<uint64_t>(p.k), static_cast<uint64_t>(p.m), x_row, 128,
                            static_cast<uint32_t>(tp.mb), CU_TENSOR_MAP_SWIZZLE_NONE);
  // 16-bit scales (tma_ok); per channel G = 1, the box's other groups land as zeros and are not read
  ok = ok && tmap::encode_2d(&tp.smap, CU_TENSOR_MAP_DATA_TYPE_UINT16, p.scales, n, groups, n * 2, rows, ks,
                             CU_TENSOR_MAP_SWIZZLE_NONE);
  if (ok && p.zeros != nullptr)
    ok = tmap::encode_2d(&tp.zmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, p.zeros, n, groups, n, rows, ks,
                         CU_TENSOR_MAP_SWIZZLE_NONE);
  return ok;
}

template <typename XT>
cudaError_t tma_dispatch(const Params& p, int code, int nt, bool pdl, cudaStream_t s) {
  TmaParams tp{};
  tp.p = p;
  tp.mb = p.m < 8 * nt ? p.m : 8 * nt;
  tp.scale_bf16 = p.scale_kind == FKind::kBFloat16 ? 1 : 0;
  if (!tma_maps(tp, code, std::is_same<XT, __nv_bfloat16>::value)) return cudaErrorInvalidValue;
  return nt == 1 ? tma_launch_listed<XT, 1>(tp, code, pdl, s) : tma_launch_listed<XT, 2>(tp, code, pdl, s);
}

}  // namespace

cudaError_t tma_dispatch_bf16(const Params& p, int code, int nt, bool pdl, cudaStream_t s) {
  return tma_dispatch<__nv_bfloat16>(p, code, nt, pdl, s);
}
cudaError_t tma_dispatch_f16(const Params& p, int code, int nt, bool pdl, cudaStream_t s) {
  return tma_dispatch<__half>(p, code, nt, pdl, s);
}

}  // namespace w4a16g
}  // namespace qlinear
