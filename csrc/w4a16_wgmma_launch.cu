// Launcher of the Hopper wgmma W4A16 GEMM (w4a16_wgmma.cuh): support checks, the automatic config and
// the dispatch over the compiled (dtype, TN, ST) instances. Declared in w4a16_gemm_launch.h.
#include "device_attrs.h"
#include "int_math.h"
#include "tensor_map.h"
#include "w4a16_gemm_launch.h"
#include "w4a16_params.cuh"
#include "w4a16_wgmma.cuh"

namespace qlinear {
namespace {

using w4a16g::WgParams;

// warps = 16-row tiles per CTA: 8 (128 rows, a warpgroup per 64), 4 (64 rows, a warpgroup per half of
// every superblock's k-steps; the CTA has 8 warps) or 12 (192 rows, three warpgroups).
int wg_rows(const W4GemmConfig& c) { return c.warps * 16; }
int wg_code(const W4GemmConfig& c) {
  // P = c.producer (0 .. 4; another value gives a code that is not listed: refused)
  return c.producer * 10000 + (c.warps == 4 ? 1000 : (c.warps == 12 ? 2000 : 0)) + (c.tokens / 8) * 10 + c.stages;
}

int64_t wg_tiles(const W4GemvArgs& a, const W4GemmConfig& c) {
  return cdiv64(a.n, wg_rows(c)) * cdiv64(a.m, c.tokens);
}

// Whether the grid's CTAs can all be resident at once, as a spread reduction needs: one CTA per SM (the
// ring takes most of the shared memory), so at most one CTA per SM in the grid.
bool wg_grid_fits(const W4GemvArgs& a, const W4GemmConfig& c) {
  return wg_tiles(a, c) * c.splits <= devattr::sm_count();
}

// A spread reduction (wp.gp.spread) is launched cooperative: the runtime then guarantees that all CTAs
// are resident together, which the CTAs waiting for each other's partials rely on. A pair reduction
// (wp.pair) is launched in clusters of two CTAs along y (a tile's splits 2i, 2i + 1).
template <typename XT, int C>
cudaError_t launch_code(const WgParams& wp, dim3 grid, bool pdl, cudaStream_t stream) {
  using D = w4a16g::WgCode<C>;
  const auto kernel = w4a16g::w4_wgmma_kernel<XT, D::TN, D::ST, D::ROWS, D::PROD, D::ALT, D::AB>;
  const int smem = w4a16g::wg_smem_bytes(D::TN, D::ST, D::ROWS);
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  return pdl::launch_smem_ex(kernel, grid, dim3(w4a16g::wg_threads(D::ROWS, D::PROD)), smem, stream, pdl,
                             dim3(1, wp.pair ? 2 : 1, 1), wp.gp.spread != 0, -1, wp);
}

template <typename XT>
cudaError_t launch_listed(int code, const WgParams& wp, dim3 grid, bool pdl, cudaStream_t stream) {
  return with_listed_code<w4a16g::kWgCodes>(code, cudaErrorInvalidValue, [&](auto c) {
    return launch_code<XT, decltype(c)::value>(wp, grid, pdl, stream);
  });
}

}  // namespace

int w4_wgmma_built() {
  static int cache[64] = {0};
  return devattr::per_device(cache, 0, [](int) {
    int flag = 0;
    // the device code of this device's architecture says whether it was compiled with wgmma
    const bool ok = devattr::cc_major() == 9 &&
                    cudaMemcpyFromSymbol(&flag, w4a16g::wgmma_built_flag, sizeof(int)) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();
    return ok && flag == 1 ? 1 : 0;
  });
}

// Automatic choice: 64 / 128 / 256 tokens per CTA for M up to 64 / 128 / beyond, with 8 / 4 / 3 stages
// (what fits in shared memory); the K split that minimizes waves x (superblocks per CTA + 2 for the
// prologue and epilogue + for a split the partials' round trip, 2 + tokens / 64), each split keeping
// >= 4 superblocks. Session 11 run 8: 7168x16384 M = 1024 at 256 tokens took 376.5 us unsplit, 410.3
// with 2 splits and 412.5 with 4 (the choice before the tokens term).
W4GemmConfig w4_wgmma_resolve(const W4GemvArgs& a, const W4GemmConfig& cfg) {
  W4GemmConfig c = cfg;
  if (c.warps <= 0) c.warps = 8;
  // tokens as compiled: 64 for 128-row CTAs only, 256 for 64- and 128-row ones, 192-row CTAs 128 (and 176 with
  // producer 3 or 4, asked for explicitly)
  if (c.tokens <= 0)
    c.tokens = c.warps == 12 ? 128 : (a.m <= 64 && c.warps == 8 ? 64 : (a.m <= 128 ? 128 : 256));
  if (c.stages <= 0) c.stages = c.tokens >= 256 ? 3 : (c.tokens >= 128 ? 4 : 8);
  const int64_t nsb = cdiv64(a.k, 128);
  if (c.splits <= 0) {
    const int64_t tiles = wg_tiles(a, c), sms = devattr::sm_count();
    const int64_t cap = nsb / 4 > 0 ? nsb / 4 : 1;
    int64_t best = 1, best_cost = -1;
    for (int64_t s = 1; s <= cap && s <= 16; ++s) {
      const int64_t cost = cdiv64(tiles * s, sms) * (cdiv64(nsb, s) + 2 + (s > 1 ? 2 + c.tokens / 64 : 0));
      if (best_cost < 0 || cost < best_cost) best = s, best_cost = cost;
    }
    c.splits = static_cast<int>(best);
  }
  if (c.splits >= 1 && c.splits <= nsb) c.splits = static_cast<int>(cdiv64(nsb, cdiv64(nsb, c.splits)));
  if (c.reduce == 0) c.reduce = c.splits > 1 && wg_grid_fits(a, c) ? 2 : 1;
  return c;
}

int64_t w4_wgmma_workspace_floats(const W4GemvArgs& a, const W4GemmConfig& cfg) {
  const W4GemmConfig c = w4_wgmma_resolve(a, cfg);
  if (c.splits <= 1) return 0;
  return wg_tiles(a, c) * c.splits * wg_rows(c) * c.tokens;
}

W4GemmSupport w4_wgmma_supported(const W4GemvArgs& a, const W4GemmConfig& cfg, int64_t workspace_floats,
                                 int64_t counters) {
  const W4GemmSupport base = w4_gemm_operands_supported(a);
  if (base != W4GemmSupport::kOk) return base;
  if (!w4_wgmma_built()) return W4GemmSupport::kNoWgmma;
  const W4GemmConfig c = w4_wgmma_resolve(a, cfg);
  if ((c.warps != 8 && c.warps != 4 && c.warps != 12) || c.tokens % 8 != 0 ||
      !code_listed(w4a16g::kWgCodes, wg_code(c)) || c.reduce < 1 || c.reduce > 3 ||
      (c.reduce == 2 && !wg_grid_fits(a, c)) || (c.reduce == 3 && (c.splits % 2 != 0 || c.producer == 1)) ||
      c.pdl < 0 || c.pdl > 1 || c.producer < 0 || c.producer > 4)
    return W4GemmSupport::kBadConfig;
  // a spread reduction counts arrivals and departures, a pair reduction the arrivals per half tile: two
  // counters per output tile
  return w4_gemm_config_limits(a, c.splits, wg_tiles(a, c) * (c.reduce >= 2 ? 2 : 1), w4_wgmma_workspace_floats(a, c),
                               workspace_floats, counters, w4a16g::wg_smem_bytes(c.tokens, c.stages, wg_rows(c)));
}

int w4_wgmma_configs(int* codes, int cap) { return append_codes(w4a16g::kWgCodes, codes, cap, 0); }

cudaError_t w4_wgmma_launch(const W4GemvArgs& a, const W4GemmConfig& cfg, float* workspace, int64_t workspace_floats,
                            int32_t* counters, int64_t num_counters, cudaStream_t stream, W4GemmConfig* used) {
  if (w4_wgmma_supported(a, cfg, workspace_floats, num_counters) != W4GemmSupport::kOk) return cudaErrorInvalidValue;
  const W4GemmConfig c = w4_wgmma_resolve(a, cfg);
  if (used != nullptr) *used = c;
  WgParams wp{};
  wp.gp = w4a16g::gemm_params(w4_params(a, 0), workspace, counters, c.splits);
  wp.gp.spread = c.splits > 1 && c.reduce == 2 ? 1 : 0;
  wp.pair = c.reduce == 3 ? 1 : 0;
  const int64_t nsb = cdiv64(a.k, 128);
  // x [M, K] in boxes of 64 columns x `tokens` rows, swizzled for the wgmma descriptor; qweight
  // [N, 16 nsb] int32 in boxes of 16 words x the CTA's rows. One row of x: any stride works (rounded to 16)
  const uint64_t x_row = a.m > 1 ? static_cast<uint64_t>(a.x_stride) * 2 : static_cast<uint64_t>(cdiv64(a.k * 2, 16) * 16);
  const CUtensorMapDataType xdt =
      a.x_dtype == W4GDType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  if (!tmap::encode_2d(&wp.xmap, xdt, a.x, static_cast<uint64_t>(a.k), static_cast<uint64_t>(a.m), x_row, 64,
                       static_cast<uint32_t>(c.tokens), CU_TENSOR_MAP_SWIZZLE_128B) ||
      !tmap::encode_2d(&wp.wmap, CU_TENSOR_MAP_DATA_TYPE_INT32, a.qweight, static_cast<uint64_t>(nsb * 16),
                       static_cast<uint64_t>(a.n), static_cast<uint64_t>(a.qw_stride) * 4, 16,
                       static_cast<uint32_t>(wg_rows(c)),
                       CU_TENSOR_MAP_SWIZZLE_NONE))
    return cudaErrorInvalidValue;
  // out [M, N] for the TMA-store epilogue of unsplit tiles where the CTA shape has it: 16-byte aligned base
  // and row stride (else, or if the driver refuses the map, the tile is stored by the threads)
  const uint64_t o_row = tmap::row_pitch(a.m, a.out_stride * 2, a.n * 2);
  wp.store_tma = c.splits == 1 && w4a16g::wg_tma_store_rows(wg_rows(c)) &&
                 reinterpret_cast<uintptr_t>(a.out) % 16 == 0 && o_row % 16 == 0 &&
                 tmap::encode_2d(&wp.omap, xdt, a.out, static_cast<uint64_t>(a.n), static_cast<uint64_t>(a.m), o_row,
                                 64, static_cast<uint32_t>(c.tokens), CU_TENSOR_MAP_SWIZZLE_128B);
  const dim3 grid(static_cast<unsigned>(cdiv64(a.n, wg_rows(c))), static_cast<unsigned>(c.splits),
                  static_cast<unsigned>(cdiv64(a.m, c.tokens)));
  auto launch = [&](bool pdl) {
    return a.x_dtype == W4GDType::kBFloat16 ? launch_listed<__nv_bfloat16>(wg_code(c), wp, grid, pdl, stream)
                                            : launch_listed<__half>(wg_code(c), wp, grid, pdl, stream);
  };
  cudaError_t e = launch(c.pdl == 1);
  // a runtime that refuses PDL on a cooperative launch gets the plain cooperative one (same results)
  if (e != cudaSuccess && c.pdl == 1 && wp.gp.spread) {
    (void)cudaGetLastError();
    e = launch(false);
  }
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

}  // namespace qlinear
