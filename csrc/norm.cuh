// RMSNorm device code: y = x / sqrt(mean(x^2) + eps) * w, accumulated in fp32.
//
// Device code only (no torch headers): kernels take raw pointers and row strides so that strided
// views (e.g. the q / kv slices of a fused projection output with row stride 2112) are read in
// place. Rows are addressed as a [n_outer, n_inner, H] view: row r starts at
//   ptr + (r / n_inner) * s0 + (r % n_inner) * s1      (strides in elements, the last stride is 1)
// which covers 2-D views (n_inner = n_rows) and 3-D views whose leading dims do not collapse.
//
// Kernels:
//  * rms_norm_vec_kernel: 16-byte accesses, the whole row kept in registers (load once, reduce,
//    write), several rows per block when rows are short, optionally the weight prefetched. Needs 16-byte aligned pointers and row
//    strides and H a multiple of the vector width (8 for 16-bit types, 4 for fp32).
//  * rms_norm_row_kernel: one row per block over any whole number of warps (e.g. 448 or 896
//    threads for 7168 bf16: every thread exactly 2 or 1 vectors), row addresses computed before
//    the PDL wait.
//  * rms_norm_persistent_kernel: the plain norm's 16-byte path as a persistent grid (a few blocks
//    per SM looping over row groups, the next group's rows loaded while this one is reduced and
//    stored).
//  * rms_norm_generic_kernel: element accesses, any H / alignment, reads the row twice (the second
//    read mostly hits L1/L2). The fallback for odd sizes and for rows too long for registers.
//
//  * rms_norm_cluster_kernel (sm_90): one row split over a thread-block cluster of 2..8 CTAs; each
//    CTA reduces its piece, pushes the partial sum into every CTA's shared memory (distributed
//    shared memory), and after one cluster barrier normalizes its piece. For few rows (the latency
//    regime) this spreads 16 rows over ~128 SMs so each SM moves little.
//
// Every kernel starts with griddepcontrol.wait (a no-op unless launched with programmatic
// dependent launch, PDL), before any global read or write, and then allows the next grid to
// launch. With PDL the next kernel's launch and block scheduling overlap this kernel's tail, while
// its own wait still orders every memory access after this grid completes.
//
//  * rms_norm_slices_kernel: several column slices of the same rows in one launch (DeepSeek MLA's
//    q_c = qkv[:, :1536] and kv_c = qkv[:, 1536:2048]), each with its own weight and output. The
//    1-D grid is partitioned into per-slice block ranges; each block takes one slice's rows, with
//    that slice's threads per row and its own choice of the 16-byte or the element-wise path.
//
// Fused add (FUSED=true): residual <- x + residual (rounded to T), x <- rmsnorm(residual) * w.
// The norm is taken of the *rounded* residual, i.e. of exactly the values stored, so that the
// result equals rms_norm(residual_after) as the reference computes it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "bulk_copy.cuh"
#include "pdl.cuh"

namespace qlinear {
namespace norm {

// One operand: base pointer and the two leading strides (elements).
struct Rows {
  void* ptr;
  int64_t s0;
  int64_t s1;
};

template <typename T>
struct Conv;

template <>
struct Conv<float> {
  static __device__ __forceinline__ float to_f(float v) { return v; }
  static __device__ __forceinline__ float from_f(float v) { return v; }
};

template <>
struct Conv<__half> {
  static __device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
};

template <>
struct Conv<__nv_bfloat16> {
  static __device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
};

// 16 bytes viewed either as one 128-bit word (for the load / store instruction) or as elements.
template <typename T>
union Pack {
  static constexpr int N = 16 / sizeof(T);
  uint4 raw;
  T e[N];
};

// One 16-byte load with an L1 qualifier and an L2 eviction-priority policy (createpolicy +
// cache_hint); L1Q and L2P are string literals, e.g. "no_allocate" and "evict_last".
#define QLINEAR_LD_V4_POLICY(v, p, L1Q, L2P)                                                   \
  asm volatile("{\n\t.reg .b64 pol;\n\t"                                                       \
               "createpolicy.fractional.L2::" L2P ".b64 pol, 1.0;\n\t"                          \
               "ld.global.L1::" L1Q ".L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n\t}"   \
               : "=r"((v).x), "=r"((v).y), "=r"((v).z), "=r"((v).w)                             \
               : "l"(p)                                                                       \
               : "memory")

// 16-byte row load that bypasses L1 and tags the line in L2 with an eviction priority
// (EL 1: evict-last, kept for a second read; 0: evict-first, its last use).
template <int EL>
__device__ __forceinline__ uint4 ld_l2_prio(const void* p) {
  uint4 v;
  if constexpr (EL == 1) {
    QLINEAR_LD_V4_POLICY(v, p, "no_allocate", "evict_last");
  } else {
    QLINEAR_LD_V4_POLICY(v, p, "no_allocate", "evict_first");
  }
  return v;
}

// As ld_l2_prio, but the line may allocate in L1 with the matching L1 priority.
template <int EL>
__device__ __forceinline__ uint4 ld_l1_l2_prio(const void* p) {
  uint4 v;
  if constexpr (EL == 1) {
    QLINEAR_LD_V4_POLICY(v, p, "evict_last", "evict_last");
  } else {
    QLINEAR_LD_V4_POLICY(v, p, "evict_first", "evict_first");
  }
  return v;
}

// Cache hints for streamed rows (each byte is touched once). CH = load hint + 4 * store hint.
//   load 0: plain ld.global; 1: ld.global.cs (evict-first in L1 and L2); 2: L1::no_allocate;
//        3: L1::evict_first with an L2 evict-first policy.
//   store 0: plain st.global; 1: st.global.cs (streaming, evict-first).
// No .nc (read-only path) loads: x may be written by the same kernel (in place, fused add).
template <int CH>
__device__ __forceinline__ uint4 ld_row(const void* p) {
  constexpr int LH = CH & 3;
  uint4 v;
  if constexpr (LH == 1) {
    v = __ldcs(static_cast<const uint4*>(p));
  } else if constexpr (LH == 2) {
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  } else if constexpr (LH == 3) {
    v = ld_l1_l2_prio<0>(p);
  } else {
    v = *static_cast<const uint4*>(p);
  }
  return v;
}

template <int CH>
__device__ __forceinline__ void st_row(void* p, uint4 v) {
  if constexpr (((CH >> 2) & 1) == 1) {
    __stcs(static_cast<uint4*>(p), v);
  } else {
    *static_cast<uint4*>(p) = v;
  }
}

template <typename T>
__device__ __forceinline__ T* row_ptr(const Rows& r, uint32_t row, uint32_t n_inner) {
  // 2-D views (n_inner == n_rows, the common case) skip the integer division, which sits on the
  // latency path of every row.
  const uint32_t o = row < n_inner ? 0u : row / n_inner;
  const uint32_t i = row - o * n_inner;
  return static_cast<T*>(r.ptr) + static_cast<int64_t>(o) * r.s0 + static_cast<int64_t>(i) * r.s1;
}

// Sum over a group of 2^tpr_log2 consecutive threads (a row's threads). Every thread of the block
// must call it (shuffles use the full mask, and groups wider than a warp meet in shared memory).
// `part`: 32 floats of shared memory, free for writing when the block calls in
// (kernels that reduce more than once per block alternate two buffers, see the persistent kernel).
// Wider groups: after the barrier every thread reads its row's warp partials itself (broadcast
// shared loads, two add chains) instead of another 5-level shuffle chain: fewer dependent steps
// on the latency path. Every thread of a row sums in the same order, so the row's scale is
// bitwise the same in all of them.
__device__ __forceinline__ float group_sum_in(float v, int tpr_log2, float* part) {
  const int in_warp = tpr_log2 < 5 ? tpr_log2 : 5;
  for (int off = (1 << in_warp) >> 1; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (tpr_log2 > 5) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    const int warps_per_row = 1 << (tpr_log2 - 5);
    const int first = warp & ~(warps_per_row - 1);
    float t0 = 0.f, t1 = 0.f;
    for (int i = 0; i < warps_per_row; i += 2) {
      t0 += part[first + i];
      t1 += part[first + i + 1];
    }
    v = t0 + t1;
  }
  return v;
}

__device__ __forceinline__ float group_sum(float v, int tpr_log2) {
  __shared__ __align__(16) float part[32];
  return group_sum_in(v, tpr_log2, part);
}

// Sum over the whole block when one block is one row (blockDim.x any multiple of 32, e.g. 448 or
// 896 threads for a 7168-wide row): a warp shuffle, one barrier, then every thread adds the warp
// partials itself in the same order (two add chains, as group_sum_in), so the row's scale is
// bitwise the same in all threads. `part`: 32 floats of shared memory.
__device__ __forceinline__ float block_row_sum(float v, float* part) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int t = static_cast<int>(threadIdx.x);
  if ((t & 31) == 0) part[t >> 5] = v;
  __syncthreads();
  const int nw = static_cast<int>(blockDim.x) >> 5;
  float t0 = 0.f, t1 = 0.f;
  for (int i = 0; i + 1 < nw; i += 2) {
    t0 += part[i];
    t1 += part[i + 1];
  }
  if (nw & 1) t0 += part[nw - 1];
  return t0 + t1;
}

// The reduction before the one-barrier rewrite (kept selectable, RED = 1 of the vec kernel, to
// compare the two on the GPU): after the barrier the first lanes of every warp pick up their
// row's warp partials and a second 5-level shuffle chain sums them.
__device__ __forceinline__ float group_sum_shfl(float v, int tpr_log2) {
  __shared__ float part[32];
  const int in_warp = tpr_log2 < 5 ? tpr_log2 : 5;
  for (int off = (1 << in_warp) >> 1; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (tpr_log2 > 5) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    const int warps_per_row = 1 << (tpr_log2 - 5);
    const int first = warp & ~(warps_per_row - 1);
    v = lane < warps_per_row ? part[first + lane] : 0.f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  }
  return v;
}

// fp32 sum of squares of the packs a lane holds (pack k is vector k * tpr + lane of its row; packs
// past the row's nvec vectors are skipped).
template <typename T, int NV>
__device__ __forceinline__ float packs_sumsq(const Pack<T> (&v)[NV], int tpr, int lane, int nvec) {
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    if (k * tpr + lane < nvec) {
#pragma unroll
      for (int e = 0; e < Pack<T>::N; ++e) {
        const float f = Conv<T>::to_f(v[k].e[e]);
        ss += f * f;
      }
    }
  }
  return ss;
}

// blockDim.x = rows_per_block << tpr_log2. Thread `lane` of a row owns vectors lane, lane + tpr,
// lane + 2 tpr, ... (at most NV of them: NV is the register budget, ceil(H / 16 B / tpr) <= NV the
// vectors actually used), so each load instruction of a row group covers tpr * 16 contiguous
// bytes.
// PREW: when the weight is loaded. 0: after the row reduction (many rows per SM: it hits L1 and
// early registers would cost occupancy). 1: right after the row loads, before the reduction (the
// latency regime: its first touch is an L2 round trip that would otherwise sit between the sum and
// the store). 2: before griddepcontrol.wait, i.e. while the preceding kernel may still be running
// under PDL, so the weight is in registers when x arrives. Valid only because no kernel of this
// library writes a norm weight: the weight must not be written by the kernel launched just before
// this one on the stream (x, the residual and the output are only touched after the wait).
// CH: cache hints for the row loads / stores (see ld_row / st_row); the weight, reused by every
// row, always goes through the read-only cache.
// RED: 0 the one-barrier reduction (group_sum), 1 the two-level shuffle one (group_sum_shfl).
template <typename T, int NV, bool FUSED, int PREW, int CH = 0, int RED = 0>
__global__ void __launch_bounds__(1024)
    rms_norm_vec_kernel(Rows dst, Rows src, Rows res, const T* __restrict__ weight, uint32_t n_rows,
                        uint32_t n_inner, int hidden, int tpr_log2, float eps) {
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  const int tpr = 1 << tpr_log2;
  const int lane = threadIdx.x & (tpr - 1);
  const uint32_t row = blockIdx.x * (blockDim.x >> tpr_log2) + (threadIdx.x >> tpr_log2);
  const bool active = row < n_rows;
  const int nvec = hidden / VW;

  Pack<T> v[NV];
  Pack<T> wv[PREW ? NV : 1];
  float ss = 0.f;
  if (PREW == 2 && active) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int j = k * tpr + lane;
      if (j < nvec) wv[PREW ? k : 0].raw = __ldg(reinterpret_cast<const uint4*>(weight) + j);
    }
  }
  pdl::wait();
  pdl::launch_dependents();
  if (active) {
    T* s = row_ptr<T>(src, row, n_inner);
    T* r = FUSED ? row_ptr<T>(res, row, n_inner) : nullptr;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int j = k * tpr + lane;
      if (j < nvec) v[k].raw = ld_row<CH>(reinterpret_cast<const uint4*>(s) + j);
    }
    if (PREW == 1) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) wv[PREW ? k : 0].raw = __ldg(reinterpret_cast<const uint4*>(weight) + j);
      }
    }
    if (FUSED) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) {
          Pack<T> rv;
          rv.raw = ld_row<CH>(reinterpret_cast<const uint4*>(r) + j);
#pragma unroll
          for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) + C::to_f(rv.e[e]));
          st_row<CH>(reinterpret_cast<uint4*>(r) + j, v[k].raw);
        }
      }
    }
    ss += packs_sumsq(v, tpr, lane, nvec);
  }
  ss = RED == 1 ? group_sum_shfl(ss, tpr_log2) : group_sum(ss, tpr_log2);
  const float inv = rsqrtf(ss / static_cast<float>(hidden) + eps);
  if (active) {
    T* d = row_ptr<T>(dst, row, n_inner);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int j = k * tpr + lane;
      if (j < nvec) {
        Pack<T> w;
        if (PREW) {
          w = wv[PREW ? k : 0];
        } else {
          w.raw = __ldg(reinterpret_cast<const uint4*>(weight) + j);
        }
#pragma unroll
        for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) * inv * C::to_f(w.e[e]));
        st_row<CH>(reinterpret_cast<uint4*>(d) + j, v[k].raw);
      }
    }
  }
}

// One row per block with any whole number of warps per row (blockDim.x = threads per row, a
// multiple of 32 up to 1024, not necessarily a power of two). For 7168 bf16 (896 vectors) 448 or
// 896 threads give every thread exactly 2 or 1 vectors, where the power-of-two layouts leave half
// the lanes idle in the last load (256 x 4 covers 1024 slots). Thread t owns vectors t, t + tpr,
// ... (at most NV). The row's addresses are computed before griddepcontrol.wait, so the first
// load issues right after it; the warp partials meet in shared memory after one barrier and every
// thread sums them in the same order (the row's scale is bitwise the same in all threads).
// PREW as rms_norm_vec_kernel (2: weight before the PDL wait, plain norm only). MINB: minimum
// resident 1024-thread blocks per SM asked of the register allocator (__launch_bounds__(1024, MINB)):
// 1 = at most 64 registers, 2 = at most 32 (full occupancy for any block size).
// CH: cache hints of the row loads / stores (ld_row / st_row; instantiated 4 = st.cs and 5 = ld.cs +
// st.cs for fp16 / bf16 with the weight after the reduction), 0 = plain.
template <typename T, int NV, bool FUSED, int PREW, int MINB = 1, int CH = 0>
__global__ void __launch_bounds__(1024, MINB)
    rms_norm_row_kernel(Rows dst, Rows src, Rows res, const T* __restrict__ weight, uint32_t n_inner, int hidden,
                        float eps) {
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  __shared__ __align__(16) float part[32];
  const int tpr = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const uint32_t row = blockIdx.x;
  const int nvec = hidden / VW;
  const uint4* s = reinterpret_cast<const uint4*>(row_ptr<T>(src, row, n_inner));
  uint4* r = FUSED ? reinterpret_cast<uint4*>(row_ptr<T>(res, row, n_inner)) : nullptr;
  uint4* d = reinterpret_cast<uint4*>(row_ptr<T>(dst, row, n_inner));
  const uint4* wp = reinterpret_cast<const uint4*>(weight);

  Pack<T> v[NV];
  Pack<T> wv[PREW ? NV : 1];
  if (PREW == 2) {
#pragma unroll
    for (int k = 0; k < NV; ++k)
      if (k * tpr + t < nvec) wv[PREW ? k : 0].raw = __ldg(wp + k * tpr + t);
  }
  pdl::wait();
  pdl::launch_dependents();
#pragma unroll
  for (int k = 0; k < NV; ++k)
    if (k * tpr + t < nvec) v[k].raw = ld_row<CH>(s + k * tpr + t);
  if (PREW == 1) {
#pragma unroll
    for (int k = 0; k < NV; ++k)
      if (k * tpr + t < nvec) wv[PREW ? k : 0].raw = __ldg(wp + k * tpr + t);
  }
  if (FUSED) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int j = k * tpr + t;
      if (j < nvec) {
        Pack<T> rv;
        rv.raw = ld_row<CH>(r + j);
#pragma unroll
        for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) + C::to_f(rv.e[e]));
        st_row<CH>(r + j, v[k].raw);
      }
    }
  }
  float ss = packs_sumsq(v, tpr, t, nvec);
  const float inv = rsqrtf(block_row_sum(ss, part) / static_cast<float>(hidden) + eps);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int j = k * tpr + t;
    if (j < nvec) {
      Pack<T> w;
      if (PREW) {
        w = wv[PREW ? k : 0];
      } else {
        w.raw = __ldg(wp + j);
      }
#pragma unroll
      for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) * inv * C::to_f(w.e[e]));
      st_row<CH>(d + j, v[k].raw);
    }
  }
}

// The loop kernel's row load: L2 priority EL, L1 behaviour by VAR bit 1.
template <int EL, int VAR>
__device__ __forceinline__ uint4 ld_loop(const void* p) {
  if constexpr ((VAR & 2) != 0) return ld_l1_l2_prio<EL>(p);
  return ld_l2_prio<EL>(p);
}

// Two passes over one row per block (the structure inductor generates for the reference at
// 32768 x 7168, which reached the copy rate): pass 1 streams the row UNR vectors per thread at a
// time, tagged evict-last in L2, and accumulates x^2; after the block reduction pass 2 reads the
// row again (from L2, evict-first), scales it by the weight and stores with st.global.cs. Only UNR
// vectors are live per thread, so occupancy stays high and many rows are in flight; the second
// read costs L2 bandwidth, not DRAM. FUSED: pass 1 loads x and the residual (evict-first), stores
// residual <- x + residual, and pass 2 re-reads the stored residual. Every thread writes only the
// vectors it read itself, so in place (dst == src) is safe. blockDim.x: a multiple of 32.
// VAR (fp16 / bf16 variants, to let the GPU pick what is left between this kernel and inductor's):
// bit 0 = plain st.global for the output instead of st.global.cs (inductor's kernel stores
// without a hint); bit 1 = the row loads allocate in L1 with the same L2 priorities
// (ld_l1_l2_prio: L1::evict_last / L1::evict_first, what Triton emits for eviction_policy)
// instead of L1::no_allocate.
template <typename T, bool FUSED, int UNR, int VAR = 0>
__global__ void __launch_bounds__(1024)
    rms_norm_loop_kernel(Rows dst, Rows src, Rows res, const T* __restrict__ weight, uint32_t n_inner, int hidden,
                         float eps) {
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  __shared__ __align__(16) float part[32];
  const int tpr = static_cast<int>(blockDim.x);
  const int t = static_cast<int>(threadIdx.x);
  const uint32_t row = blockIdx.x;
  const int nvec = hidden / VW;
  const uint4* s = reinterpret_cast<const uint4*>(row_ptr<T>(src, row, n_inner));
  uint4* r = FUSED ? reinterpret_cast<uint4*>(row_ptr<T>(res, row, n_inner)) : nullptr;
  uint4* d = reinterpret_cast<uint4*>(row_ptr<T>(dst, row, n_inner));
  const uint4* wp = reinterpret_cast<const uint4*>(weight);
  pdl::wait();
  pdl::launch_dependents();
  float ss = 0.f;
  for (int base = t; base < nvec; base += UNR * tpr) {
    Pack<T> v[UNR];
#pragma unroll
    for (int k = 0; k < UNR; ++k) {
      const int j = base + k * tpr;
      if (j < nvec) v[k].raw = FUSED ? ld_loop<0, VAR>(s + j) : ld_loop<1, VAR>(s + j);
    }
    if (FUSED) {
      Pack<T> rv[UNR];
#pragma unroll
      for (int k = 0; k < UNR; ++k) {
        const int j = base + k * tpr;
        if (j < nvec) rv[k].raw = ld_loop<0, VAR>(r + j);
      }
#pragma unroll
      for (int k = 0; k < UNR; ++k) {
        const int j = base + k * tpr;
        if (j < nvec) {
#pragma unroll
          for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) + C::to_f(rv[k].e[e]));
          r[j] = v[k].raw;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < UNR; ++k) {
      if (base + k * tpr < nvec) {
#pragma unroll
        for (int e = 0; e < VW; ++e) {
          const float f = C::to_f(v[k].e[e]);
          ss += f * f;
        }
      }
    }
  }
  const float inv = rsqrtf(block_row_sum(ss, part) / static_cast<float>(hidden) + eps);
  const uint4* again = FUSED ? r : s;
  for (int base = t; base < nvec; base += UNR * tpr) {
    Pack<T> v[UNR], w[UNR];
#pragma unroll
    for (int k = 0; k < UNR; ++k) {
      const int j = base + k * tpr;
      if (j < nvec) {
        v[k].raw = ld_loop<0, VAR>(again + j);
        w[k].raw = __ldg(wp + j);
      }
    }
#pragma unroll
    for (int k = 0; k < UNR; ++k) {
      const int j = base + k * tpr;
      if (j < nvec) {
#pragma unroll
        for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) * inv * C::to_f(w[k].e[e]));
        if constexpr ((VAR & 1) != 0) {
          d[j] = v[k].raw;
        } else {
          __stcs(d + j, v[k].raw);
        }
      }
    }
  }
}

// Persistent plain norm (no fused add): a grid of about `blocks per SM x SMs` blocks, each
// looping over row groups g = blockIdx.x, blockIdx.x + gridDim.x, ... (rows_per_block =
// blockDim.x >> tpr_log2 rows per group, the vector layout of rms_norm_vec_kernel). The weight is
// loaded once per block and kept in registers; the next group's rows are loaded into a second
// register set before this group is reduced and stored, so every thread keeps loads in flight
// through its reduction barrier and stores instead of idling between short-lived blocks.
// In place (dst == src) is safe: a thread only writes the vectors it read, and the rows it
// prefetches belong to another group. The reduction alternates two shared buffers: a warp that
// runs ahead into the next group writes the other one (it cannot get two groups ahead, the
// barrier of the next group waits for the slow warp).
// At most 512 threads per block: two row sets and the weight in registers need more than the 64
// registers a 1024-thread bound allows.
template <typename T, int NV, int CH>
__global__ void __launch_bounds__(512)
    rms_norm_persistent_kernel(Rows dst, Rows src, const T* __restrict__ weight, uint32_t n_rows,
                               uint32_t n_inner, int hidden, int tpr_log2, float eps) {
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  __shared__ __align__(16) float part[2][32];
  const int tpr = 1 << tpr_log2;
  const int lane = threadIdx.x & (tpr - 1);
  const uint32_t rpb = blockDim.x >> tpr_log2;
  const uint32_t sub = threadIdx.x >> tpr_log2;
  const uint32_t n_groups = (n_rows + rpb - 1) / rpb;
  const int nvec = hidden / VW;

  pdl::wait();
  pdl::launch_dependents();
  Pack<T> cur[NV];
  uint32_t g = blockIdx.x;
  uint32_t row = g * rpb + sub;
  if (g < n_groups && row < n_rows) {
    const T* s = row_ptr<T>(src, row, n_inner);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int j = k * tpr + lane;
      if (j < nvec) cur[k].raw = ld_row<CH>(reinterpret_cast<const uint4*>(s) + j);
    }
  }
  int parity = 0;
  for (; g < n_groups; g += gridDim.x) {
    const uint32_t next_row = (g + gridDim.x) * rpb + sub;
    Pack<T> nxt[NV];
    if (g + gridDim.x < n_groups && next_row < n_rows) {
      const T* s = row_ptr<T>(src, next_row, n_inner);
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) nxt[k].raw = ld_row<CH>(reinterpret_cast<const uint4*>(s) + j);
      }
    }
    const bool active = row < n_rows;
    float ss = active ? packs_sumsq(cur, tpr, lane, nvec) : 0.f;
    ss = group_sum_in(ss, tpr_log2, part[parity]);
    parity ^= 1;
    const float inv = rsqrtf(ss / static_cast<float>(hidden) + eps);
    if (active) {
      T* d = row_ptr<T>(dst, row, n_inner);
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) {
          Pack<T> w, y;
          w.raw = __ldg(reinterpret_cast<const uint4*>(weight) + j);
#pragma unroll
          for (int e = 0; e < VW; ++e) y.e[e] = C::from_f(C::to_f(cur[k].e[e]) * inv * C::to_f(w.e[e]));
          st_row<CH>(reinterpret_cast<uint4*>(d) + j, y.raw);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) cur[k] = nxt[k];
    row = next_row;
  }
}

// One row per cluster of 2^csize_log2 CTAs (cluster dims (csize, 1, 1), grid n_rows * csize).
// CTA `rank` owns the row's vectors [rank * per_cta, (rank + 1) * per_cta), thread t of it the
// vectors t, t + blockDim.x, ... (at most NV). The weight is loaded before the reduction (the
// latency regime is what this kernel is for). Every CTA sums the cluster's partials in rank
// order, so all pieces of a row use bitwise the same scale.
template <typename T, int NV, bool FUSED>
__global__ void __launch_bounds__(1024)
    rms_norm_cluster_kernel(Rows dst, Rows src, Rows res, const T* __restrict__ weight,
                            uint32_t n_inner, int hidden, int csize_log2, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int csize = 1 << csize_log2;
  const int rank = static_cast<int>(cluster.block_rank());
  const uint32_t row = blockIdx.x >> csize_log2;
  const int nvec = hidden / VW;
  const int per_cta = (nvec + csize - 1) >> csize_log2;
  const int first = rank * per_cta;
  const int tid = threadIdx.x;
  __shared__ float warp_part[32];
  __shared__ float cluster_part[8];

  pdl::wait();
  pdl::launch_dependents();
  T* s = row_ptr<T>(src, row, n_inner);
  T* r = FUSED ? row_ptr<T>(res, row, n_inner) : nullptr;
  Pack<T> v[NV];
  Pack<T> wv[NV];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * static_cast<int>(blockDim.x) + tid;
    const int j = first + i;
    if (i < per_cta && j < nvec) v[k].raw = reinterpret_cast<const uint4*>(s)[j];
  }
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * static_cast<int>(blockDim.x) + tid;
    const int j = first + i;
    if (i < per_cta && j < nvec) wv[k].raw = __ldg(reinterpret_cast<const uint4*>(weight) + j);
  }
  // A CTA may write another CTA's shared memory only once that CTA has started: arrive now
  // (relaxed, no ordering needed), wait just before the remote stores, so the wait overlaps the
  // loads in flight instead of adding a barrier round trip up front.
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * static_cast<int>(blockDim.x) + tid;
    const int j = first + i;
    if (i < per_cta && j < nvec) {
      if (FUSED) {
        Pack<T> rv;
        rv.raw = reinterpret_cast<const uint4*>(r)[j];
#pragma unroll
        for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) + C::to_f(rv.e[e]));
        reinterpret_cast<uint4*>(r)[j] = v[k].raw;
      }
#pragma unroll
      for (int e = 0; e < VW; ++e) {
        const float f = C::to_f(v[k].e[e]);
        ss += f * f;
      }
    }
  }
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  if ((tid & 31) == 0) warp_part[tid >> 5] = ss;
  __syncthreads();
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  if (tid == 0) {
    float b = 0.f;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) b += warp_part[w];
    // push this CTA's partial into slot `rank` of every CTA of the cluster (DSMEM stores)
    for (int c = 0; c < csize; ++c) *cluster.map_shared_rank(&cluster_part[rank], c) = b;
  }
  // release / acquire across the cluster: the partials are visible after it, and no CTA's shared
  // memory is accessed remotely afterwards, so CTAs may exit as soon as they are done
  cluster.sync();
  float total = 0.f;
  for (int c = 0; c < csize; ++c) total += cluster_part[c];
  const float inv = rsqrtf(total / static_cast<float>(hidden) + eps);
  T* d = row_ptr<T>(dst, row, n_inner);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * static_cast<int>(blockDim.x) + tid;
    const int j = first + i;
    if (i < per_cta && j < nvec) {
#pragma unroll
      for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) * inv * C::to_f(wv[k].e[e]));
      reinterpret_cast<uint4*>(d)[j] = v[k].raw;
    }
  }
#endif
}

// ---- one row over a cluster, partials exchanged through mbarriers (the latency regime)
//
// rms_norm_cluster_mbar_kernel: as rms_norm_cluster_kernel one row per cluster of CSIZE CTAs
// (cluster dims (csize, 1, 1), grid n_rows * csize, csize 2..16), with everything that does not
// need the previous grid's data moved before griddepcontrol.wait (under PDL it overlaps the previous
// kernel's tail): the row and weight addresses, the local mbarrier's init and the cluster barrier
// that makes every CTA's mbarrier visible to the others, and with PREW 2 the weight piece itself
// (plain norm only, same contract as the vec kernel's PREW 2). After the wait the only cross-CTA
// step on the critical path is one remote store + remote mbarrier arrive per partial and a local
// mbarrier wait, instead of a cluster-wide barrier. CTA `rank` owns vectors [rank * per_cta,
// (rank + 1) * per_cta), thread t of it vectors t, t + blockDim.x, ... (at most NV; blockDim.x a
// multiple of 32, not necessarily a power of two).
// WARP_PUSH false: the CTA reduces its partial (one __syncthreads) and threads 0..csize-1 push it
// to slot `rank` of each CTA (csize arrivals per mbarrier). WARP_PUSH true: no block barrier; lane c
// of every warp pushes the warp's partial to slot rank * warps + warp of CTA c (csize * warps
// arrivals, at most kClusterSlots). Every CTA sums the slots in the same order, so all pieces of a
// row use bitwise the same scale.
// Exit safety: a CTA's shared memory is written remotely only by the pushes its own mbarrier
// counts, so once its wait completes nothing targets it any more and it may exit.
constexpr int kClusterSlots = 256;

using tma::smem_u32;

template <typename T, int NV, bool FUSED, int PREW, bool WARP_PUSH>
__global__ void __launch_bounds__(1024)
    rms_norm_cluster_mbar_kernel(Rows dst, Rows src, Rows res, const T* __restrict__ weight, uint32_t n_inner,
                                 int hidden, int csize, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  __shared__ __align__(8) uint64_t bar;
  __shared__ float slots[kClusterSlots];
  __shared__ float part[32];
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const uint32_t row = blockIdx.x / static_cast<uint32_t>(csize);
  const int nvec = hidden / VW;
  const int per_cta = (nvec + csize - 1) / csize;
  const int first = static_cast<int>(rank) * per_cta;
  const int tid = threadIdx.x;
  const int nthr = static_cast<int>(blockDim.x);
  const int warps = nthr >> 5;
  const int arrivals = WARP_PUSH ? csize * warps : csize;
  const uint4* s = reinterpret_cast<const uint4*>(row_ptr<T>(src, row, n_inner));
  uint4* r = FUSED ? reinterpret_cast<uint4*>(row_ptr<T>(res, row, n_inner)) : nullptr;
  uint4* d = reinterpret_cast<uint4*>(row_ptr<T>(dst, row, n_inner));
  const uint4* wp = reinterpret_cast<const uint4*>(weight);
  const uint32_t bar_a = smem_u32(&bar);
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar_a), "r"(arrivals) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  Pack<T> v[NV];
  Pack<T> wv[NV];
  if (PREW == 2) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = k * nthr + tid;
      if (i < per_cta && first + i < nvec) wv[k].raw = __ldg(wp + first + i);
    }
  }
  // every CTA's mbarrier is initialized before anyone arrives on it remotely
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  pdl::wait();
  pdl::launch_dependents();
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * nthr + tid;
    if (i < per_cta && first + i < nvec) v[k].raw = s[first + i];
  }
  if (PREW != 2) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = k * nthr + tid;
      if (i < per_cta && first + i < nvec) wv[k].raw = __ldg(wp + first + i);
    }
  }
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * nthr + tid;
    const int j = first + i;
    if (i < per_cta && j < nvec) {
      if (FUSED) {
        Pack<T> rv;
        rv.raw = r[j];
#pragma unroll
        for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) + C::to_f(rv.e[e]));
        r[j] = v[k].raw;
      }
#pragma unroll
      for (int e = 0; e < VW; ++e) {
        const float f = C::to_f(v[k].e[e]);
        ss += f * f;
      }
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  int pusher = -1;  // the CTA this thread sends a partial to
  int slot = 0;
  if (WARP_PUSH) {
    if (lane < csize) {
      pusher = lane;
      slot = static_cast<int>(rank) * warps + warp;
    }
  } else {
    if (lane == 0) part[warp] = ss;
    __syncthreads();
    if (tid < csize) {
      float t0 = 0.f, t1 = 0.f;
      for (int i = 0; i + 1 < warps; i += 2) {
        t0 += part[i];
        t1 += part[i + 1];
      }
      if (warps & 1) t0 += part[warps - 1];
      ss = t0 + t1;
      pusher = tid;
      slot = static_cast<int>(rank);
    }
  }
  if (pusher >= 0) {
    uint32_t rslot, rbar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rslot) : "r"(smem_u32(&slots[slot])), "r"(pusher));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(bar_a), "r"(pusher));
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(rslot), "f"(ss) : "memory");
    // release at cluster scope orders the store before the arrive the receiver acquires
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(rbar) : "memory");
  }
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar_a)
        : "memory");
  }
  float t0 = 0.f, t1 = 0.f;
  for (int i = 0; i + 1 < arrivals; i += 2) {
    t0 += slots[i];
    t1 += slots[i + 1];
  }
  if (arrivals & 1) t0 += slots[arrivals - 1];
  const float inv = rsqrtf((t0 + t1) / static_cast<float>(hidden) + eps);
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int i = k * nthr + tid;
    const int j = first + i;
    if (i < per_cta && j < nvec) {
#pragma unroll
      for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) * inv * C::to_f(wv[k].e[e]));
      d[j] = v[k].raw;
    }
  }
#endif
}

// Any H, any alignment. In place is safe: each element is read before the same thread writes it.
template <typename T, bool FUSED>
__global__ void __launch_bounds__(1024)
    rms_norm_generic_kernel(Rows dst, Rows src, Rows res, const T* __restrict__ weight,
                            uint32_t n_rows, uint32_t n_inner, int hidden, int tpr_log2, float eps) {
  using C = Conv<T>;
  const int tpr = 1 << tpr_log2;
  const int lane = threadIdx.x & (tpr - 1);
  const uint32_t row = blockIdx.x * (blockDim.x >> tpr_log2) + (threadIdx.x >> tpr_log2);
  const bool active = row < n_rows;

  float ss = 0.f;
  T* s = nullptr;
  T* r = nullptr;
  pdl::wait();
  pdl::launch_dependents();
  if (active) {
    s = row_ptr<T>(src, row, n_inner);
    if (FUSED) r = row_ptr<T>(res, row, n_inner);
#pragma unroll 4
    for (int j = lane; j < hidden; j += tpr) {
      float f = C::to_f(s[j]);
      if (FUSED) {
        const T sum = C::from_f(f + C::to_f(r[j]));
        r[j] = sum;
        f = C::to_f(sum);
      }
      ss += f * f;
    }
  }
  ss = group_sum(ss, tpr_log2);
  const float inv = rsqrtf(ss / static_cast<float>(hidden) + eps);
  if (active) {
    T* d = row_ptr<T>(dst, row, n_inner);
    const T* in = FUSED ? r : s;  // fused: normalize the stored (rounded) residual
#pragma unroll 4
    for (int j = lane; j < hidden; j += tpr) d[j] = C::from_f(C::to_f(in[j]) * inv * C::to_f(weight[j]));
  }
}

// ---- several column slices of one row set, one launch

constexpr int kMaxSlices = 4;

// Passed by value (kernel parameter space, < 300 bytes). Slice s covers columns
// [col[s], col[s] + width[s]) of src's rows and is written to out[s] (its own [outer, inner, width]
// view: the slice of src itself for in place, or another buffer). Blocks
// [s == 0 ? 0 : block_end[s - 1], block_end[s]) handle slice s, rows_per_block = blockDim.x >>
// tpr_log2[s] rows each. vec[s]: 16-byte path (pointers, strides, col and width aligned), else
// element-wise.
struct SliceSet {
  Rows out[kMaxSlices];
  const void* weight[kMaxSlices];
  int col[kMaxSlices];
  int width[kMaxSlices];
  int tpr_log2[kMaxSlices];
  int vec[kMaxSlices];
  uint32_t block_end[kMaxSlices];
  int n;
};

// Per slice exactly the arithmetic of rms_norm_vec_kernel / rms_norm_generic_kernel (fp32 sum of
// squares, inv = rsqrt(ss / width + eps), y = round(x * inv * w)). NV: register budget of the
// 16-byte path (vectors per thread); the weight is always loaded before the reduction (the
// multi-slice launch exists for the latency regime). In place is safe: every element is read by
// the thread that later writes it, before that write, and slices are disjoint.
template <typename T, int NV>
__global__ void __launch_bounds__(1024)
    rms_norm_slices_kernel(Rows src, SliceSet set, uint32_t n_rows, uint32_t n_inner, float eps) {
  using C = Conv<T>;
  constexpr int VW = Pack<T>::N;
  const uint32_t b = blockIdx.x;
  int s = 0;
#pragma unroll
  for (int k = 0; k + 1 < kMaxSlices; ++k)
    if (k + 1 < set.n && b >= set.block_end[k]) s = k + 1;
  const uint32_t b0 = s == 0 ? 0u : set.block_end[s - 1];
  const int tl = set.tpr_log2[s];
  const int tpr = 1 << tl;
  const int lane = threadIdx.x & (tpr - 1);
  const uint32_t row = (b - b0) * (blockDim.x >> tl) + (threadIdx.x >> tl);
  const bool active = row < n_rows;
  const int width = set.width[s];
  const int col = set.col[s];
  const T* __restrict__ weight = static_cast<const T*>(set.weight[s]);
  const Rows out = set.out[s];

  pdl::wait();
  pdl::launch_dependents();
  float ss = 0.f;
  if (set.vec[s]) {  // uniform over the block: group_sum's barrier is reached by every thread
    const int nvec = width / VW;
    Pack<T> v[NV];
    Pack<T> wv[NV];
    if (active) {
      const T* xs = row_ptr<T>(src, row, n_inner) + col;
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) v[k].raw = reinterpret_cast<const uint4*>(xs)[j];
      }
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) wv[k].raw = __ldg(reinterpret_cast<const uint4*>(weight) + j);
      }
      ss += packs_sumsq(v, tpr, lane, nvec);
    }
    ss = group_sum(ss, tl);
    const float inv = rsqrtf(ss / static_cast<float>(width) + eps);
    if (active) {
      T* d = row_ptr<T>(out, row, n_inner);
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int j = k * tpr + lane;
        if (j < nvec) {
#pragma unroll
          for (int e = 0; e < VW; ++e) v[k].e[e] = C::from_f(C::to_f(v[k].e[e]) * inv * C::to_f(wv[k].e[e]));
          reinterpret_cast<uint4*>(d)[j] = v[k].raw;
        }
      }
    }
  } else {
    const T* xs = active ? row_ptr<T>(src, row, n_inner) + col : nullptr;
    if (active) {
#pragma unroll 4
      for (int j = lane; j < width; j += tpr) {
        const float f = C::to_f(xs[j]);
        ss += f * f;
      }
    }
    ss = group_sum(ss, tl);
    const float inv = rsqrtf(ss / static_cast<float>(width) + eps);
    if (active) {
      T* d = row_ptr<T>(out, row, n_inner);
#pragma unroll 4
      for (int j = lane; j < width; j += tpr) d[j] = C::from_f(C::to_f(xs[j]) * inv * C::to_f(weight[j]));
    }
  }
}

}  // namespace norm
}  // namespace qlinear
