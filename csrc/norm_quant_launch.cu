// Host launcher of the fused RMSNorm -> FP8 kernels: checks alignment, picks the fixed-size row
// kernel (16-bit rows of 512 / 1024 / 1536 / 2048, group 128), the register kernel (budget NV = 8
// or 16 vectors per lane), the block-per-row kernel (16-bit rows longer than that), the two-pass
// vector kernel or the generic kernel, sizes a persistent grid from the occupancy, and launches on
// the given stream.
// The one translation unit holding every instantiation, kept to what is measured to matter:
// row kernel for bf16 x {512, 1024, 1536, 2048} x {plain, fused add} (+ a few launch variants and
// the bulk-copy form at 512 and 1536, which the benchmark compares; sm_89+ / sm_90 only); register kernel for bf16 / fp16 only
// {NV 8 (+ prefetch, plain norm only), NV 16} x {plain, fused add}; two-pass vector and generic
// kernels for all three dtypes x {plain, fused add}.
#include <mutex>
#include <type_traits>

#include "norm_quant.cuh"
#include "norm_quant_launch.h"

namespace qlinear {
namespace {

using nq::Params;

// Default warps (rows in flight) per block, before the few-rows reduction below. H200, 32768
// strided 1536-wide bf16 rows (benchmarks/results/session2/normquant_run1.json): 16 warps 49.0 us
// (0.727 of copy), 8 warps 51.0 us, 4 warps 51.6 us. A shared-memory ring variant (cp.async, 3 rows
// ahead per warp, 40 registers) measured slower, 73 us, and was dropped.
constexpr int kDefaultWarpsPerBlock = 16;

int current_device() {
  int dev = 0;
  return cudaGetDevice(&dev) == cudaSuccess ? dev : -1;
}

int sm_count(int dev) {
  static int cache[64] = {0};
  if (dev < 0 || dev >= 64) return 132;
  if (cache[dev] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    cache[dev] = n;
  }
  return cache[dev];
}

// Compute capability >= 8.9 (hardware e4m3 conversion): the row kernel is compiled only for those
// (its compute_80 PTX is an empty body, see nq_row_kernel), cached per device.
bool device_has_fp8_cvt(int dev) {
  static int cache[64] = {0};  // 0 unknown, 1 yes, 2 no
  if (dev < 0 || dev >= 64) return false;
  if (cache[dev] == 0) {
    int major = 0, minor = 0;
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess;
    cache[dev] = ok && major * 10 + minor >= 89 ? 1 : 2;
  }
  return cache[dev] == 1;
}

// Compute capability 9.x (cp.async.bulk with an mbarrier; nq_bulk_kernel is tuned for the H200).
bool device_is_sm90(int dev) {
  static int cache[64] = {0};  // 0 unknown, 1 yes, 2 no
  if (dev < 0 || dev >= 64) return false;
  if (cache[dev] == 0) {
    int major = 0;
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess;
    cache[dev] = ok && major == 9 ? 1 : 2;
  }
  return cache[dev] == 1;
}

// Resident blocks per SM of (kernel, block size, shared memory), cached: the occupancy query
// costs microseconds, and this runs on every call.
int blocks_per_sm(const void* kernel, int dev, int threads, size_t smem) {
  struct Entry {
    const void* kernel = nullptr;
    int dev, threads;
    size_t smem;
    int blocks;
  };
  static std::mutex mu;
  static Entry cache[128];
  static int used = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int i = 0; i < used; ++i)
      if (cache[i].kernel == kernel && cache[i].dev == dev && cache[i].threads == threads && cache[i].smem == smem)
        return cache[i].blocks;
  }
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    n = 1;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (used < 128) cache[used++] = Entry{kernel, dev, threads, smem, n};
  return n;
}

bool aligned(const void* p, int64_t stride, int64_t rows, int64_t es, int64_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0) return false;
  return rows <= 1 || (stride * es) % bytes == 0;
}

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// nq_slim_kernel's 32-bit indexing: rows (with a grid step's headroom) and every row stride in
// bytes below 2^31, non-negative.
bool fits_idx32(const NormQuantArgs& a) {
  auto ok = [](int64_t bytes) { return bytes >= 0 && bytes < (int64_t{1} << 31); };
  return a.rows <= (int64_t{1} << 29) && ok(a.x_stride * 2) && (!a.residual || ok(a.residual_stride * 2)) &&
         ok(a.q_stride) && ok(a.s_row_stride * 4) && a.s_col_stride >= 0;
}

// The register kernel's instantiations (16-bit types): NV 8 or 16; the prefetching variant only
// for NV 8 without residual (with it, two rows of x and residual exceed the register budget).
template <typename T, bool RES>
const void* vec_kernel(int nv, bool prefetch) {
  if (nv == 16) return reinterpret_cast<const void*>(&nq::nq_vec_kernel<T, 16, RES, false>);
  if (prefetch && !RES) return reinterpret_cast<const void*>(&nq::nq_vec_kernel<T, 8, false, true>);
  return reinterpret_cast<const void*>(&nq::nq_vec_kernel<T, 8, RES, false>);
}

// The row kernels' explicit launch variants (NormQuantConfig::variant >= 1), bf16, K = 256 NV:
//   1, 6:   nq_row_kernel (registers) -- 6: the round-1 default (plain: one step ahead in
//           registers, R = 2 rows per step at NV 2; fused add: MINB 3 at NV 2 / 6), 1: NV 2 one
//           row per step with 64 registers (fused add likewise), NV 6 the L2::256B hint (fused
//           add: MINB 2); NV 2 and 6 only;
//   4:      nq_bulk_kernel with S = 3 row slots per warp in shared memory (MINB 3), NV 6 only;
//   11, 12: nq_slim_kernel (row_compute's values in fewer instructions), NV 2 and 6, plain and
//           fused add (below); 32-bit indexing, else variant 6 runs;
//   2, 3, 5 (round 1 / 2) and 7 .. 10 (round 3: packed rows, 2 rows per step, other occupancies;
//   all slower than 6 on q_c plain): removed, they fall back like any missing variant.
// 6 exists at every NV; nullptr: none.
// Registers (ptxas, sm_90; no spills): see the compile test's -Xptxas -v.
struct RowPick {
  const void* kernel = nullptr;
  int rows_per_step = 1;  // R (the grid is sized in warps x R rows)
  int stages = 0;         // nq_bulk_kernel's S; 0: nq_row_kernel
  int max_warps = 8;      // the kernel's launch bounds / 32 (and its warps per block by default)
  bool idx32 = false;     // 32-bit row indices and byte strides (nq_slim_kernel)
};

template <typename T, int NV, bool RES>
RowPick row_kernel_nv(int variant) {
  using nq::nq_bulk_kernel;
  using nq::nq_row_kernel;
#define QL_NQ_ROW(R, PF, MINB, HINT) \
  RowPick { reinterpret_cast<const void*>(&nq_row_kernel<T, NV, R, RES, PF, MINB, HINT>), R, 0, 8 }
#define QL_NQ_BULK(S) \
  RowPick { reinterpret_cast<const void*>(&nq_bulk_kernel<T, NV, RES, S, 3>), 1, S, 8 }
#define QL_NQ_SLIM(PF, MINB) \
  RowPick { reinterpret_cast<const void*>(&nq::nq_slim_kernel<T, NV, RES, PF, MINB>), 1, 0, 8, true }
  constexpr bool kBf16 = std::is_same<T, __nv_bfloat16>::value;
  constexpr bool kSlice = kBf16 && (NV == 2 || NV == 6);
  if constexpr (kSlice) {
    // nq_slim_kernel (row_compute bit for bit, ~560 instead of ~740 SASS instructions per
    // 1536-wide row per lane): 11 one row ahead at 128 registers, 16 warps per SM (fused add: no
    // prefetch, 128 registers), 12 no prefetch at 80 registers, 24 warps per SM
    if constexpr (RES) {
      if (variant == 11) return QL_NQ_SLIM(false, 2);
    } else {
      if (variant == 11) return QL_NQ_SLIM(true, 2);
    }
    if (variant == 12) return QL_NQ_SLIM(false, 3);
  }
  // round 2 (H200): S = 3 the best bulk form, still below the register form; kept as an anchor
  // at K 1536 only (S = 2 / 4 and K 512 dropped: compile time)
  if constexpr (kBf16 && NV == 6) {
    if (variant == 4) return QL_NQ_BULK(3);
  }
  if constexpr (!RES) {
    // plain: the next step's rows load while this one computes
    if constexpr (NV == 2) {
      // 1 KB rows: two per step, so that the per-row chains (sum, rstd) overlap
      if (variant == 6) return QL_NQ_ROW(2, true, 2, 0);
      if constexpr (kSlice) {
        if (variant == 1) return QL_NQ_ROW(1, true, 4, 0);  // 64 registers: 32 warps per SM
      }
    } else {
      if (variant == 6) return QL_NQ_ROW(1, true, 2, 0);
      if constexpr (kSlice) {
        if (variant == 1) return QL_NQ_ROW(1, true, 2, 1);
      }
    }
  } else {
    // fused add: x and residual of one row are already 2 x NV vectors per lane in flight; two
    // rows' worth (prefetch) would not fit the registers
    if constexpr (NV == 2) {
      if (variant == 6) return QL_NQ_ROW(2, false, 3, 0);
      if constexpr (kSlice) {
        if (variant == 1) return QL_NQ_ROW(1, false, 4, 0);
      }
    } else if constexpr (NV == 8) {
      if (variant == 6) return QL_NQ_ROW(1, false, 2, 0);  // MINB 3 spills
    } else {
      if (variant == 6) return QL_NQ_ROW(1, false, 3, 0);
      if constexpr (kSlice) {
        if (variant == 1) return QL_NQ_ROW(1, false, 2, 0);
      }
    }
  }
  return RowPick{};
#undef QL_NQ_ROW
#undef QL_NQ_BULK
#undef QL_NQ_SLIM
}

// The committed default per case (NormQuantConfig::variant == 0): variant, warps per block and
// grid cap (blocks_per_sm as in NormQuantConfig) by row length and fused add, from H200 runs on
// the MLA slices of [32768, 2112] bf16 (benchmarks/bench_normquant_variants.py; fraction of copy):
//   K 512 plain:      variant 1 0.761 (6: 0.746)            round 1
//   K 512 fused add:  variant 1 0.842 (6: 0.832)            round 1
//   K 1536 fused add: variant 6 uncapped 0.894 (capped 0.876) round 1
//   K 1536 plain, 32768 rows: variant 6, 2 blocks per SM 0.833 (round 2; the bulk form, variant
//                     5 with 4 warps, 0.763; variant 6 at 4 warps 0.753); target 0.85; round 3:
//                     0.839, its candidates 7 .. 10 0.72 - 0.81 (removed); round 4 measures
//                     nq_slim_kernel (variants 11, 12)
//   K 1536 plain, 4096 rows: variant 1 0.577 (6: 0.570, bulk 0.456)           round 2
// Other NV: variant 6.
struct RowDefault {
  int variant, warps, blocks_per_sm;
};

// Round 4 (benchmarks/results/normquant_variants.json at 65a09fb, H200, fraction of the copy
// ceiling; nq_slim_kernel = variant 11, ~558 vs ~744 SASS instructions per 1536-row per lane):
//   K 1536 plain, 32768 rows: 11 at 2 blocks/SM 0.868 (6: 0.839 in round 3)
//   K 1536 fused add, 32768 rows: 11 uncapped 0.915 (6 uncapped 0.896)
//   K 1536 plain, 4096 rows: 11 0.619 (1: 0.580)
//   K 512 plain, 32768 rows: 11 0.785 (1: 0.756); K 512 fused add: 1 0.842 (11: 0.841)
// Rows below kRowSlimRows (decode sizes, not measured with 11) keep the round-3 defaults.
constexpr int64_t kRowFewRows = 16384;
constexpr int64_t kRowSlimRows = 4096;
constexpr int kQcPlainVariant = 11;

RowDefault row_default(int nv, bool res, int64_t rows) {
  if (nv == 2) return (res || rows < kRowSlimRows) ? RowDefault{1, 0, 0} : RowDefault{11, 0, 0};
  if (nv == 6) {
    if (res) return rows < kRowSlimRows ? RowDefault{6, 0, -1} : RowDefault{11, 0, -1};
    if (rows < kRowSlimRows) return RowDefault{1, 0, 0};
    return rows < kRowFewRows ? RowDefault{11, 0, 0} : RowDefault{kQcPlainVariant, 0, 2};
  }
  return RowDefault{6, 0, 0};
}

template <typename T, bool RES>
RowPick row_kernel(int nv, int variant) {
  switch (nv) {
    case 2:
      return row_kernel_nv<T, 2, RES>(variant);
    case 4:
      return row_kernel_nv<T, 4, RES>(variant);
    case 6:
      return row_kernel_nv<T, 6, RES>(variant);
    case 8:
      return row_kernel_nv<T, 8, RES>(variant);
  }
  return RowPick{};
}

// nq_bulk_kernel's shared memory above 48 KB needs the opt-in, set once per kernel.
bool allow_smem(const void* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return true;
  static std::mutex mu;
  static const void* done[32];
  static int used = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < used; ++i)
    if (done[i] == kernel) return true;
  // the most any block of it needs (8 warps, 4 slots of 2 x 1536 x 2 bytes: 198 KB) within the
  // device's 227 KB, less the kernel's static shared memory (the driver refuses a sum above 227 KB:
  // session 30 run 4, a kernel with 64 static bytes)
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, kernel) != cudaSuccess ||
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           227 * 1024 - static_cast<int>(fa.sharedSizeBytes)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (used < 32) done[used++] = kernel;
  return true;
}

template <typename T>
cudaError_t launch_typed(const NormQuantArgs& a, const Params& p, cudaStream_t stream, const NormQuantConfig& cfg,
                         int* kernel_used) {
  constexpr int64_t es = sizeof(T);
  constexpr int64_t VEC = nq::Elt<T>::VEC;
  const bool res = a.residual != nullptr;
  const int64_t nvec = a.hidden / VEC;
  const int64_t need = (nvec + 31) / 32;  // vectors per lane
  const int64_t lpg = a.group_size / VEC;
  // the vector layout (quant_vec's groups of lanes, 16-byte rows), which the warp kernels and
  // nq_cta_kernel share; vec: the register kernel or the two-pass one (the weight fits shared memory)
  const bool vec_layout = a.hidden % VEC == 0 && a.group_size % VEC == 0 && is_pow2(lpg) && lpg <= 32 &&
                          aligned(a.x, a.x_stride, a.rows, es, 16) &&
                          (!res || aligned(a.residual, a.residual_stride, a.rows, es, 16)) &&
                          aligned(a.q, a.q_stride, a.rows, 1, VEC);
  const bool vec = cfg.path >= 0 && vec_layout && a.hidden * 4 <= 48 * 1024;
  const int dev = current_device();
  const int sms = sm_count(dev);
  if constexpr (es == 2) {
    // one block per row (nq_cta_kernel) where the warp-per-row vector kernels would run the two-pass
    // form or the generic one (rows of more than 32 x 16 vectors), or when asked for (path 3); the
    // vector layout's conditions (no weight stage: no bound on K but NVT's) and a 16-byte aligned weight
    const int64_t nvt = (nvec + nq::kCtaThreads - 1) / nq::kCtaThreads;
    const bool cta_ok = vec_layout && nvt <= 8 && aligned(a.weight, 0, 1, 1, 16);
    if (cta_ok && (cfg.path == 3 || ((cfg.path == 0 || cfg.path == 2) && need > 16))) {
      const void* kernel = nvt <= 4 ? (res ? reinterpret_cast<const void*>(&nq::nq_cta_kernel<T, 4, true>)
                                           : reinterpret_cast<const void*>(&nq::nq_cta_kernel<T, 4, false>))
                                    : (res ? reinterpret_cast<const void*>(&nq::nq_cta_kernel<T, 8, true>)
                                           : reinterpret_cast<const void*>(&nq::nq_cta_kernel<T, 8, false>));
      const int per_sm = cfg.blocks_per_sm > 0 ? cfg.blocks_per_sm : blocks_per_sm(kernel, dev, nq::kCtaThreads, 0);
      int64_t grid = static_cast<int64_t>(sms) * per_sm;
      if (cfg.blocks_per_sm < 0 || grid > a.rows) grid = a.rows;
      if (grid > INT32_MAX) grid = INT32_MAX;
      if (kernel_used) *kernel_used = 5;
      void* kargs[] = {const_cast<Params*>(&p)};
      return cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(grid)), dim3(nq::kCtaThreads), kargs, 0, stream);
    }
  }
  const int nv = es == 2 && need <= 8 ? 8 : es == 2 && need <= 16 ? 16 : 0;  // 0: two-pass kernel
  const bool prefetch = nv == 8 && !res && cfg.prefetch >= 0;
  // the row kernel: bf16 rows of 256 NV elements, NV in {2, 4, 6, 8}, group 128, 8-byte aligned
  // code rows, and a scale floor whose group scales and their reciprocals stay normal
  // (div_rcp_normal: scale_eps >= 448 * 2^-126)
  RowPick row;
  NormQuantConfig c = cfg;
  if (es == 2 && vec && (cfg.path == 0 || cfg.path == 2) && a.group_size == 128 && a.hidden % 256 == 0 &&
      a.scale_eps >= 448.f * 1.1754944e-38f && a.scale_eps <= 1e30f && aligned(a.q, a.q_stride, a.rows, 1, 8)) {
    const int rnv = static_cast<int>(a.hidden / 256);
    // bf16 only (the MLA activations; fp16 rows take the vector kernels): each instantiation costs
    // ~0.4 s of this translation unit's compile time
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
      if (device_has_fp8_cvt(dev)) {
        if (c.variant == 0) {
          // the per-case default; explicit launch shapes of the caller win
          const RowDefault d = row_default(rnv, res, a.rows);
          c.variant = d.variant;
          if (c.warps_per_block <= 0) c.warps_per_block = d.warps;
          if (c.blocks_per_sm == 0) c.blocks_per_sm = d.blocks_per_sm;
        }
        row = res ? row_kernel<T, true>(rnv, c.variant) : row_kernel<T, false>(rnv, c.variant);
        // nq_slim_kernel indexes rows and strides in 32 bits: else the register form
        if (row.idx32 && !fits_idx32(a)) row = res ? row_kernel<T, true>(rnv, 6) : row_kernel<T, false>(rnv, 6);
        // the bulk copies need sm_90
        if (row.stages > 0 && !device_is_sm90(dev)) row = RowPick{};
      }
    }
  }
  if (!row.kernel) c = cfg;  // the vector kernels: the caller's launch shape as given
  const void* row_k = row.kernel;
  const int row_r = row.rows_per_step;
  int wpb = c.warps_per_block > 0 ? (c.warps_per_block > 16 ? 16 : c.warps_per_block)
            : row_k               ? row.max_warps
                                  : kDefaultWarpsPerBlock;
  // few rows: spread over the SMs, keeping >= 8 warps per block so that the block stages the
  // weight in one round trip (stage_weight)
  if (c.warps_per_block <= 0)
    while (wpb > 8 && (a.rows + wpb - 1) / wpb < sms) wpb >>= 1;
  if (row_k && wpb > row.max_warps) wpb = row.max_warps;  // its launch bounds (register budget)
  if (vec && nv == 16 && wpb > 8) wpb = 8;
  const int threads = 32 * wpb;

  const void* kernel = nullptr;
  size_t smem = 0;
  if (row_k) {
    kernel = row_k;
    smem = static_cast<size_t>(a.hidden) * sizeof(float);
    if (row.stages > 0) {
      // per warp: S slots of x (+ residual) rows and S mbarriers (nq_bulk_kernel)
      smem += static_cast<size_t>(wpb) * row.stages * ((res ? 4 : 2) * a.hidden + 8);
      if (!allow_smem(kernel, smem)) return cudaErrorInvalidConfiguration;
    }
  } else if (vec) {
    if (nv > 0) {
      if constexpr (es == 2) kernel = res ? vec_kernel<T, true>(nv, prefetch) : vec_kernel<T, false>(nv, prefetch);
    } else {
      kernel = res ? reinterpret_cast<const void*>(&nq::nq_stream_kernel<T, true>)
                   : reinterpret_cast<const void*>(&nq::nq_stream_kernel<T, false>);
    }
    smem = static_cast<size_t>(a.hidden) * sizeof(float);
  } else {
    kernel = res ? reinterpret_cast<const void*>(&nq::nq_generic_kernel<T, true>)
                 : reinterpret_cast<const void*>(&nq::nq_generic_kernel<T, false>);
  }
  int64_t grid = (a.rows + int64_t{wpb} * row_r - 1) / (int64_t{wpb} * row_r);
  if (c.blocks_per_sm >= 0 || row.stages > 0) {
    // the bulk kernel always caps the grid at what fits: its blocks' shared memory is per warp
    const int per_sm = c.blocks_per_sm > 0 ? c.blocks_per_sm : blocks_per_sm(kernel, dev, threads, smem);
    const int64_t cap = static_cast<int64_t>(sms) * per_sm;
    if (grid > cap) grid = cap;
  }
  if (grid > INT32_MAX) grid = INT32_MAX;  // the kernels grid-stride over the rest
  // what ran: 2 for the row kernel, 3 for its bulk-copy form, NV of the register kernel, 1 for the
  // two-pass vector kernel, 0 for the generic one
  if (kernel_used) *kernel_used = row_k ? (row.stages > 0 ? 3 : 2) : vec ? (nv > 0 ? nv : 1) : 0;
  void* kargs[] = {const_cast<Params*>(&p)};
  return cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(grid)), dim3(threads), kargs, smem, stream);
}

}  // namespace

cudaError_t rms_norm_quant_fp8_launch(const NormQuantArgs& a, cudaStream_t stream, NormQuantConfig cfg,
                                      int* kernel_used) {
  if (kernel_used) *kernel_used = -1;
  if (a.rows < 0 || a.hidden <= 0 || a.hidden > (int64_t{1} << 30) || a.group_size <= 0 ||
      a.group_size > (int64_t{1} << 30) || !a.x || !a.weight || !a.q || !a.scales)
    return a.rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  Params p;
  p.x = a.x;
  p.x_stride = a.x_stride;
  p.residual = a.residual;
  p.r_stride = a.residual_stride;
  p.weight = a.weight;
  p.weight_type = a.weight_dtype == NqDType::kBFloat16 ? nq::kWBf16
                  : a.weight_dtype == NqDType::kFloat16 ? nq::kWHalf
                                                        : nq::kWFloat;
  p.q = static_cast<uint8_t*>(a.q);
  p.q_stride = a.q_stride;
  p.scales = a.scales;
  p.s_row_stride = a.s_row_stride;
  p.s_col_stride = a.s_col_stride;
  p.rows = a.rows;
  p.hidden = static_cast<int>(a.hidden);
  p.group_size = static_cast<int>(a.group_size);
  p.eps = a.eps;
  p.scale_eps = a.scale_eps;
  switch (a.dtype) {
    case NqDType::kBFloat16:
      return launch_typed<__nv_bfloat16>(a, p, stream, cfg, kernel_used);
    case NqDType::kFloat16:
      return launch_typed<__half>(a, p, stream, cfg, kernel_used);
    case NqDType::kFloat32:
      return launch_typed<float>(a, p, stream, cfg, kernel_used);
  }
  return cudaErrorInvalidValue;
}

}  // namespace qlinear
