// The W4A16 TMA ring decode kernel's host side (w4a16_tma.cuh): a call's four tensor maps, its stage
// layout and the launch of the compiled (dtype, code, token tiles) instance, in a TU of their own so they
// compile in parallel with the other decode instances. Called by w4a16_gemv_launch.cu for ring codes
// >= 20000.
#include <type_traits>

#include "tensor_map.h"
#include "w4a16_tma.cuh"

namespace qlinear {
namespace w4a16g {

namespace {

// The maps for boxes of `rows` rows and `ks` superblocks at tp.mb x rows; false when the driver refuses
// one (the launcher's tma_ok checks the alignments it needs first). x3d (SW = 2): x as [M][K / 64][64],
// one box of 64 x 2 x mb per superblock (tma_x3d; the caller has checked K % 64 == 0).
bool tma_maps(TmaParams& tp, uint32_t rows, uint32_t ks, bool bf16, bool sw, bool x3d) {
  const Params& p = tp.p;
  const uint64_t n = static_cast<uint64_t>(p.n), groups = static_cast<uint64_t>(p.num_groups);
  const uint64_t x_row = tmap::row_pitch(p.m, p.x_stride * 2, p.k * 2);
  const CUtensorMapDataType xdt = bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const uint64_t xdims[3] = {64, static_cast<uint64_t>(p.k / 64), static_cast<uint64_t>(p.m)};
  const uint32_t xbox[3] = {64, 2, static_cast<uint32_t>(tp.mb)};
  bool ok = tmap::encode_2d(&tp.wmap, CU_TENSOR_MAP_DATA_TYPE_INT32, p.qw, static_cast<uint64_t>(p.nsb) * 16, n,
                            static_cast<uint64_t>(p.qw_stride) * 4, 16, rows, CU_TENSOR_MAP_SWIZZLE_NONE) &&
            (x3d ? tmap::encode_3d(&tp.xmap, xdt, p.x, xdims, 128, x_row, xbox, CU_TENSOR_MAP_SWIZZLE_128B)
                 : tmap::encode_2d(&tp.xmap, xdt, p.x, static_cast<uint64_t>(p.k), static_cast<uint64_t>(p.m), x_row,
                                   sw ? 64 : 128, static_cast<uint32_t>(tp.mb),
                                   sw ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE));
  // 16-bit scales (tma_ok); per channel G = 1, the box's other groups land as zeros and are not read
  ok = ok && tmap::encode_2d(&tp.smap, CU_TENSOR_MAP_DATA_TYPE_UINT16, p.scales, n, groups, n * 2, rows, ks,
                             CU_TENSOR_MAP_SWIZZLE_NONE);
  if (ok && p.zeros != nullptr)
    ok = tmap::encode_2d(&tp.zmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, p.zeros, n, groups, n, rows, ks,
                         CU_TENSOR_MAP_SWIZZLE_NONE);
  return ok;
}

// Instance C: its maps, the stage layout at tp.mb x rows, the launch.
template <typename XT, int C, int NT>
cudaError_t tma_launch(TmaParams& tp, bool pdl, cudaStream_t stream) {
  using D = TmaCode<C>;
  constexpr bool sw = tma_swizzled(C, NT);
  if (!tma_maps(tp, 16 * D::R, D::KS, std::is_same<XT, __nv_bfloat16>::value, sw, tma_x3d(C, NT)))
    return cudaErrorInvalidValue;
  const TmaLayout l = tma_stage_layout(D::R, D::KS, tp.mb, sw, NT);
  tp.off_x = l.off_x;
  tp.off_s = l.off_s;
  tp.off_z = l.off_z;
  tp.stage_bytes = l.stage_bytes;
  tp.off_red = D::ST * l.stage_bytes;
  const int smem = tma_smem_bytes(C, NT, tp.mb);
  tp.off_bar = smem - 16 * D::ST - tma_ring_slack(sw);  // offsets from the aligned ring
  // a stage lands its weight, x and scale boxes, and the zero box only when the layer has zero points
  tp.tx_bytes = static_cast<uint32_t>(l.landed + (tp.p.zeros != nullptr ? D::KS * D::R * 16 : 0));
  // the pair split: a cluster of two CTAs per row tile
  const dim3 grid(static_cast<unsigned>((tp.p.n + 16 * D::R - 1) / (16 * D::R) * D::KP));
  return launch_kernel(tma_gemv_kernel<XT, C, NT>, grid, dim3(32 * tma_warps(C)), static_cast<size_t>(smem), pdl,
                       stream, tp, D::KP);
}

template <typename XT>
cudaError_t tma_dispatch(const Params& p, int code, int nt, bool pdl, cudaStream_t s) {
  TmaParams tp{};
  tp.p = p;
  tp.mb = p.m < 8 * nt ? p.m : 8 * nt;
  tp.scale_bf16 = p.scale_kind == FKind::kBFloat16 ? 1 : 0;
  // SW = 2 views x as [M][K / 64][64]: with K % 64 != 0 its unswizzled twin runs (compiled: the
  // static_assert beside kTmaNT2)
  if (tma_digits(code).sw == 2 && p.k % 64 != 0) code = tma_twin(code);
  if (nt == 1)
    return with_listed_code<kTmaNT1>(code, cudaErrorInvalidValue,
                                     [&](auto c) { return tma_launch<XT, decltype(c)::value, 1>(tp, pdl, s); });
  return with_listed_code<kTmaNT2>(code, cudaErrorInvalidValue,
                                   [&](auto c) { return tma_launch<XT, decltype(c)::value, 2>(tp, pdl, s); });
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
