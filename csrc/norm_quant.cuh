// Fused RMSNorm -> FP8 (e4m3) per-token-group quantization, device code (no torch headers).
//
// Formula (qlinear.reference.fp8.rms_norm_quant_fp8_ref), all in fp32:
//   h      = x                          or, fused add: h = T(x + residual), stored into residual
//   rstd   = 1 / sqrt_rn(sum(h^2) / K + eps)
//   y      = (h * rstd) * w             two roundings, no FMA; y is never rounded to T
//   scale  = max(amax_group(|y|), scale_eps) / 448          IEEE division
//   q      = e4m3_rn(clamp(y / scale, -448, 448))           IEEE division, RNE cast
// Only the order of the fp32 sum of squares differs from the reference (an ulp of rstd at most).
//
// One warp per row, rows grid-strided over the warps of a persistent grid (and nq_cta_kernel, one block
// per row for few long rows, with its own notes):
//  * nq_row_kernel (below, with its own notes): nq_vec_kernel's layout with the row length and the
//    group (128) fixed at compile time, bf16 rows of 512 / 1024 / 1536 / 2048; the default there.
//    nq_bulk_kernel: the same arithmetic with the rows staged in shared memory by cp.async.bulk
//    (S rows in flight per warp without their registers); sm_90, rows of 512 and 1536.
//  * nq_vec_kernel: 16-byte loads (8 bf16 / fp16 elements: VEC). Lane `l` owns vectors
//    v = l + 32 j, j < NV, of its row, held in registers between the sum of squares and the
//    quantization. A group of `gs` elements is gs / VEC vectors at one j in consecutive lanes, so
//    its amax is an xor-shuffle inside those lanes. Needs: K % VEC == 0, 16-byte aligned rows,
//    gs / VEC a power of two <= 32 (bf16: gs in 8..256; fp32: 4..128). The weight is staged in
//    shared memory as fp32 once per block (any weight dtype, one instantiation). PREFETCH loads the
//    warp's next row before working on the current one.
//  * nq_stream_kernel: the same layout for rows too long for registers and for fp32 rows: reads
//    the row twice, the second time from L1 / L2.
//  * nq_generic_kernel: element accesses, any K / group size / alignment; reads the row up to
//    three times (sum of squares, group amax, quantization; the last two mostly hit L1).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>
#include <utility>

#include "bulk_copy.cuh"
#include "pdl.cuh"

namespace qlinear {
namespace nq {

constexpr float kE4m3Max = 448.f;

// Weight element type, read at run time: the weight is converted once per block (vector kernel) or
// per element (generic kernel), so one instantiation serves every weight dtype.
enum WeightType : int { kWHalf = 0, kWBf16 = 1, kWFloat = 2 };

struct Params {
  const void* x;
  int64_t x_stride;  // elements between rows
  void* residual;    // nullptr: plain norm
  int64_t r_stride;
  const void* weight;
  int weight_type;  // WeightType
  uint8_t* q;       // e4m3 codes
  int64_t q_stride;
  float* scales;
  int64_t s_row_stride;  // (G, 1) row-major, (1, M) column-major
  int64_t s_col_stride;
  int64_t rows;
  int hidden;
  int group_size;
  float eps;
  float scale_eps;
};

template <typename T>
struct Elt;

template <>
struct Elt<__nv_bfloat16> {
  static constexpr int VEC = 8;
  static __device__ __forceinline__ void unpack(const uint4& u, float* f) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
  static __device__ __forceinline__ uint32_t pack2(float a, float b) {
    __nv_bfloat162 t = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&t);
  }
  static __device__ __forceinline__ float load1(const void* p, int64_t i) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
  static __device__ __forceinline__ float store1(void* p, int64_t i, float v) {
    const __nv_bfloat16 b = __float2bfloat16_rn(v);
    static_cast<__nv_bfloat16*>(p)[i] = b;
    return __bfloat162float(b);
  }
};

template <>
struct Elt<__half> {
  static constexpr int VEC = 8;
  static __device__ __forceinline__ void unpack(const uint4& u, float* f) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
  static __device__ __forceinline__ uint32_t pack2(float a, float b) {
    __half2 t = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&t);
  }
  static __device__ __forceinline__ float load1(const void* p, int64_t i) {
    return __half2float(static_cast<const __half*>(p)[i]);
  }
  static __device__ __forceinline__ float store1(void* p, int64_t i, float v) {
    const __half b = __float2half_rn(v);
    static_cast<__half*>(p)[i] = b;
    return __half2float(b);
  }
};

template <>
struct Elt<float> {
  static constexpr int VEC = 4;
  static __device__ __forceinline__ void unpack(const uint4& u, float* f) {
    f[0] = __uint_as_float(u.x);
    f[1] = __uint_as_float(u.y);
    f[2] = __uint_as_float(u.z);
    f[3] = __uint_as_float(u.w);
  }
  static __device__ __forceinline__ float load1(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
  static __device__ __forceinline__ float store1(void* p, int64_t i, float v) {
    static_cast<float*>(p)[i] = v;
    return v;
  }
};

// T(a + b) for VEC elements, packed back into 16 bytes (the fused-add residual).
template <typename T>
__device__ __forceinline__ uint4 add_round(const uint4& a, const uint4& b) {
  float fa[Elt<T>::VEC], fb[Elt<T>::VEC];
  Elt<T>::unpack(a, fa);
  Elt<T>::unpack(b, fb);
  if constexpr (Elt<T>::VEC == 4) {
    return make_uint4(__float_as_uint(fa[0] + fb[0]), __float_as_uint(fa[1] + fb[1]),
                      __float_as_uint(fa[2] + fb[2]), __float_as_uint(fa[3] + fb[3]));
  } else {
    return make_uint4(Elt<T>::pack2(fa[0] + fb[0], fa[1] + fb[1]), Elt<T>::pack2(fa[2] + fb[2], fa[3] + fb[3]),
                      Elt<T>::pack2(fa[4] + fb[4], fa[5] + fb[5]), Elt<T>::pack2(fa[6] + fb[6], fa[7] + fb[7]));
  }
}

__device__ __forceinline__ float load_weight(const void* w, int type, int64_t i) {
  if (type == kWBf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(w)[i]);
  if (type == kWHalf) return __half2float(static_cast<const __half*>(w)[i]);
  return static_cast<const float*>(w)[i];
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// The reciprocal of div.rn.f32's fast path (MUFU.RCP then one Newton step; sm_90 SASS of
// __fdiv_rn): computed once per divisor, so that each quotient costs three FMA-pipe instructions
// instead of div.rn's seven plus a range check and a branch to a slow-path call (the Triton
// kernel's bottleneck; the slow-path routine also spills).
__device__ __forceinline__ float div_rcp(float s) {
  float r0;
  asm("rcp.approx.f32 %0, %1;" : "=f"(r0) : "f"(s));
  return fmaf(r0, fmaf(-s, r0, 1.f), r0);
}

// a / s given r = div_rcp(s), with the remaining steps of that fast path: equal to __fdiv_rn(a, s)
// wherever div.rn does not take its slow path, which it takes only for extreme exponents (its
// FCHK test). The divisions here stay clear of those: sum / K with sum >= 0, amax / 448 with
// amax >= scale_eps, and y / scale with scale in [2.2e-13, 7.6e35] and |y / scale| <= 448; the one
// exception, |y| below ~2^-100, has a quotient far under half the smallest e4m3 subnormal (code
// +-0 either way, with y's sign below).
// The remainder is formed negated, t = q s - a = -(a - q s) exactly (RN is symmetric), and the
// result as q - r t, the same value as the fast path's q + r (a - q s): but for a = -0 this gives
// -0 (IEEE) where the fast path's form gives +0, a different e4m3 byte (0x80 vs 0x00).
__device__ __forceinline__ float div_by(float a, float s, float r) {
  const float q = a * r;
  return fmaf(-r, fmaf(q, s, -a), q);
}

__device__ __forceinline__ float row_rstd(float sum_sq, int hidden, float eps) {
  // IEEE-rounded mean, sqrt and reciprocal, as the reference's fp32 mean and rsqrt (the build has
  // no fast-math)
  const float k = static_cast<float>(hidden);
  return __frcp_rn(__fsqrt_rn(div_by(sum_sq, k, div_rcp(k)) + eps));
}

// max(amax, scale_eps) / 448, IEEE-rounded
__device__ __forceinline__ float group_scale(float amax, float scale_eps) {
  return div_by(fmaxf(amax, scale_eps), kE4m3Max, div_rcp(kE4m3Max));
}

// Two fp32 -> two e4m3 codes (low byte = a): cvt.rn.satfinite, i.e. RNE with the clamp to +-448.
__device__ __forceinline__ uint32_t e4m3x2(float a, float b) {
  return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3));
}

// NV: vectors per lane the registers hold (rows of up to 32 * NV * VEC elements); the row's real
// count nv <= NV comes at run time, so one instantiation serves a range of hidden sizes.
template <typename T, int NV, bool RES>
struct RowRegs {
  uint4 x[NV];
  uint4 r[RES ? NV : 1];
};

// Vector j of the lane is v = lane + STEP j: STEP 32 for a warp per row, the block's threads for
// nq_cta_kernel (lane = its thread index).
template <typename T, int NV, bool RES, int STEP = 32>
__device__ __forceinline__ void load_row(RowRegs<T, NV, RES>& rr, const Params& p, int64_t row, bool active, int lane,
                                         int nvec) {
  const uint4* xr = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + row * p.x_stride);
  const uint4* rr_ptr = RES ? reinterpret_cast<const uint4*>(static_cast<const T*>(p.residual) + row * p.r_stride)
                            : nullptr;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int v = lane + STEP * j;
    rr.x[j] = make_uint4(0u, 0u, 0u, 0u);
    if (RES) rr.r[RES ? j : 0] = make_uint4(0u, 0u, 0u, 0u);
    if (active && v < nvec) {
      // x is read through the read-only path: the kernel never writes it (residual is distinct,
      // checked by the binding).
      rr.x[j] = __ldg(xr + v);
      if (RES) rr.r[RES ? j : 0] = rr_ptr[v];
    }
  }
}

// Shared-memory slot of weight element e (as fp32): the first four elements of every vector,
// then the last four (16-bit types), so that each lane's two 16-byte reads of a warp hit 32
// consecutive 16-byte slots (no bank conflicts).
template <int VEC>
__device__ __forceinline__ int w_slot(int e, int nvec) {
  const int v = e / VEC, k = e % VEC;
  return ((k >> 2) * nvec + v) * 4 + (k & 3);
}

// One vector (VEC elements of h, vector index v of the row) through y = (h * rstd) * w, the group
// amax (xor-shuffle over the group's lpg lanes: every lane of the warp must call this), the group
// scale and the e4m3 codes; lanes with v >= nvec hold zeros and store nothing. w: the vector's VEC
// weights as fp32.
template <typename T>
__device__ __forceinline__ void quant_vec_w(const Params& p, const float (&w)[Elt<T>::VEC], const uint4& h, int64_t row,
                                            int v, int nvec, int lpg, int lpg_log2, int lane, float rstd, bool active) {
  constexpr int VEC = Elt<T>::VEC;
  float y[VEC];
  Elt<T>::unpack(h, y);
  float amax = 0.f;
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    y[k] = (y[k] * rstd) * w[k];
    amax = fmaxf(amax, fabsf(y[k]));
  }
  // unconditional shuffles (a select drops those outside the group): a shuffle under a branch
  // would make the compiler add warp re-convergence code around each one
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, amax, off);
    amax = off < lpg ? fmaxf(amax, o) : amax;
  }
  const float scale = group_scale(amax, p.scale_eps);
  const float r = div_rcp(scale);
  uint32_t c[VEC / 4];
#pragma unroll
  for (int k = 0; k < VEC; k += 4) {
    const uint32_t lo = e4m3x2(div_by(y[k], scale, r), div_by(y[k + 1], scale, r));
    const uint32_t hi = e4m3x2(div_by(y[k + 2], scale, r), div_by(y[k + 3], scale, r));
    c[k / 4] = lo | (hi << 16);
  }
  if (active && v < nvec) {
    uint8_t* qrow = p.q + row * p.q_stride;
    if constexpr (VEC == 8) {
      reinterpret_cast<uint2*>(qrow)[v] = make_uint2(c[0], c[1]);
    } else {
      reinterpret_cast<uint32_t*>(qrow)[v] = c[0];
    }
    if ((lane & (lpg - 1)) == 0) p.scales[row * p.s_row_stride + (v >> lpg_log2) * p.s_col_stride] = scale;
  }
}

// quant_vec_w with the weights read from the block's fp32 stage (stage_weight's w_slot layout).
template <typename T>
__device__ __forceinline__ void quant_vec(const Params& p, const float4* s_w4, const uint4& h, int64_t row, int v,
                                          int nvec, int lpg, int lpg_log2, int lane, float rstd, bool active) {
  constexpr int VEC = Elt<T>::VEC;
  const int vw = v < nvec ? v : nvec - 1;  // lanes past the row end read a valid slot, use 0
  float w[VEC];
  *reinterpret_cast<float4*>(&w[0]) = s_w4[vw];
  if constexpr (VEC == 8) *reinterpret_cast<float4*>(&w[4]) = s_w4[nvec + vw];
  quant_vec_w<T>(p, w, h, row, v, nvec, lpg, lpg_log2, lane, rstd, active);
}

// The 8 weights of vector v as fp32, straight from global memory (16-byte aligned weight; any weight
// type, read at run time); zeros past the row end.
__device__ __forceinline__ void load_weight8(const Params& p, int v, int nvec, float (&w)[8]) {
#pragma unroll
  for (int k = 0; k < 8; ++k) w[k] = 0.f;
  if (v >= nvec) return;
  if (p.weight_type == kWFloat) {
    const float4* wp = static_cast<const float4*>(p.weight) + 2 * v;
    *reinterpret_cast<float4*>(&w[0]) = __ldg(wp);
    *reinterpret_cast<float4*>(&w[4]) = __ldg(wp + 1);
  } else {
    const uint4 u = __ldg(static_cast<const uint4*>(p.weight) + v);
    if (p.weight_type == kWBf16)
      Elt<__nv_bfloat16>::unpack(u, w);
    else
      Elt<__half>::unpack(u, w);
  }
}

// Stages the weight as fp32 in shared memory (slots of w_slot), once per block. Eight loads per
// thread are issued before any store: a block of few warps (few rows, e.g. decode) otherwise walks
// the weight in dependent round trips to memory (H200: the MLA step at M = 1 spent ~8 us here).
// IN_FLIGHT 1 for the two-pass kernel, whose 512-thread register budget the unrolled loads
// would overflow (it serves many rows: staging is not its cost).
template <int VEC, int IN_FLIGHT = 8>
__device__ __forceinline__ void stage_weight(float* s_w, const Params& p, int nvec) {
  constexpr int kInFlight = IN_FLIGHT;
  for (int e0 = threadIdx.x; e0 < p.hidden; e0 += kInFlight * blockDim.x) {
    float v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int e = e0 + u * blockDim.x;
      v[u] = e < p.hidden ? load_weight(p.weight, p.weight_type, e) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int e = e0 + u * blockDim.x;
      if (e < p.hidden) s_w[w_slot<VEC>(e, nvec)] = v[u];
    }
  }
  __syncthreads();
}

// Row held in registers (NV vectors per lane).
// NV 16 rows need up to ~160 registers: at most 256 threads per block there.
template <typename T, int NV, bool RES, bool PREFETCH>
__global__ void __launch_bounds__(NV > 8 ? 256 : 512) nq_vec_kernel(const Params p) {
  using E = Elt<T>;
  constexpr int VEC = E::VEC;
  extern __shared__ float4 s_w4[];
  const int nvec = p.hidden / VEC;
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int64_t wstride = static_cast<int64_t>(gridDim.x) * warps;
  const int warp = threadIdx.x >> 5;
  // lanes per group: a power of two <= 32 (checked by the launcher)
  const int lpg = p.group_size / VEC;
  const int lpg_log2 = __ffs(lpg) - 1;

  // The loop runs on the block's first row (uniform across the block), a warp past the end goes
  // along without loading or storing: with a loop condition the compiler cannot prove uniform, it
  // wraps every shuffle in warp re-convergence code.
  int64_t base = static_cast<int64_t>(blockIdx.x) * warps;
  RowRegs<T, NV, RES> cur;
  // the first row's loads are in flight while the block stages the weight
  load_row(cur, p, base + warp, base + warp < p.rows, lane, nvec);
  stage_weight<VEC>(reinterpret_cast<float*>(s_w4), p, nvec);

  for (; base < p.rows; base += wstride) {
    const int64_t row = base + warp;
    const bool active = row < p.rows;
    RowRegs<T, NV, RES> nxt;
    if (PREFETCH) load_row(nxt, p, row + wstride, row + wstride < p.rows, lane, nvec);

    if (RES) {
      T* rp = static_cast<T*>(p.residual) + row * p.r_stride;
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const int v = lane + 32 * j;
        if (32 * j >= nvec) break;
        cur.x[j] = add_round<T>(cur.x[j], cur.r[RES ? j : 0]);
        if (active && v < nvec) reinterpret_cast<uint4*>(rp)[v] = cur.x[j];
      }
    }
    float ss0 = 0.f, ss1 = 0.f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      if (32 * j >= nvec) break;
      float f[VEC];
      E::unpack(cur.x[j], f);
#pragma unroll
      for (int k = 0; k < VEC; k += 2) {
        ss0 = fmaf(f[k], f[k], ss0);
        ss1 = fmaf(f[k + 1], f[k + 1], ss1);
      }
    }
    const float rstd = row_rstd(warp_sum(ss0 + ss1), p.hidden, p.eps);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      if (32 * j >= nvec) break;
      quant_vec<T>(p, s_w4, cur.x[j], row, lane + 32 * j, nvec, lpg, lpg_log2, lane, rstd, active);
    }

    if (PREFETCH) {
      cur = nxt;
    } else {
      load_row(cur, p, row + wstride, row + wstride < p.rows, lane, nvec);
    }
  }
}

// Rows too long for registers (and fp32 rows): the same vector layout, the row read twice (the
// second read, of the values just read or written by this lane, mostly hits L1 / L2).
template <typename T, bool RES>
__global__ void __launch_bounds__(512) nq_stream_kernel(const Params p) {
  using E = Elt<T>;
  constexpr int VEC = E::VEC;
  extern __shared__ float4 s_w4[];
  const int nvec = p.hidden / VEC;
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int64_t wstride = static_cast<int64_t>(gridDim.x) * warps;
  const int lpg = p.group_size / VEC;
  const int lpg_log2 = __ffs(lpg) - 1;
  const int nv = (nvec + 31) / 32;
  stage_weight<VEC, 1>(reinterpret_cast<float*>(s_w4), p, nvec);
  // loop on the block's first row: uniform, see nq_vec_kernel
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * warps; base < p.rows; base += wstride) {
    const int64_t row = base + (threadIdx.x >> 5);
    const bool active = row < p.rows;
    const uint4* xr = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + row * p.x_stride);
    uint4* rr = RES ? reinterpret_cast<uint4*>(static_cast<T*>(p.residual) + row * p.r_stride) : nullptr;
    float ss0 = 0.f, ss1 = 0.f;
#pragma unroll 4
    for (int j = 0; j < nv; ++j) {
      const int v = lane + 32 * j;
      if (active && v < nvec) {
        uint4 h = __ldg(xr + v);
        if (RES) {
          h = add_round<T>(h, rr[v]);
          rr[v] = h;
        }
        float f[VEC];
        E::unpack(h, f);
#pragma unroll
        for (int k = 0; k < VEC; k += 2) {
          ss0 = fmaf(f[k], f[k], ss0);
          ss1 = fmaf(f[k + 1], f[k + 1], ss1);
        }
      }
    }
    const float rstd = row_rstd(warp_sum(ss0 + ss1), p.hidden, p.eps);
    const uint4* hr = RES ? rr : xr;
#pragma unroll 2
    for (int j = 0; j < nv; ++j) {
      const int v = lane + 32 * j;
      // each lane re-reads only the vectors it wrote itself: program order makes them visible
      const uint4 h = active && v < nvec ? (RES ? hr[v] : __ldg(hr + v)) : make_uint4(0u, 0u, 0u, 0u);
      quant_vec<T>(p, s_w4, h, row, v, nvec, lpg, lpg_log2, lane, rstd, active);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// nq_row_kernel: the 16-bit, group-128 case with the row length fixed at compile time
// (K = 256 NV: 512, 1024, 1536, 2048), which the MLA slices and most q / kv LoRA ranks are.
// Same layout as nq_vec_kernel (lane l owns vectors l + 32 j, j < NV; a 128-group is one vector
// at one j in 16 consecutive lanes) but with every size a constant, which is what the register
// kernel's time went into (H200 SASS: ~140 instructions per 8 elements, ~1000 per row per warp,
// i.e. issue-bound at 16 warps per SM): no per-vector bounds tests or branches, the group amax in
// four unconditional shuffles, the row's NV group reductions interleaved, the unpacked row kept for
// the quantization, 1/448 a constant, the scale's reciprocal without the subnormal fix-ups, each
// row's store addresses formed once. R rows per warp per step (independent chains; for short rows);
// PREFETCH loads the warp's next step while it works on the current one (two register buffers,
// used alternately, so no copy between them). MINB = minimum resident 256-thread blocks per SM, i.e.
// the register cap (2: 128, 3: 80, 4: 64) that trades the compiler's interleaving for occupancy.
// HINT 1 loads x with ld.global.nc.L1::no_allocate.L2::256B (streamed once; L2 fetches 256 B).

// 1 / 448 rounded to nearest (0x3B124925): the reciprocal div_rcp(448) returns
constexpr float kRcpE4m3Max = 0.0022321429569274187f;

// div_rcp for a normal s with a normal reciprocal: rcp.approx's non-ftz form only adds a rescaling
// for |s| outside [2^-126, 2^126], the same MUFU value otherwise. Group scales lie in
// [scale_eps / 448, 448^-1 * FLT_MAX] with scale_eps >= 2^-126 * 448 (checked by the launcher).
__device__ __forceinline__ float div_rcp_normal(float s) {
  float r0;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r0) : "f"(s));
  return fmaf(r0, fmaf(-s, r0, 1.f), r0);
}

template <int HINT>
__device__ __forceinline__ uint4 ld_row_vec(const uint4* ptr) {
  if constexpr (HINT == 0) {
    return __ldg(ptr);
  } else {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(ptr));
    return v;
  }
}

template <int NV, int R, bool RES>
struct RowBuf {
  uint4 x[R][NV];
  uint4 r[RES ? R : 1][RES ? NV : 1];
};

// Rows row0 .. row0 + R - 1 of this warp into registers (zeros past the last row).
template <typename T, int NV, int R, bool RES, int HINT>
__device__ __forceinline__ void row_load(RowBuf<NV, R, RES>& b, const Params& p, int64_t row0, int lane) {
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t row = row0 + i;
    const bool ok = row < p.rows;
    const uint4* xr = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + row * p.x_stride) + lane;
    const uint4* rr =
        RES ? reinterpret_cast<const uint4*>(static_cast<const T*>(p.residual) + row * p.r_stride) + lane : nullptr;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      b.x[i][j] = ok ? ld_row_vec<HINT>(xr + 32 * j) : make_uint4(0u, 0u, 0u, 0u);
      if constexpr (RES) b.r[i][j] = ok ? rr[32 * j] : make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

// Normalizes and quantizes the R rows held in b (rows past p.rows: computed on zeros, not stored).
template <typename T, int NV, int R, bool RES>
__device__ __forceinline__ void row_compute(RowBuf<NV, R, RES>& b, const Params& p, const float4* s_w4,
                                            int64_t row0, int lane) {
  using E = Elt<T>;
  constexpr int NVEC = 32 * NV;
  constexpr int K = NVEC * 8;
  float h[R][NV][8];
  float ss[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const bool ok = row0 + i < p.rows;
    if constexpr (RES) {
      uint4* rp = reinterpret_cast<uint4*>(static_cast<T*>(p.residual) + (row0 + i) * p.r_stride) + lane;
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        b.x[i][j] = add_round<T>(b.x[i][j], b.r[i][j]);
        if (ok) rp[32 * j] = b.x[i][j];
      }
    }
    // two accumulators: a chain of 4 NV dependent FMAs instead of 8 NV
    float a0 = 0.f, a1 = 0.f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      E::unpack(b.x[i][j], h[i][j]);
#pragma unroll
      for (int k = 0; k < 8; k += 2) {
        a0 = fmaf(h[i][j][k], h[i][j][k], a0);
        a1 = fmaf(h[i][j][k + 1], h[i][j][k + 1], a1);
      }
    }
    ss[i] = a0 + a1;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
#pragma unroll
    for (int i = 0; i < R; ++i) ss[i] += __shfl_xor_sync(0xffffffffu, ss[i], off);
  }
  float amax[R][NV];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const float rstd = row_rstd(ss[i], K, p.eps);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const float4 w0 = s_w4[lane + 32 * j];
      const float4 w1 = s_w4[NVEC + lane + 32 * j];
      const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
      float m = 0.f;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        h[i][j][k] = (h[i][j][k] * rstd) * w[k];
        m = fmaxf(m, fabsf(h[i][j][k]));
      }
      amax[i][j] = m;
    }
  }
  // a 128-group is 16 lanes: xor 8, 4, 2, 1 stays inside it
#pragma unroll
  for (int off = 8; off > 0; off >>= 1) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int j = 0; j < NV; ++j) amax[i][j] = fmaxf(amax[i][j], __shfl_xor_sync(0xffffffffu, amax[i][j], off));
    }
  }
  const bool scale_lane = (lane & 15) == 0;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t row = row0 + i;
    const bool ok = row < p.rows;
    uint2* qr = reinterpret_cast<uint2*>(p.q + row * p.q_stride) + lane;
    float* sp = p.scales + row * p.s_row_stride + (lane >> 4) * p.s_col_stride;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const float scale = div_by(fmaxf(amax[i][j], p.scale_eps), kE4m3Max, kRcpE4m3Max);
      const float r = div_rcp_normal(scale);
      const float* y = h[i][j];
      const uint32_t c0 = e4m3x2(div_by(y[0], scale, r), div_by(y[1], scale, r)) |
                          (e4m3x2(div_by(y[2], scale, r), div_by(y[3], scale, r)) << 16);
      const uint32_t c1 = e4m3x2(div_by(y[4], scale, r), div_by(y[5], scale, r)) |
                          (e4m3x2(div_by(y[6], scale, r), div_by(y[7], scale, r)) << 16);
      if (ok) {
        qr[32 * j] = make_uint2(c0, c1);
        if (scale_lane) sp[2 * j * p.s_col_stride] = scale;
      }
    }
  }
}

template <typename T, int NV, int R, bool RES, bool PREFETCH, int MINB, int HINT>
__global__ void __launch_bounds__(256, MINB) nq_row_kernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
  // compiled for sm_89+ only: the launcher never picks it below (software e4m3 conversion would
  // double this kernel's share of the build for devices it was not tuned for)
  __trap();
#else
  extern __shared__ float4 s_w4[];
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps * R;
  // loop on the block's first row (uniform across the block, see nq_vec_kernel); a warp whose rows
  // are past the end computes on zeros and stores nothing
  int64_t base = static_cast<int64_t>(blockIdx.x) * warps * R;
  int64_t row0 = base + (threadIdx.x >> 5) * R;
  RowBuf<NV, R, RES> a;
  row_load<T, NV, R, RES, HINT>(a, p, row0, lane);
  stage_weight<8>(reinterpret_cast<float*>(s_w4), p, 32 * NV);
  if constexpr (PREFETCH) {
    RowBuf<NV, R, RES> b;
    while (base < p.rows) {
      row_load<T, NV, R, RES, HINT>(b, p, row0 + step, lane);
      row_compute<T, NV, R, RES>(a, p, s_w4, row0, lane);
      base += step;
      row0 += step;
      if (base >= p.rows) break;
      row_load<T, NV, R, RES, HINT>(a, p, row0 + step, lane);
      row_compute<T, NV, R, RES>(b, p, s_w4, row0, lane);
      base += step;
      row0 += step;
    }
  } else {
    while (true) {
      row_compute<T, NV, R, RES>(a, p, s_w4, row0, lane);
      base += step;
      row0 += step;
      if (base >= p.rows) break;
      row_load<T, NV, R, RES, HINT>(a, p, row0, lane);
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// nq_bulk_kernel: nq_row_kernel's arithmetic (row_compute, bit for bit) with the rows brought in by
// the copy engine instead of the lanes' registers. Each warp owns a ring of S row slots in shared
// memory; lane 0 asks for a whole row (x, and the residual for the fused add) with one
// cp.async.bulk per operand, completing on the slot's mbarrier. The warp thus keeps S - 1 rows in
// flight while it computes one, without the registers a second row costs (nq_row_kernel's
// PREFETCH: 128 registers, 16 warps per SM, one row ahead), so the register cap drops to 80 (MINB
// 3) and the rows in flight per SM are bounded by shared memory instead. Needs 16-byte aligned
// rows (the launcher's vector-path check) and sm_90 (cp.async.bulk).
// Shared memory: the fp32 weight (K floats), then warps x S slots of (RES ? 2 : 1) x K x 2 bytes,
// then warps x S mbarriers (8 bytes each).

using tma::bulk_copy;
using tma::smem_u32;

__device__ __forceinline__ void bulk_wait(uint32_t bar, uint32_t phase) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "NQ_BULK_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra NQ_BULK_WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(phase)
      : "memory");
}

template <typename T, int NV, bool RES, int S, int MINB>
__global__ void __launch_bounds__(256, MINB) nq_bulk_kernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // compiled for sm_90+ only: the launcher never picks it below
#else
  constexpr int K = 256 * NV;
  constexpr uint32_t kRowBytes = K * 2;
  constexpr uint32_t kSlotBytes = (RES ? 2 : 1) * kRowBytes;
  extern __shared__ float4 s_w4[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps;
  unsigned char* slots = reinterpret_cast<unsigned char*>(s_w4) + K * 4 + static_cast<size_t>(warp) * S * kSlotBytes;
  const uint32_t slot0 = smem_u32(slots);
  const uint32_t bar0 =
      smem_u32(reinterpret_cast<unsigned char*>(s_w4) + K * 4 + static_cast<size_t>(warps) * S * kSlotBytes) +
      8u * S * warp;
  int64_t base = static_cast<int64_t>(blockIdx.x) * warps;
  int64_t row0 = base + warp;
  // lane 0 issues the row's copies into slot s (rows past the end: none, and none waited for)
  auto issue = [&](int s, int64_t row) {
    if (lane == 0 && row < p.rows) {
      const uint32_t bar = bar0 + 8u * s;
      tma::mbar_arrive_tx(bar, kSlotBytes);
      bulk_copy(slot0 + s * kSlotBytes, static_cast<const T*>(p.x) + row * p.x_stride, kRowBytes, bar);
      if constexpr (RES)
        bulk_copy(slot0 + s * kSlotBytes + kRowBytes, static_cast<const T*>(p.residual) + row * p.r_stride, kRowBytes,
                  bar);
    }
  };
  if (lane == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0 + 8u * s));
    // the initialized barriers visible to the copy engine (async proxy)
    asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncwarp();
#pragma unroll
  for (int s = 0; s < S; ++s) issue(s, row0 + s * step);
  stage_weight<8>(reinterpret_cast<float*>(s_w4), p, 32 * NV);
  // loop on the block's first row (uniform, see nq_vec_kernel); a warp whose row is past the end
  // computes on whatever its slot holds and stores nothing
  int s = 0;
  uint32_t phase = 0;
  RowBuf<NV, 1, RES> b;
  while (base < p.rows) {
    if (row0 < p.rows) bulk_wait(bar0 + 8u * s, phase);
    const uint4* src = reinterpret_cast<const uint4*>(slots + s * kSlotBytes) + lane;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      b.x[0][j] = src[32 * j];
      if constexpr (RES) b.r[0][j] = src[kRowBytes / 16 + 32 * j];
    }
    // every lane's reads of the slot ordered before the copy engine's refill of it
    __syncwarp();
    if (lane == 0) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    issue(s, row0 + S * step);
    row_compute<T, NV, 1, RES>(b, p, s_w4, row0, lane);
    base += step;
    row0 += step;
    if (++s == S) {
      s = 0;
      phase ^= 1u;
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// nq_slim_kernel: row_compute's arithmetic (one row per warp per step), bit for bit, in fewer issued
// instructions. The 32768 x 1536 plain case is issue-bound (H200 SASS of variant 6: ~740
// instructions per row per lane, ~420 of them the unpacking, sums, products, maxima, divisions and
// conversions), so what goes is overhead. NV = 2 or 6 (rows of 512 / 1536). Nothing changes a value:
//  * group amax as a reduce-scatter over the lane bits 3, 2, 1, 0 of each 16-lane half (a lane's
//    vector j is in group 2 j + (lane >> 4)): at each bit, values pair up and a lane keeps one of a
//    pair and sends the other (a select each), so one shuffle serves two groups. NV = 6: bit 3
//    pairs j (0, 1) (2, 3) (4, 5) -> 3 values, bit 2 pairs the first two (the third is reduced
//    whole), bit 1 pairs the last two, bit 0 reduces the one left: 8 shuffles instead of 24, and
//    each lane ends with one group's amax, j = b1 ? 4 + b3 : 2 b2 + b3 (bK: bit K of the lane).
//    Its scale and reciprocal are computed once (not NV times) and fetched per vector j from a
//    lane holding that group (an indexed shuffle each). NV = 2: bit 3 pairs j (0, 1), the rest
//    whole; j = b3.
//  * one scale store per group: the lane holding it with b0 = 0 (NV 6: and b2 = 0 for j >= 4;
//    NV 2: b2 = b1 = 0).
//  * the vector maximum as a tree (7 FMNMX per 8 values, not 8 from a zero start: the same value,
//    max ignores NaN and |y| >= +0; a group of NaN only still gets max(., scale_eps) = scale_eps).
//  * 32-bit row indices and byte strides (the launcher checks they fit): each row pointer is one
//    IMAD.WIDE from a per-lane base; no zero fill: a warp whose row is past the end reads the last
//    row, computes and stores nothing (slim_load).
// PREFETCH: the warp's next row loads into the second register buffer while this one computes
// (plain norm; with the residual, two rows of x and residual would not fit 128 registers).
// MINB: resident 256-thread blocks per SM (register cap 2: 128, 3: 80, 4: 64).

template <int NV, bool RES>
struct SlimBuf {
  uint4 x[NV];
  uint4 r[RES ? NV : 1];
};

// Unconditional loads (xp / rp: this lane's first vector of a valid row): the buffer's previous
// contents are dead during the compute (a predicated load would keep them live: ~48 registers).
template <int NV, bool RES>
__device__ __forceinline__ void slim_load(SlimBuf<NV, RES>& b, const char* xp, const char* rp) {
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    b.x[j] = __ldg(reinterpret_cast<const uint4*>(xp) + 32 * j);
    if constexpr (RES) b.r[j] = reinterpret_cast<const uint4*>(rp)[32 * j];
  }
}

// Per-lane constants of the reduce-scatter (see above).
template <int NV>
struct SlimLane {
  int lane;
  bool b1, b2, b3;
  int grp;     // the group whose amax / scale this lane ends with: 2 j + (lane >> 4)
  bool store;  // this lane stores that group's scale
  __device__ __forceinline__ explicit SlimLane(int l) : lane(l), b1(l & 2), b2(l & 4), b3(l & 8) {
    const int h = l >> 4, t3 = b3 ? 1 : 0;
    if constexpr (NV == 6) {
      const int j = b1 ? 4 + t3 : 2 * (b2 ? 1 : 0) + t3;
      grp = 2 * j + h;
      store = (l & 1) == 0 && (!b1 || !b2);
    } else {
      grp = 2 * t3 + h;
      store = (l & 7) == 0;
    }
  }
  // vector j's scale (and reciprocal) from a lane holding its group (same half, lane >> 4): an
  // indexed shuffle whose source is (lane & SEG) | B, B and the segment mask SEG both immediates
  // (no per-lane index register to form)
  template <int J>
  static __device__ __forceinline__ float fetch(float v) {
    constexpr int kSeg = NV == 2 ? 0x17 : J < 4 ? 0x11 : 0x15;
    constexpr int kB = NV == 2 ? (J & 1) << 3 : J < 4 ? ((J & 1) << 3) | ((J >> 1) << 2) : 2 | ((J & 1) << 3);
    float r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, 0xffffffff;" : "=f"(r) : "f"(v), "n"(kB), "n"((kSeg << 8) | 0x1f));
    return r;
  }
};

template <int NV, int... J>
__device__ __forceinline__ void slim_fetch(float* s, float* r, float sc, float rc, std::integer_sequence<int, J...>) {
  ((s[J] = SlimLane<NV>::template fetch<J>(sc), r[J] = SlimLane<NV>::template fetch<J>(rc)), ...);
}

__device__ __forceinline__ float keep_send_max(float a, float b, bool hi, int off) {
  const float send = hi ? a : b;
  const float keep = hi ? b : a;
  return fmaxf(keep, __shfl_xor_sync(0xffffffffu, send, off));
}

// One row in b: rp / qp point at this lane's first vector of the row (residual, codes), sp at the
// scale of this lane's group; ok: the row exists.
template <typename T, int NV, bool RES>
__device__ __forceinline__ void slim_compute(SlimBuf<NV, RES>& b, const Params& p, const float4* s_w4,
                                             const SlimLane<NV>& L, bool ok, char* rp, char* qp, float* sp) {
  using E = Elt<T>;
  constexpr int NVEC = 32 * NV;
  constexpr int K = NVEC * 8;
  const int lane = L.lane;
  if constexpr (RES) {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      b.x[j] = add_round<T>(b.x[j], b.r[j]);
      if (ok) reinterpret_cast<uint4*>(rp)[32 * j] = b.x[j];
    }
  }
  // row_compute's sum: two chains (even / odd elements) over j, then the xor butterfly
  float h[NV][8];
  float a0 = 0.f, a1 = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    E::unpack(b.x[j], h[j]);
#pragma unroll
    for (int k = 0; k < 8; k += 2) {
      a0 = fmaf(h[j][k], h[j][k], a0);
      a1 = fmaf(h[j][k + 1], h[j][k + 1], a1);
    }
  }
  float ss = a0 + a1;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  const float rstd = row_rstd(ss, K, p.eps);
  float m[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const float4 w0 = s_w4[lane + 32 * j];
    const float4 w1 = s_w4[NVEC + lane + 32 * j];
    const float w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) h[j][k] = (h[j][k] * rstd) * w[k];
    const float m01 = fmaxf(fabsf(h[j][0]), fabsf(h[j][1])), m23 = fmaxf(fabsf(h[j][2]), fabsf(h[j][3]));
    const float m45 = fmaxf(fabsf(h[j][4]), fabsf(h[j][5])), m67 = fmaxf(fabsf(h[j][6]), fabsf(h[j][7]));
    m[j] = fmaxf(fmaxf(m01, m23), fmaxf(m45, m67));
  }
  float v;
  if constexpr (NV == 6) {
    const float g0 = keep_send_max(m[0], m[1], L.b3, 8);  // j = b3
    const float g1 = keep_send_max(m[2], m[3], L.b3, 8);  // j = 2 + b3
    float g2 = keep_send_max(m[4], m[5], L.b3, 8);        // j = 4 + b3
    const float g01 = keep_send_max(g0, g1, L.b2, 4);     // j = 2 b2 + b3
    g2 = fmaxf(g2, __shfl_xor_sync(0xffffffffu, g2, 4));
    v = keep_send_max(g01, g2, L.b1, 2);
  } else {
    v = keep_send_max(m[0], m[1], L.b3, 8);
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
  }
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  const float sc = div_by(fmaxf(v, p.scale_eps), kE4m3Max, kRcpE4m3Max);
  const float rc = div_rcp_normal(sc);
  float scs[NV], rcs[NV];
  slim_fetch<NV>(scs, rcs, sc, rc, std::make_integer_sequence<int, NV>{});
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const float scale = scs[j];
    const float r = rcs[j];
    const float* y = h[j];
    const uint32_t c0 = e4m3x2(div_by(y[0], scale, r), div_by(y[1], scale, r)) |
                        (e4m3x2(div_by(y[2], scale, r), div_by(y[3], scale, r)) << 16);
    const uint32_t c1 = e4m3x2(div_by(y[4], scale, r), div_by(y[5], scale, r)) |
                        (e4m3x2(div_by(y[6], scale, r), div_by(y[7], scale, r)) << 16);
    if (ok) reinterpret_cast<uint2*>(qp)[32 * j] = make_uint2(c0, c1);
  }
  if (ok && L.store) *sp = sc;
}

template <typename T, int NV, bool RES, bool PREFETCH, int MINB>
__global__ void __launch_bounds__(256, MINB) nq_slim_kernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
  __trap();  // sm_89+ only, as nq_row_kernel
#else
  static_assert(NV == 2 || NV == 6, "the reduce-scatter is written for 4 and 12 groups per row");
  extern __shared__ float4 s_w4[];
  const SlimLane<NV> L(threadIdx.x & 31);
  const int warps = blockDim.x >> 5;
  // 32-bit indices (rows < 2^30, byte strides < 2^31: the launcher's check)
  const int rows = static_cast<int>(p.rows);
  const int step = static_cast<int>(gridDim.x) * warps;
  // loop on the block's first row (uniform across the block, see nq_vec_kernel)
  int base = static_cast<int>(blockIdx.x) * warps;
  int row = base + (threadIdx.x >> 5);
  const int xs = static_cast<int>(p.x_stride) * static_cast<int>(sizeof(T));
  const int rs = RES ? static_cast<int>(p.r_stride) * static_cast<int>(sizeof(T)) : 0;
  const int qs = static_cast<int>(p.q_stride);
  const int ss = static_cast<int>(p.s_row_stride) * 4;
  const char* xb = static_cast<const char*>(p.x) + 16 * L.lane;
  char* rb = RES ? static_cast<char*>(p.residual) + 16 * L.lane : nullptr;
  char* qb = reinterpret_cast<char*>(p.q) + 8 * L.lane;
  float* sb = p.scales + L.grp * p.s_col_stride;
  // r * stride as one IMAD.WIDE.U32 (both non-negative and < 2^31)
  auto wide = [](int r, int stride) -> uint64_t {
    return static_cast<uint64_t>(static_cast<uint32_t>(r)) * static_cast<uint32_t>(stride);
  };
  // this lane's vectors of row r (r < rows: a row past the end is replaced by the last one)
  auto ld = [&](SlimBuf<NV, RES>& buf, int r) {
    r = min(r, rows - 1);
    slim_load<NV, RES>(buf, xb + wide(r, xs), RES ? rb + wide(r, rs) : nullptr);
  };
  auto compute = [&](SlimBuf<NV, RES>& buf, int r) {
    slim_compute<T, NV, RES>(buf, p, s_w4, L, r < rows, RES ? rb + wide(r, rs) : nullptr, qb + wide(r, qs),
                             reinterpret_cast<float*>(reinterpret_cast<char*>(sb) + wide(r, ss)));
  };
  SlimBuf<NV, RES> a, b;
  ld(a, row);
  stage_weight<8>(reinterpret_cast<float*>(s_w4), p, 32 * NV);
  if constexpr (PREFETCH) {
    while (true) {
      ld(b, row + step);
      compute(a, row);
      base += step;
      row += step;
      if (base >= rows) break;
      ld(a, row + step);
      compute(b, row);
      base += step;
      row += step;
      if (base >= rows) break;
    }
  } else {
    while (true) {
      compute(a, row);
      base += step;
      row += step;
      if (base >= rows) break;
      ld(a, row);
    }
  }
#endif
}

// Long rows, few of them (decode: K 4097 .. 256 NVT VEC, 16-bit types): one block of kCtaThreads threads
// per row, rows grid-strided over the blocks. Thread i owns vectors v = i + kCtaThreads j (j < NVT) in
// registers; a group is lpg consecutive threads of one warp at one j, as in nq_vec_kernel (quant_vec);
// the sum of squares meets through shared memory, each thread adding the warps' sums in warp order (one
// value per block). Each thread holds the weights of its own vectors in registers, loaded once with the
// first row (session 30: staged in shared memory as the warp kernels do, 5.3 us at K 7168, M 1, run 4;
// reloaded after each row's sum 3.2 us, run 5; once 3.3 us, run 6).
// Why: the one-warp-per-row kernels leave a row of 7168 or 16384 elements to 32 lanes, which then wait
// out their loads one after another (H200, session 29 runs 10-11: the two-pass kernel 15-18 us at K 7168
// for 1 .. 1024 rows, the generic one 103-107 us at K 16384, against 2.8-4.2 for Triton's one program
// per row).
// PDL: launch_dependents at the start, so that a GEMM launched after it with PDL (the FP8 block GEMM on
// these codes) loads its weights while the rows are normalized; that GEMM's griddepcontrol.wait still
// waits for this whole grid. wait before the first access of x (a no-op unless launched with PDL).
constexpr int kCtaThreads = 256;

template <typename T, int NVT, bool RES>
__global__ void __launch_bounds__(kCtaThreads) nq_cta_kernel(const Params p) {
  using E = Elt<T>;
  constexpr int VEC = E::VEC, kWarps = kCtaThreads / 32;
  static_assert(VEC == 8, "16-bit rows (load_weight8)");
  __shared__ float s_part[2][kWarps];  // two slots: a row's sums never overwrite the previous row's in use
  const int nvec = p.hidden / VEC;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int lpg = p.group_size / VEC;  // a power of two <= 32 (checked by the launcher)
  const int lpg_log2 = __ffs(lpg) - 1;
  pdl::launch_dependents();
  // the thread's weights, once for every row: in flight with the first row's x (the weight is a
  // parameter no earlier kernel writes, so it may be read before griddepcontrol.wait)
  float w[NVT][VEC];
#pragma unroll
  for (int j = 0; j < NVT; ++j) load_weight8(p, tid + kCtaThreads * j, nvec, w[j]);
  pdl::wait();

  RowRegs<T, NVT, RES> cur;
  auto& x = cur.x;
  int64_t row = blockIdx.x;
  load_row<T, NVT, RES, kCtaThreads>(cur, p, row, row < p.rows, tid, nvec);
  for (int it = 0; row < p.rows; row += gridDim.x, ++it) {  // uniform across the block
    if (RES) {
      T* rr = static_cast<T*>(p.residual) + row * p.r_stride;
#pragma unroll
      for (int j = 0; j < NVT; ++j) {
        const int v = tid + kCtaThreads * j;
        x[j] = add_round<T>(x[j], cur.r[RES ? j : 0]);
        if (v < nvec) reinterpret_cast<uint4*>(rr)[v] = x[j];
      }
    }
    float ss0 = 0.f, ss1 = 0.f;
#pragma unroll
    for (int j = 0; j < NVT; ++j) {
      float f[VEC];
      E::unpack(x[j], f);  // zeros past the row end
#pragma unroll
      for (int k = 0; k < VEC; k += 2) {
        ss0 = fmaf(f[k], f[k], ss0);
        ss1 = fmaf(f[k + 1], f[k + 1], ss1);
      }
    }
    const float ws = warp_sum(ss0 + ss1);
    if (lane == 0) s_part[it & 1][warp] = ws;
    __syncthreads();
    float sum = 0.f;
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi) sum += s_part[it & 1][wi];
    const float rstd = row_rstd(sum, p.hidden, p.eps);
#pragma unroll
    for (int j = 0; j < NVT; ++j) {
      if (kCtaThreads * j >= nvec) break;  // uniform
      quant_vec_w<T>(p, w[j], x[j], row, tid + kCtaThreads * j, nvec, lpg, lpg_log2, lane, rstd, true);
    }
    load_row<T, NVT, RES, kCtaThreads>(cur, p, row + gridDim.x, row + gridDim.x < p.rows, tid, nvec);
  }
}

// Any hidden size, group size and alignment: one warp per row, element accesses.
template <typename T, bool RES>
__global__ void __launch_bounds__(512) nq_generic_kernel(const Params p) {
  using E = Elt<T>;
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int64_t wstride = static_cast<int64_t>(gridDim.x) * warps;
  const int K = p.hidden, gs = p.group_size;
  // loop on the block's first row: uniform, see nq_vec_kernel; a warp past the end reads and
  // stores nothing (k_end = 0) but joins the shuffles
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * warps; base < p.rows; base += wstride) {
    const int64_t row = base + (threadIdx.x >> 5);
    const bool active = row < p.rows;
    const int k_end = active ? K : 0;
    const void* xr = static_cast<const T*>(p.x) + row * p.x_stride;
    void* rr = RES ? static_cast<void*>(static_cast<T*>(p.residual) + row * p.r_stride) : nullptr;
    float ss = 0.f;
    for (int e = lane; e < k_end; e += 32) {
      float h = E::load1(xr, e);
      if (RES) h = E::store1(rr, e, h + E::load1(rr, e));
      ss = fmaf(h, h, ss);
    }
    const float rstd = row_rstd(warp_sum(ss), K, p.eps);
    // the passes below read the residual other lanes wrote: make those writes visible
    __syncwarp();
    const void* hr = RES ? static_cast<const void*>(rr) : xr;
    uint8_t* qrow = p.q + row * p.q_stride;
    for (int g0 = 0, g = 0; g0 < K; g0 += gs, ++g) {
      const int g1 = g0 + gs < k_end ? g0 + gs : k_end;
      float amax = 0.f;
      for (int e = g0 + lane; e < g1; e += 32)
        amax = fmaxf(amax, fabsf((E::load1(hr, e) * rstd) * load_weight(p.weight, p.weight_type, e)));
      const float scale = group_scale(warp_max(amax), p.scale_eps);
      const float r = div_rcp(scale);
      if (active && lane == 0) p.scales[row * p.s_row_stride + g * p.s_col_stride] = scale;
      for (int e = g0 + lane; e < g1; e += 32) {
        const float y = (E::load1(hr, e) * rstd) * load_weight(p.weight, p.weight_type, e);
        qrow[e] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(div_by(y, scale, r), __NV_SATFINITE, __NV_E4M3));
      }
    }
  }
}

}  // namespace nq
}  // namespace qlinear
