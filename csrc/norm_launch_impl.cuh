// Host-side launch machinery of the RMSNorm kernels (norm.cuh), shared by the two launcher
// translation units: norm_launch.cu (plain norm and multi-slice) and norm_launch_fused.cu (fused
// residual add). Each includes this file and instantiates only its own half of the kernels, so the
// two compile in parallel and a first build stays short. Internal (anonymous namespace): not an
// API; the entry points are declared in norm_launch.h.
#pragma once

#include <utility>

#include "norm.cuh"
#include "norm_launch.h"
#include "device_attrs.h"

namespace qlinear {
namespace {

using norm::Rows;

int pow2_ceil_log2(int64_t v) {
  int l = 0;
  while ((int64_t{1} << l) < v) ++l;
  return l;
}

using devattr::cc_major;
using devattr::sm_count;

size_t elem_size(NormDType t) { return t == NormDType::kFloat32 ? 4 : 2; }

bool aligned16(const NormOperand& o, int64_t n_outer, int64_t n_inner, size_t es) {
  if (reinterpret_cast<uintptr_t>(o.ptr) % 16 != 0) return false;
  if (n_outer > 1 && (o.s0 * static_cast<int64_t>(es)) % 16 != 0) return false;
  if (n_inner > 1 && (o.s1 * static_cast<int64_t>(es)) % 16 != 0) return false;
  return true;
}

struct Plan {
  int nv;        // vector registers per thread (1, 2, 4 or 8); 0 = generic kernel
  int tpr_log2;  // threads per row = 1 << tpr_log2 (cluster: threads per CTA)
  int rows_per_block;
  int prefetch_weight;     // PREW of the vec kernel: 0 after the reduction, 1 before it, 2 before the PDL wait
  int persistent = 0;      // > 0: persistent kernel with this many blocks per SM (plain norm)
  int cache_hints = 0;     // CH of the vec / persistent kernel, 0 = none
  bool pdl = false;        // programmatic dependent launch
  int cluster_log2 = 0;    // > 0: cluster kernel with 1 << cluster_log2 CTAs per row
  int row_threads = 0;     // > 0: rms_norm_row_kernel, one row per block of this many threads
  int row_minb = 1;        // its __launch_bounds__ minimum blocks per SM (1 or 2)
  bool shfl_reduction = false;  // vec kernel with the two-level shuffle reduction (RED = 1)
  int loop_threads = 0;    // > 0: rms_norm_loop_kernel (two passes, L2 re-read), this many threads
  int loop_unroll = 2;     // its vectors per thread per step (2 or 4)
  int loop_var = 0;        // its VAR (fp16 / bf16): bit 0 plain stores, bit 1 L1-allocating loads
  int mbar_cluster = 0;    // > 0: rms_norm_cluster_mbar_kernel, this many CTAs per row
  int mbar_threads = 0;    // its threads per CTA (a multiple of 32)
  bool warp_push = false;  // its WARP_PUSH
};

// ---- Heuristics (tuned on an H200; `benchmarks/bench_rms_norm.py --focus tune` prints rules in
// this format). A rule applies to rows of at most max_row_bytes (H * element size):
//   vecs:          16-byte vectors per thread; threads per row = next_pow2(ceil(H*es/16 / vecs))
//   block_threads: threads per block (rows_per_block = block_threads / threads per row, at least 1)
struct Rule {
  int64_t max_row_bytes;
  int vecs;
  int block_threads;
};
// Many rows (more than one per SM). Short rows: sub-warp groups, several rows per block.
constexpr Rule kManyRowRules[] = {
    {1024, 4, 256},       // e.g. kv_c 512 bf16: 16 threads x 64 B per row, 16 rows per block
    {4096, 4, 256},       // e.g. q_c 1536 bf16: 64 threads x 48 B, 4 rows per block
    {INT64_MAX, 4, 256},  // e.g. 7168 bf16: 256 threads x 56 B, one row per block
};
// Few rows (<= one per SM, the latency regime): the row over many threads, few vectors each, the
// weight prefetched before the reduction, one row per block.
constexpr Rule kFewRowRules[] = {
    {INT64_MAX, 2, 32},
};
// Many rows: halve rows_per_block (down to 64-thread blocks) until the grid has this many blocks
// per SM, so that short problems (4096 rows) still spread over every SM.
constexpr int kMinBlocksPerSm = 2;

const Rule& pick_rule(bool few_rows, int64_t row_bytes) {
  if (few_rows) {
    for (const Rule& r : kFewRowRules)
      if (row_bytes <= r.max_row_bytes) return r;
    return kFewRowRules[sizeof(kFewRowRules) / sizeof(Rule) - 1];
  }
  for (const Rule& r : kManyRowRules)
    if (row_bytes <= r.max_row_bytes) return r;
  return kManyRowRules[sizeof(kManyRowRules) / sizeof(Rule) - 1];
}

int nv_register_budget(int64_t need) {
  for (int nv = 1; nv <= 8; nv <<= 1)
    if (nv >= need) return nv;
  return 0;
}

// Configuration overrides (NormConfig, 0 = automatic) win over the rules; an override the
// register kernel cannot honour (vectors x threads not covering the row, misalignment) falls back
// to the generic kernel rather than failing.
Plan make_plan(bool vec_ok, bool fused, int64_t n_rows, int64_t hidden, size_t es, const NormConfig& cfg) {
  Plan p{0, 0, 1, 0};
  const int sms = sm_count();
  // cache_hints bit 5 (32): the two-pass loop kernel, one row per block of threads_per_row threads
  // (a multiple of 32; 0 = 256), vecs_per_thread 4 = four vectors per thread per step (else two)
  if ((cfg.cache_hints & 32) && vec_ok && cfg.vecs_per_thread != -1 && hidden % static_cast<int64_t>(16 / es) == 0) {
    int lt = cfg.threads_per_row > 0 ? cfg.threads_per_row : 256;
    lt = lt < 32 ? 32 : (lt > 1024 ? 1024 : lt);
    p.loop_threads = (lt + 31) & ~31;
    p.loop_unroll = cfg.vecs_per_thread >= 4 ? 4 : 2;
    // bits 6-7 (64, 128): the fp16 / bf16 variants (plain stores, L1-allocating loads)
    if (es == 2) p.loop_var = (cfg.cache_hints >> 6) & 3;
    return p;
  }
  // one row per block over a non-power-of-two number of warps (16-bit types, 16-byte path):
  // threads_per_row a multiple of 32 that is not a power of two, 1 or 2 vectors per thread
  const int64_t vw16 = static_cast<int64_t>(16 / es);
  const int tpr_req = cfg.threads_per_row;
  if (vec_ok && es == 2 && cfg.vecs_per_thread != -1 && cfg.rows_per_block >= 0 && tpr_req > 32 &&
      tpr_req <= 1024 && tpr_req % 32 == 0 && (tpr_req & (tpr_req - 1)) != 0 && hidden % vw16 == 0) {
    const int64_t need = (hidden / vw16 + tpr_req - 1) / tpr_req;
    if (need <= 2) {
      p.nv = need <= 1 ? 1 : 2;
      p.row_threads = tpr_req;
      // cache_hints bit 4 (16): at most 32 registers (__launch_bounds__(1024, 2)); instantiated
      // with the weight loaded after the reduction only (an early weight would spill)
      p.row_minb = (cfg.cache_hints & 16) ? 2 : 1;
      if (p.row_minb == 1 && (cfg.prefetch_weight > 0 || (cfg.prefetch_weight == 0 && n_rows <= sms)))
        p.prefetch_weight = cfg.prefetch_weight == 2 && !fused ? 2 : 1;
      // load / store hints 4 (st.cs) and 5 (ld.cs + st.cs), weight after the reduction only
      const int rch = cfg.cache_hints & 7;
      if ((rch == 4 || rch == 5) && p.prefetch_weight == 0) p.cache_hints = rch;
      return p;
    }
  }
  const bool few_rows = n_rows <= sms;
  const Rule& rule = pick_rule(few_rows, hidden * static_cast<int64_t>(es));
  const int64_t vw = static_cast<int64_t>(16 / es);
  bool use_vec = vec_ok && cfg.vecs_per_thread != -1 && hidden % vw == 0;
  if (use_vec) {
    const int64_t nvec = hidden / vw;
    int tl;
    if (cfg.threads_per_row > 0) {
      tl = pow2_ceil_log2(cfg.threads_per_row);
    } else {
      const int64_t vecs = cfg.vecs_per_thread > 0 ? cfg.vecs_per_thread : (rule.vecs > 0 ? rule.vecs : 4);
      tl = pow2_ceil_log2((nvec + vecs - 1) / vecs);
    }
    if (tl > 10) tl = 10;  // rows longer than 1024 x vecs vectors: more vectors per thread
    const int64_t need = (nvec + (int64_t{1} << tl) - 1) >> tl;  // vectors a thread really loads
    const int nv = cfg.vecs_per_thread > 0 ? cfg.vecs_per_thread : nv_register_budget(need);
    if ((nv == 1 || nv == 2 || nv == 4 || nv == 8) && nv >= need) {
      p.nv = nv;
      p.tpr_log2 = tl;
      // the 8-vector kernel has no register room for a prefetched weight; loading it before the
      // PDL wait is instantiated for the plain norm only
      if (nv <= 4 && (cfg.prefetch_weight > 0 || (cfg.prefetch_weight == 0 && few_rows)))
        p.prefetch_weight = cfg.prefetch_weight == 2 && !fused ? 2 : 1;
      // persistent grid: plain norm, 2 or 4 vectors per thread (a 1-vector row gets the 2 budget)
      if (cfg.rows_per_block < 0 && !fused && nv <= 4) {
        p.persistent = -cfg.rows_per_block > 32 ? 32 : -cfg.rows_per_block;
        p.nv = nv < 2 ? 2 : nv;
        p.prefetch_weight = 0;
      }
    } else {
      use_vec = false;
    }
  }
  if (!use_vec) {
    p.nv = 0;
    // about 8 elements per thread, at least a warp, at most a full block
    int tl = pow2_ceil_log2((hidden + 7) / 8);
    tl = tl < 5 ? 5 : (tl > 10 ? 10 : tl);
    if (cfg.threads_per_row > 0) tl = pow2_ceil_log2(cfg.threads_per_row);
    p.tpr_log2 = tl > 10 ? 10 : tl;
  }
  const int tpr = 1 << p.tpr_log2;
  int rpb;
  if (cfg.rows_per_block > 0) {
    rpb = cfg.rows_per_block;
  } else {
    const int block = rule.block_threads > tpr ? rule.block_threads : tpr;
    rpb = block / tpr;
    // (a persistent grid keeps the rule's block: its block count does not follow the row count)
    if (!few_rows && p.persistent == 0)
      while (rpb > 1 && (rpb << p.tpr_log2) > 64 && (n_rows + rpb - 1) / rpb < int64_t{kMinBlocksPerSm} * sms)
        rpb >>= 1;
  }
  rpb = 1 << pow2_ceil_log2(rpb < 1 ? 1 : (rpb > 1024 ? 1024 : rpb));
  while (rpb > 1 && (rpb << p.tpr_log2) > 1024) rpb >>= 1;
  // whole warps only: the reductions shuffle with a full mask
  while ((rpb << p.tpr_log2) < 32) rpb <<= 1;
  p.rows_per_block = rpb;
  // fp16 / bf16 register kernel with 2 or 4 vectors and no weight prefetch: the instantiated set;
  // the persistent kernel: streaming stores (4) only
  // cache_hints bit 3 (8): the vec kernel's pre-round-2 shuffle reduction (16-bit types, 4
  // vectors per thread, no hints, weight not before the PDL wait); bits 0-2 the load / store hints
  if ((cfg.cache_hints & 8) && es == 2 && p.nv == 4 && p.persistent == 0 && p.prefetch_weight < 2) {
    p.shfl_reduction = true;
    return p;
  }
  const int ch = cfg.cache_hints & 7;
  if (p.persistent > 0) {
    if (ch == 4 && es == 2) p.cache_hints = ch;
  } else if ((ch == 1 || ch == 3 || ch == 4 || ch == 5 || ch == 7) && es == 2 && (p.nv == 2 || p.nv == 4) &&
             !p.prefetch_weight) {
    p.cache_hints = ch;
  }
  return p;
}

// The cluster plan: each CTA holds ceil(nvec / csize) vectors, NV per thread (the knob, else the
// smallest of 1, 2 with at most 1024 threads; NV = 4 would spill under the 1024-thread bound),
// threads per CTA a power of two >= 32.
bool make_cluster_plan(bool vec_ok, int64_t n_rows, int64_t hidden, size_t es, const NormConfig& cfg, Plan* p) {
  if (cfg.cluster != 2 && cfg.cluster != 4 && cfg.cluster != 8) return false;
  const int64_t vw = static_cast<int64_t>(16 / es);
  if (!vec_ok || hidden % vw != 0 || cc_major() < 9) return false;
  const int cl = pow2_ceil_log2(cfg.cluster);
  if (n_rows > (int64_t{INT32_MAX} >> cl)) return false;
  const int64_t per_cta = (hidden / vw + cfg.cluster - 1) >> cl;
  int nv = cfg.vecs_per_thread;
  int tl;
  if (cfg.threads_per_row > 0) {
    tl = pow2_ceil_log2(cfg.threads_per_row);
    if (tl < 5) tl = 5;
    if (tl > 10) tl = 10;
    const int64_t need = (per_cta + (int64_t{1} << tl) - 1) >> tl;
    if (nv <= 0) nv = need <= 1 ? 1 : 2;
    if (nv < need) return false;
  } else {
    if (nv <= 0) nv = per_cta <= 1024 ? 1 : 2;
    tl = pow2_ceil_log2((per_cta + nv - 1) / nv);
    if (tl < 5) tl = 5;
    if (tl > 10) return false;
  }
  if (nv != 1 && nv != 2) return false;
  if ((int64_t{nv} << tl) < per_cta) return false;
  *p = Plan{nv, tl, 1, 1};
  p->cluster_log2 = cl;
  return true;
}

// The mbarrier cluster plan (cache_hints bit 64 with cluster 2, 4, 8 or 16; fp16 / bf16, 16-byte
// path, sm_90): CTA threads = threads_per_row rounded up to a multiple of 32 (0 = just enough for
// the CTA's piece at vecs_per_thread vectors each), vecs_per_thread 1 or 2 (0 = 1 while a CTA's
// piece fits 1024 threads), prefetch_weight 2 = weight before the PDL wait (plain norm), bit 128 =
// warp-level pushes (when cluster x warps <= kClusterSlots).
bool make_cluster_mbar_plan(bool vec_ok, bool fused, int64_t n_rows, int64_t hidden, size_t es, const NormConfig& cfg,
                            Plan* p) {
  if (!(cfg.cache_hints & 64)) return false;
  const int cs = cfg.cluster;
  if (cs != 2 && cs != 4 && cs != 8 && cs != 16) return false;
  if (!vec_ok || es != 2 || hidden % 8 != 0 || cc_major() < 9) return false;
  if (n_rows > INT32_MAX / cs) return false;
  const int64_t per_cta = (hidden / 8 + cs - 1) / cs;
  int nv = cfg.vecs_per_thread;
  if (nv <= 0) nv = per_cta <= 1024 ? 1 : 2;
  if (nv != 1 && nv != 2) return false;
  int64_t threads = cfg.threads_per_row > 0 ? cfg.threads_per_row : (per_cta + nv - 1) / nv;
  threads = (threads + 31) & ~int64_t{31};
  if (threads < 32) threads = 32;
  if (threads > 1024 || threads * nv < per_cta) return false;
  *p = Plan{nv, 0, 1, cfg.prefetch_weight == 2 && !fused ? 2 : 1};
  p->mbar_cluster = cs;
  p->mbar_threads = static_cast<int>(threads);
  p->warp_push = (cfg.cache_hints & 128) && cs * (threads / 32) <= norm::kClusterSlots;
  return true;
}

template <typename T, bool FUSED, int CH>
cudaError_t launch_hinted(const Plan& p, dim3 grid, int threads, Rows dst, Rows src, Rows res, const T* w,
                          uint32_t nr, uint32_t ni, int h, float eps, cudaStream_t stream) {
  switch (p.nv) {
    case 2:
      return pdl::launch(norm::rms_norm_vec_kernel<T, 2, FUSED, 0, CH>, grid, threads, stream, p.pdl, 0,
                         dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
    default:
      return pdl::launch(norm::rms_norm_vec_kernel<T, 4, FUSED, 0, CH>, grid, threads, stream, p.pdl, 0,
                         dst, src, res, w, nr, ni, h, p.tpr_log2, eps);
  }
}

// The vec kernel with NV vectors per thread and the plan's weight timing (before the PDL wait:
// plain norm only, the plan never asks it for the fused add).
template <typename T, bool FUSED, int NV>
cudaError_t launch_vec(const Plan& p, dim3 grid, int threads, Rows dst, Rows src, Rows res, const T* w, uint32_t nr,
                       uint32_t ni, int h, float eps, cudaStream_t stream) {
  if constexpr (!FUSED) {
    if (p.prefetch_weight == 2)
      return pdl::launch(norm::rms_norm_vec_kernel<T, NV, false, 2>, grid, threads, stream, p.pdl, 0, dst, src,
                         res, w, nr, ni, h, p.tpr_log2, eps);
  }
  if (p.prefetch_weight)
    return pdl::launch(norm::rms_norm_vec_kernel<T, NV, FUSED, 1>, grid, threads, stream, p.pdl, 0, dst, src,
                       res, w, nr, ni, h, p.tpr_log2, eps);
  return pdl::launch(norm::rms_norm_vec_kernel<T, NV, FUSED, 0>, grid, threads, stream, p.pdl, 0, dst, src, res,
                     w, nr, ni, h, p.tpr_log2, eps);
}

// Blocks of `kernel` one SM holds at `threads` threads (cached: the occupancy query is a driver
// call on every launch otherwise).
template <typename K>
int resident_blocks(K kernel, int threads) {
  struct Entry {
    const void* k;
    int threads;
    int dev;
    int blocks;
  };
  static Entry cache[32] = {};
  int dev = 0;
  cudaGetDevice(&dev);
  const void* key = reinterpret_cast<const void*>(kernel);
  for (const Entry& e : cache)
    if (e.k == key && e.threads == threads && e.dev == dev) return e.blocks;
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0) != cudaSuccess || n < 1) n = 1;
  for (Entry& e : cache)
    if (e.k == nullptr) {
      e = Entry{key, threads, dev, n};
      break;
    }
  return n;
}

// Persistent grid: p.persistent blocks per SM, capped by what an SM holds (a second wave of
// persistent blocks would only serialize) and by the number of row groups.
template <typename T>
cudaError_t launch_persistent(const Plan& p, int64_t n_rows, int threads, Rows dst, Rows src, const T* w,
                              uint32_t nr, uint32_t ni, int h, float eps, cudaStream_t stream) {
  auto go = [&](auto kernel) {
    int per_sm = resident_blocks(kernel, threads);
    if (p.persistent < per_sm) per_sm = p.persistent;
    const int64_t groups = (n_rows + p.rows_per_block - 1) / p.rows_per_block;
    int64_t blocks = int64_t{per_sm} * sm_count();
    if (blocks > groups) blocks = groups;
    return pdl::launch(kernel, dim3(static_cast<unsigned>(blocks)), dim3(threads), stream, p.pdl, 0, dst, src, w,
                       nr, ni, h, p.tpr_log2, eps);
  };
  if constexpr (sizeof(T) == 2) {
    if (p.cache_hints == 4) {
      if (p.nv == 2) return go(norm::rms_norm_persistent_kernel<T, 2, 4>);
      return go(norm::rms_norm_persistent_kernel<T, 4, 4>);
    }
  }
  if (p.nv == 2) return go(norm::rms_norm_persistent_kernel<T, 2, 0>);
  return go(norm::rms_norm_persistent_kernel<T, 4, 0>);
}

// rms_norm_row_kernel: grid = one block per row, p.row_threads threads, NV = p.nv (1 or 2), the
// plan's weight timing (2 = before the PDL wait: plain norm only) and launch bound.
template <typename T, bool FUSED, int NV, int MINB>
cudaError_t launch_row_nv(const Plan& p, dim3 grid, Rows dst, Rows src, Rows res, const T* w, uint32_t ni, int h,
                          float eps, cudaStream_t stream) {
  const dim3 block(static_cast<unsigned>(p.row_threads));
  if constexpr (MINB == 2) {
    return pdl::launch(norm::rms_norm_row_kernel<T, NV, FUSED, 0, 2>, grid, block, stream, p.pdl, 0, dst, src, res,
                       w, ni, h, eps);
  } else {
    if constexpr (!FUSED) {
      if (p.prefetch_weight == 2)
        return pdl::launch(norm::rms_norm_row_kernel<T, NV, false, 2, 1>, grid, block, stream, p.pdl, 0, dst, src,
                           res, w, ni, h, eps);
    }
    if (p.prefetch_weight)
      return pdl::launch(norm::rms_norm_row_kernel<T, NV, FUSED, 1, 1>, grid, block, stream, p.pdl, 0, dst, src,
                         res, w, ni, h, eps);
    return pdl::launch(norm::rms_norm_row_kernel<T, NV, FUSED, 0, 1>, grid, block, stream, p.pdl, 0, dst, src, res,
                       w, ni, h, eps);
  }
}

// The row kernel with load / store hints CH (4 or 5; weight after the reduction).
template <typename T, bool FUSED, int MINB, int CH>
cudaError_t launch_row_ch(const Plan& p, dim3 grid, Rows dst, Rows src, Rows res, const T* w, uint32_t ni, int h,
                          float eps, cudaStream_t stream) {
  const dim3 block(static_cast<unsigned>(p.row_threads));
  if (p.nv == 1)
    return pdl::launch(norm::rms_norm_row_kernel<T, 1, FUSED, 0, MINB, CH>, grid, block, stream, p.pdl, 0, dst, src,
                       res, w, ni, h, eps);
  return pdl::launch(norm::rms_norm_row_kernel<T, 2, FUSED, 0, MINB, CH>, grid, block, stream, p.pdl, 0, dst, src,
                     res, w, ni, h, eps);
}

template <typename T, bool FUSED>
cudaError_t launch_row(const Plan& p, int64_t n_rows, Rows dst, Rows src, Rows res, const T* w, uint32_t ni, int h,
                       float eps, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(n_rows));
  if (p.cache_hints == 4 || p.cache_hints == 5) {
    if (p.row_minb == 2) {
      if (p.cache_hints == 4) return launch_row_ch<T, FUSED, 2, 4>(p, grid, dst, src, res, w, ni, h, eps, stream);
      return launch_row_ch<T, FUSED, 2, 5>(p, grid, dst, src, res, w, ni, h, eps, stream);
    }
    if (p.cache_hints == 4) return launch_row_ch<T, FUSED, 1, 4>(p, grid, dst, src, res, w, ni, h, eps, stream);
    return launch_row_ch<T, FUSED, 1, 5>(p, grid, dst, src, res, w, ni, h, eps, stream);
  }
  if (p.row_minb == 2) {
    if (p.nv == 1) return launch_row_nv<T, FUSED, 1, 2>(p, grid, dst, src, res, w, ni, h, eps, stream);
    return launch_row_nv<T, FUSED, 2, 2>(p, grid, dst, src, res, w, ni, h, eps, stream);
  }
  if (p.nv == 1) return launch_row_nv<T, FUSED, 1, 1>(p, grid, dst, src, res, w, ni, h, eps, stream);
  return launch_row_nv<T, FUSED, 2, 1>(p, grid, dst, src, res, w, ni, h, eps, stream);
}

// The loop kernel's fp16 / bf16 variants (p.loop_var 1..3) at 2 or 4 vectors per step.
template <typename T, bool FUSED, int VAR>
cudaError_t launch_loop_v(const Plan& p, dim3 grid, Rows dst, Rows src, Rows res, const T* w, uint32_t ni, int h,
                          float eps, cudaStream_t stream) {
  if (p.loop_unroll == 4)
    return pdl::launch(norm::rms_norm_loop_kernel<T, FUSED, 4, VAR>, grid, p.loop_threads, stream, p.pdl, 0, dst,
                       src, res, w, ni, h, eps);
  return pdl::launch(norm::rms_norm_loop_kernel<T, FUSED, 2, VAR>, grid, p.loop_threads, stream, p.pdl, 0, dst, src,
                     res, w, ni, h, eps);
}

template <typename T, bool FUSED>
cudaError_t launch_loop_var(const Plan& p, dim3 grid, Rows dst, Rows src, Rows res, const T* w, uint32_t ni, int h,
                            float eps, cudaStream_t stream) {
  if (p.loop_var == 1) return launch_loop_v<T, FUSED, 1>(p, grid, dst, src, res, w, ni, h, eps, stream);
  if (p.loop_var == 2) return launch_loop_v<T, FUSED, 2>(p, grid, dst, src, res, w, ni, h, eps, stream);
  return launch_loop_v<T, FUSED, 3>(p, grid, dst, src, res, w, ni, h, eps, stream);
}

// rms_norm_cluster_mbar_kernel: grid n_rows x cluster, cluster dims (cluster, 1, 1). A 16-CTA
// cluster is beyond the portable size 8: each kernel instantiation is opted in once (the static
// below is per instantiation; the attribute is per kernel function, and a GPU that cannot hold the
// cluster fails the launch with an error, never silently).
template <typename T, bool FUSED, int NV, int PREW, bool WP>
cudaError_t launch_cluster_mbar_k(const Plan& p, int64_t n_rows, Rows dst, Rows src, Rows res, const T* w,
                                  uint32_t ni, int h, float eps, cudaStream_t stream) {
  auto kernel = norm::rms_norm_cluster_mbar_kernel<T, NV, FUSED, PREW, WP>;
  if (p.mbar_cluster > 8) {
    static const cudaError_t allowed =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (allowed != cudaSuccess) return allowed;
  }
  const dim3 grid(static_cast<unsigned>(n_rows * p.mbar_cluster));
  return pdl::launch(kernel, grid, dim3(static_cast<unsigned>(p.mbar_threads)), stream, p.pdl, p.mbar_cluster, dst,
                     src, res, w, ni, h, p.mbar_cluster, eps);
}

template <typename T, bool FUSED, int NV>
cudaError_t launch_cluster_mbar_nv(const Plan& p, int64_t n_rows, Rows dst, Rows src, Rows res, const T* w,
                                   uint32_t ni, int h, float eps, cudaStream_t stream) {
  if constexpr (!FUSED) {
    if (p.prefetch_weight == 2) {
      if (p.warp_push) return launch_cluster_mbar_k<T, false, NV, 2, true>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
      return launch_cluster_mbar_k<T, false, NV, 2, false>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
    }
  }
  if (p.warp_push) return launch_cluster_mbar_k<T, FUSED, NV, 1, true>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
  return launch_cluster_mbar_k<T, FUSED, NV, 1, false>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
}

template <typename T, bool FUSED>
cudaError_t launch_cluster_mbar(const Plan& p, int64_t n_rows, Rows dst, Rows src, Rows res, const T* w, uint32_t ni,
                                int h, float eps, cudaStream_t stream) {
  if (p.nv == 1) return launch_cluster_mbar_nv<T, FUSED, 1>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
  return launch_cluster_mbar_nv<T, FUSED, 2>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
}

template <typename T, bool FUSED>
cudaError_t launch_typed(const Plan& p, Rows dst, Rows src, Rows res, const void* weight,
                         int64_t n_rows, int64_t n_inner, int64_t hidden, float eps,
                         cudaStream_t stream) {
  const T* w = static_cast<const T*>(weight);
  const uint32_t nr = static_cast<uint32_t>(n_rows);
  const uint32_t ni = static_cast<uint32_t>(n_inner);
  const int h = static_cast<int>(hidden);
  if (p.cluster_log2 > 0) {
    const dim3 cgrid(static_cast<unsigned>(n_rows << p.cluster_log2));
    const int cthreads = 1 << p.tpr_log2;
    const int cs = 1 << p.cluster_log2;
#define QLINEAR_NORM_CLUSTER(NV)                                                                          \
  return pdl::launch(norm::rms_norm_cluster_kernel<T, NV, FUSED>, cgrid, cthreads, stream, p.pdl, cs, dst, \
                     src, res, w, ni, h, p.cluster_log2, eps)
  if (p.nv == 1) QLINEAR_NORM_CLUSTER(1);
    QLINEAR_NORM_CLUSTER(2);
#undef QLINEAR_NORM_CLUSTER
  }
  if (p.mbar_cluster > 0) {
    if constexpr (sizeof(T) == 2) return launch_cluster_mbar<T, FUSED>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
  }
  if (p.loop_threads > 0) {
    const dim3 grid(static_cast<unsigned>(n_rows));
    if constexpr (sizeof(T) == 2) {
      if (p.loop_var != 0) return launch_loop_var<T, FUSED>(p, grid, dst, src, res, w, ni, h, eps, stream);
    }
    if (p.loop_unroll == 4)
      return pdl::launch(norm::rms_norm_loop_kernel<T, FUSED, 4>, grid, p.loop_threads, stream, p.pdl, 0, dst, src,
                         res, w, ni, h, eps);
    return pdl::launch(norm::rms_norm_loop_kernel<T, FUSED, 2>, grid, p.loop_threads, stream, p.pdl, 0, dst, src,
                       res, w, ni, h, eps);
  }
  if constexpr (sizeof(T) == 2) {
    if (p.row_threads > 0) return launch_row<T, FUSED>(p, n_rows, dst, src, res, w, ni, h, eps, stream);
    if (p.shfl_reduction) {
      const int threads = p.rows_per_block << p.tpr_log2;
      const dim3 grid(static_cast<unsigned>((n_rows + p.rows_per_block - 1) / p.rows_per_block));
      if (p.prefetch_weight)
        return pdl::launch(norm::rms_norm_vec_kernel<T, 4, FUSED, 1, 0, 1>, grid, threads, stream, p.pdl, 0, dst,
                           src, res, w, nr, ni, h, p.tpr_log2, eps);
      return pdl::launch(norm::rms_norm_vec_kernel<T, 4, FUSED, 0, 0, 1>, grid, threads, stream, p.pdl, 0, dst,
                         src, res, w, nr, ni, h, p.tpr_log2, eps);
    }
  }
  const int threads = p.rows_per_block << p.tpr_log2;
  const int64_t blocks = (n_rows + p.rows_per_block - 1) / p.rows_per_block;
  const dim3 grid(static_cast<unsigned>(blocks));
  if (p.persistent > 0 && threads <= 512) {  // the persistent kernel's launch bound
    if constexpr (!FUSED) return launch_persistent<T>(p, n_rows, threads, dst, src, w, nr, ni, h, eps, stream);
  }
  if constexpr (sizeof(T) == 2) {
    switch (p.cache_hints) {
      case 1: return launch_hinted<T, FUSED, 1>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
      case 3: return launch_hinted<T, FUSED, 3>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
      case 4: return launch_hinted<T, FUSED, 4>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
      case 5: return launch_hinted<T, FUSED, 5>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
      case 7: return launch_hinted<T, FUSED, 7>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
      default: break;
    }
  }
  switch (p.nv) {
    case 1: return launch_vec<T, FUSED, 1>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
    case 2: return launch_vec<T, FUSED, 2>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
    case 4: return launch_vec<T, FUSED, 4>(p, grid, threads, dst, src, res, w, nr, ni, h, eps, stream);
    case 8:
      return pdl::launch(norm::rms_norm_vec_kernel<T, 8, FUSED, 0>, grid, threads, stream, p.pdl, 0, dst, src,
                         res, w, nr, ni, h, p.tpr_log2, eps);
    default:
      return pdl::launch(norm::rms_norm_generic_kernel<T, FUSED>, grid, threads, stream, p.pdl, 0, dst, src,
                         res, w, nr, ni, h, p.tpr_log2, eps);
  }
}

template <bool FUSED>
cudaError_t launch(NormOperand dst, NormOperand src, NormOperand res, const void* weight,
                   int64_t n_rows, int64_t n_inner, int64_t hidden, float eps, NormDType dtype,
                   cudaStream_t stream, const NormConfig& cfg) {
  if (n_rows < 0 || hidden < 0 || n_inner < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || hidden == 0) return cudaSuccess;
  // 32-bit row indices and element counts inside the kernels
  if (n_rows > INT32_MAX || hidden > INT32_MAX || n_inner <= 0 || n_inner > n_rows ||
      n_rows % n_inner != 0)
    return cudaErrorInvalidValue;
  if (dst.ptr == nullptr || src.ptr == nullptr || weight == nullptr || (FUSED && res.ptr == nullptr))
    return cudaErrorInvalidValue;
  const size_t es = elem_size(dtype);
  const int64_t n_outer = n_rows / n_inner;
  const bool vec_ok = aligned16(dst, n_outer, n_inner, es) && aligned16(src, n_outer, n_inner, es) &&
                      (!FUSED || aligned16(res, n_outer, n_inner, es)) &&
                      reinterpret_cast<uintptr_t>(weight) % 16 == 0;
  Plan p;
  if (!make_cluster_mbar_plan(vec_ok, FUSED, n_rows, hidden, es, cfg, &p) &&
      !make_cluster_plan(vec_ok, n_rows, hidden, es, cfg, &p))
    p = make_plan(vec_ok, FUSED, n_rows, hidden, es, cfg);
  p.pdl = cfg.pdl > 0 && cc_major() >= 9;
  const Rows d{dst.ptr, dst.s0, dst.s1}, s{src.ptr, src.s0, src.s1}, r{res.ptr, res.s0, res.s1};
  switch (dtype) {
    case NormDType::kFloat16:
      return launch_typed<__half, FUSED>(p, d, s, r, weight, n_rows, n_inner, hidden, eps, stream);
    case NormDType::kBFloat16:
      return launch_typed<__nv_bfloat16, FUSED>(p, d, s, r, weight, n_rows, n_inner, hidden, eps, stream);
    case NormDType::kFloat32:
      return launch_typed<float, FUSED>(p, d, s, r, weight, n_rows, n_inner, hidden, eps, stream);
  }
  return cudaErrorInvalidValue;
}

#ifdef QLINEAR_NORM_LAUNCH_SLICES  // only norm_launch.cu instantiates the multi-slice kernels
// ---- multi-slice launch

template <typename T>
cudaError_t launch_slices(int nv, dim3 grid, int threads, bool pdl, Rows src, const norm::SliceSet& set,
                          uint32_t nr, uint32_t ni, float eps, cudaStream_t stream) {
  if (nv <= 2)
    return pdl::launch(norm::rms_norm_slices_kernel<T, 2>, grid, threads, stream, pdl, 0, src, set, nr, ni, eps);
  return pdl::launch(norm::rms_norm_slices_kernel<T, 4>, grid, threads, stream, pdl, 0, src, set, nr, ni, eps);
}

cudaError_t slices_impl(NormOperand x, const NormSlice* slices, int n_slices, int64_t n_rows, int64_t n_inner,
                        float eps, NormDType dtype, cudaStream_t stream, const NormSlicesConfig& cfg) {
  if (slices == nullptr || n_slices < 1 || n_slices > kNormMaxSlices) return cudaErrorInvalidValue;
  if (n_rows < 0 || n_inner < 0) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  if (n_rows > INT32_MAX || n_inner <= 0 || n_inner > n_rows || n_rows % n_inner != 0 || x.ptr == nullptr)
    return cudaErrorInvalidValue;
  const size_t es = elem_size(dtype);
  const int64_t vw = static_cast<int64_t>(16 / es);
  const int64_t n_outer = n_rows / n_inner;
  const int sms = sm_count();
  const bool few_rows = n_rows <= sms;
  const int64_t vecs = cfg.vecs_per_thread > 0 ? cfg.vecs_per_thread : (few_rows ? 2 : 4);
  norm::SliceSet set{};
  set.n = n_slices;
  int nv = 1;
  int max_tl = 5;
  for (int s = 0; s < n_slices; ++s) {
    const NormSlice& sl = slices[s];
    if (sl.out.ptr == nullptr || sl.weight == nullptr || sl.col < 0 || sl.width <= 0 ||
        sl.col + sl.width > INT32_MAX)
      return cudaErrorInvalidValue;
    const NormOperand xs{static_cast<char*>(x.ptr) + sl.col * static_cast<int64_t>(es), x.s0, x.s1};
    bool vec = cfg.vecs_per_thread != -1 && sl.width % vw == 0 && aligned16(xs, n_outer, n_inner, es) &&
               aligned16(sl.out, n_outer, n_inner, es) && reinterpret_cast<uintptr_t>(sl.weight) % 16 == 0;
    int tl;
    if (vec) {
      const int64_t nvec = sl.width / vw;
      tl = pow2_ceil_log2((nvec + vecs - 1) / vecs);
      if (tl > 10) tl = 10;
      const int64_t need = (nvec + (int64_t{1} << tl) - 1) >> tl;
      if (need <= 4) {
        if (need > nv) nv = static_cast<int>(need);
      } else {
        vec = false;
      }
    }
    if (!vec) {
      // about 8 elements per thread, at least a warp, at most a full block (as the generic kernel)
      tl = pow2_ceil_log2((sl.width + 7) / 8);
      tl = tl < 5 ? 5 : (tl > 10 ? 10 : tl);
    }
    set.out[s] = Rows{sl.out.ptr, sl.out.s0, sl.out.s1};
    set.weight[s] = sl.weight;
    set.col[s] = static_cast<int>(sl.col);
    set.width[s] = static_cast<int>(sl.width);
    set.tpr_log2[s] = tl;
    set.vec[s] = vec ? 1 : 0;
    if (tl > max_tl) max_tl = tl;
  }
  // One block size for every slice: at least the widest slice's threads per row. Few rows: one
  // row of the widest slice per block (narrower slices pack several rows). Many rows: 256
  // threads, halved (not below 64) while the grid would leave SMs without two blocks.
  int bt_log2 = max_tl;
  if (cfg.block_threads > 0) {
    const int l = pow2_ceil_log2(cfg.block_threads);
    bt_log2 = l > 10 ? 10 : (l > max_tl ? l : max_tl);
  } else if (!few_rows) {
    bt_log2 = max_tl > 8 ? max_tl : 8;
  }
  auto total_blocks = [&](int btl) {
    int64_t total = 0;
    for (int s = 0; s < n_slices; ++s) {
      const int64_t rpb = int64_t{1} << (btl - set.tpr_log2[s]);
      total += (n_rows + rpb - 1) / rpb;
    }
    return total;
  };
  if (cfg.block_threads <= 0 && !few_rows)
    while (bt_log2 > 6 && bt_log2 > max_tl && total_blocks(bt_log2) < int64_t{2} * sms) --bt_log2;
  int64_t total = 0;
  for (int s = 0; s < n_slices; ++s) {
    const int64_t rpb = int64_t{1} << (bt_log2 - set.tpr_log2[s]);
    total += (n_rows + rpb - 1) / rpb;
    if (total > INT32_MAX) return cudaErrorInvalidValue;
    set.block_end[s] = static_cast<uint32_t>(total);
  }
  const dim3 grid(static_cast<unsigned>(total));
  const int threads = 1 << bt_log2;
  const bool pdl = cfg.pdl > 0 && cc_major() >= 9;
  const Rows src{x.ptr, x.s0, x.s1};
  const uint32_t nr = static_cast<uint32_t>(n_rows), ni = static_cast<uint32_t>(n_inner);
  switch (dtype) {
    case NormDType::kFloat16:
      return launch_slices<__half>(nv, grid, threads, pdl, src, set, nr, ni, eps, stream);
    case NormDType::kBFloat16:
      return launch_slices<__nv_bfloat16>(nv, grid, threads, pdl, src, set, nr, ni, eps, stream);
    case NormDType::kFloat32:
      return launch_slices<float>(nv, grid, threads, pdl, src, set, nr, ni, eps, stream);
  }
  return cudaErrorInvalidValue;
}

#endif  // QLINEAR_NORM_LAUNCH_SLICES

}  // namespace
}  // namespace qlinear
