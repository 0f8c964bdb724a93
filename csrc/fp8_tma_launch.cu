// The FP8 TMA ring decode kernel's host side (fp8_tma.cuh): a call's four tensor maps, its stage layout and
// the launch of the compiled (dtype, token tiles, shape key) instance, in a TU of its own so it compiles in
// parallel with the other FP8 instances. Called by fp8_gemv_launch.cu for T = 1 codes, after its support
// checks (pre-quantized x, row-major scale rows of 16-byte multiples, 16-byte aligned pointers).
#include "fp8_tma.cuh"
#include "tensor_map.h"

namespace qlinear {
namespace fp8g {

namespace {

bool tma_maps(TmaParams& tp, uint32_t rows, uint32_t ks) {
  const Params& p = tp.p;
  const uint64_t k = static_cast<uint64_t>(p.kb) * 128, kb = static_cast<uint64_t>(p.kb);
  const int64_t nblk = (p.n + 127) / 128;
  return tmap::encode_2d(&tp.wmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, p.w, k, static_cast<uint64_t>(p.n),
                         tmap::row_pitch(p.n, p.w_stride, k), 128, rows, CU_TENSOR_MAP_SWIZZLE_128B) &&
         tmap::encode_2d(&tp.xmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, p.x, k, static_cast<uint64_t>(p.m),
                         tmap::row_pitch(p.m, p.x_stride, k), 128, static_cast<uint32_t>(tp.mb), CU_TENSOR_MAP_SWIZZLE_128B) &&
         tmap::encode_2d(&tp.smap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, p.wsi, kb, static_cast<uint64_t>(nblk),
                         tmap::row_pitch(nblk, p.wsi_s0 * 4, p.kb * 4), ks, 1, CU_TENSOR_MAP_SWIZZLE_NONE) &&
         tmap::encode_2d(&tp.xsmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, p.xs, kb, static_cast<uint64_t>(p.m),
                         tmap::row_pitch(p.m, p.xs_s0 * 4, p.kb * 4), ks, static_cast<uint32_t>(tp.mb),
                         CU_TENSOR_MAP_SWIZZLE_NONE);
}

template <typename XT, int NT, int KEY>
cudaError_t tma_launch(TmaParams& tp, bool pdl, cudaStream_t stream) {
  constexpr TmaShape S = tma_shape(KEY);
  if (!tma_maps(tp, 16 * S.r, S.ks)) return cudaErrorInvalidValue;
  const TmaLayout l = tma_layout(S.r, S.ks, tp.mb);
  tp.xslot = l.xslot;
  tp.off_x = l.off_x;
  tp.off_s = l.off_s;
  tp.off_xs = l.off_xs;
  tp.stage_bytes = l.stage_bytes;
  tp.off_red = S.st * l.stage_bytes;
  tp.off_bar = tp.off_red + (S.cw + 1) * S.r * NT * 128 * 4;  // offsets from the aligned ring
  tp.tx_bytes = static_cast<uint32_t>(l.landed);
  const int smem = tma_smem_bytes(KEY, NT, tp.mb);
  const auto kernel = fp8_tma_kernel<XT, NT, KEY>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((tp.p.n + 16 * S.r - 1) / (16 * S.r)));
  return pdl::launch_smem_cv(kernel, grid, dim3(32 * (S.cw + 1)), static_cast<size_t>(smem), stream, pdl, 1,
                             tp.p.carveout, tp);
}

template <typename XT>
cudaError_t tma_dispatch(const Params& p, int key, bool early, bool pdl, cudaStream_t stream) {
  TmaParams tp{};
  tp.p = p;
  tp.early = early ? 1 : 0;
  const int nt = p.m > 8 ? 2 : 1;
  tp.mb = p.m < 8 * nt ? p.m : 8 * nt;
  if (nt == 1)
    return with_listed_code<kTmaKeys>(key, cudaErrorInvalidValue,
                                      [&](auto c) { return tma_launch<XT, 1, decltype(c)::value>(tp, pdl, stream); });
  return with_listed_code<kTmaKeys>(key, cudaErrorInvalidValue,
                                    [&](auto c) { return tma_launch<XT, 2, decltype(c)::value>(tp, pdl, stream); });
}

}  // namespace

cudaError_t launch_tma(const Params& p, bool bf16, int key, bool early, bool pdl, cudaStream_t stream) {
  return bf16 ? tma_dispatch<__nv_bfloat16>(p, key, early, pdl, stream)
              : tma_dispatch<__half>(p, key, early, pdl, stream);
}

}  // namespace fp8g
}  // namespace qlinear
