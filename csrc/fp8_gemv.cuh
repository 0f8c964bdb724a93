// Decode GEMV for block-quantized FP8 weights (DeepSeek-V3 recipe), M <= 4 activation rows.
// Device code only (no torch headers); fp8_gemv_launch.cu instantiates and launches it.
//
//   y[m, n] = sum_s  sx[m, g(s)] * sw[n / bn, g(s)] * sum_{k in step s} xq[m, k] * wq[n, k]   (+ bias[n])
//
// with wq e4m3 [N, K], sw fp32 [cdiv(N, bn), cdiv(K, bk)], xq e4m3 [M, K] and sx fp32 [M, cdiv(K, bk)]
// (the per-token-group quantization of qlinear.reference.fp8), a step s = 64 consecutive K columns,
// g(s) = 64 * s / bk its scale group. The reference sums deq(x) * deq(w) over all K in fp32; this
// sums each step's exact integer-like dot in fp32 first, then scales it: a different association,
// the same value up to fp32 rounding.
//
// Work split. A warp owns a tile of 16 weight rows and walks a subset of the K steps; lane
// (g = lane / 4, t = lane % 4) loads 16 bytes of rows g and g + 8 at columns 64 s + 16 t, i.e. the
// four lanes of a row read 64 contiguous bytes per step. The codes are widened to fp16 (exact for
// e4m3) and multiplied on the tensor cores with mma.m16n8k16 (fp32 accumulate): the tile is the
// MMA's A operand, the activations (tokens 0..M-1, zero columns up to 8) its B operand. Why MMA
// rather than per-lane FMAs: one MMA does the 256 multiply-adds that would otherwise cost ~600
// issue slots of conversions and FMAs, so even M = 4 stays far below the memory time; fp16
// inputs keep the products exact and the accumulation fp32 (an e4m3 MMA would skip the widening
// but Hopper's fp8 MMA accumulates with fewer bits). The K order inside an MMA is free as long as
// A and B use the same one: k slot (2t + i, 2t + 8 + i) of MMA j is byte 4 j + (0..3) of lane t's
// 16-byte chunk, on both operands.
//
// A block holds `tiles` tiles x `warps_k` warps; the warps of one tile interleave their steps
// (warp w takes steps w, w + warps_k, ...) so that together they read contiguous bytes, then add
// their partial sums through shared memory in a fixed order (deterministic).
//
// Fused activation quantization (kFused): x arrives in bf16 / fp16 and every block quantizes all
// of it into shared memory first (formula of qlinear.reference.fp8: scale = max(amax, eps) / 448,
// q = e4m3_rne(clamp(x / scale)), IEEE divisions) — worth it when blocks * M * K is small, since it
// saves the separate quantization launch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

namespace qlinear {
namespace gemv {

constexpr int kTileRows = 16;   // rows per warp tile (the MMA's M)
constexpr int kStepCols = 64;   // K columns per step: 4 lanes x 16 bytes
constexpr int kUnroll = 4;      // steps whose loads are in flight together per warp

struct Params {
  void* out;                // [M, N] OutT, row stride out_stride
  const void* x;            // kFused: [M, K] OutT (row stride x_stride); else e4m3 [M, K]
  const float* x_scale;     // !kFused: [M, G] fp32, strides (xs_s0, xs_s1)
  const uint8_t* w;         // e4m3 [N, K], row stride w_stride (bytes, multiple of 16)
  const float* w_scale;     // [cdiv(N, bn), G] fp32, strides (ws_s0, ws_s1)
  const void* bias;         // [N] OutT or nullptr
  int64_t out_stride, x_stride, xs_s0, xs_s1, w_stride, ws_s0, ws_s1;
  int N, K, G, bn, bk;
  int warps_k, tiles;       // warps per tile, tiles per block
  float scale_eps;
};

template <typename T>
__device__ __forceinline__ float to_f32(T v);
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }

// Four e4m3 codes -> two f16x2 (exact).
__device__ __forceinline__ void e4m3x4_to_f16x4(uint32_t v, uint32_t& lo, uint32_t& hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("{\n\t.reg .b16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
      "cvt.rn.f16x2.e4m3x2 %0, a;\n\tcvt.rn.f16x2.e4m3x2 %1, b;\n\t}"
      : "=r"(lo), "=r"(hi)
      : "r"(v));
#else
  __half2_raw a = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xFFFFu), __NV_E4M3);
  __half2_raw b = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v >> 16), __NV_E4M3);
  lo = static_cast<uint32_t>(a.x) | (static_cast<uint32_t>(a.y) << 16);
  hi = static_cast<uint32_t>(b.x) | (static_cast<uint32_t>(b.y) << 16);
#endif
}

// d += A (16x16 f16, row) * B (16x8 f16, col), fp32 accumulate.
__device__ __forceinline__ void mma_f16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                        uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Weights are read exactly once: keep them out of L1 and ask L2 to fetch the surrounding 256
// bytes (the other warps of the tile read them next).
__device__ __forceinline__ uint4 ld_stream(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// 16 weight codes of row a, 16 of row b and 16 activation codes (same columns) -> 4 MMAs.
__device__ __forceinline__ void step_mma(float (&c)[4], const uint4& wa, const uint4& wb, const uint4& xv) {
  const uint32_t A[4] = {wa.x, wa.y, wa.z, wa.w};
  const uint32_t B[4] = {wb.x, wb.y, wb.z, wb.w};
  const uint32_t X[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    uint32_t a_lo, a_hi, b_lo, b_hi, x_lo, x_hi;
    e4m3x4_to_f16x4(A[j], a_lo, a_hi);
    e4m3x4_to_f16x4(B[j], b_lo, b_hi);
    e4m3x4_to_f16x4(X[j], x_lo, x_hi);
    mma_f16(c, a_lo, b_lo, a_hi, b_hi, x_lo, x_hi);
  }
}

// Every block quantizes x [M, K] into shared memory: codes [M, K] (row stride K) and scales
// [M, G]. One warp per (row, group); two passes over the group (amax, then codes) re-read x from
// L1 rather than holding bk / 32 values per lane.
template <int M, typename T>
__device__ __forceinline__ void quantize_to_smem(const Params& p, uint8_t* sq, float* ss) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  const T* x = static_cast<const T*>(p.x);
  for (int pg = warp; pg < M * p.G; pg += nwarps) {
    const int m = pg / p.G;
    const int g = pg - m * p.G;
    const int k0 = g * p.bk;
    const int k1 = min(k0 + p.bk, p.K);
    const T* row = x + m * p.x_stride;
    float amax = 0.f;
#pragma unroll 1
    for (int k = k0 + lane; k < k1; k += 32) amax = fmaxf(amax, fabsf(to_f32(row[k])));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float scale = __fdiv_rn(fmaxf(amax, p.scale_eps), 448.f);
#pragma unroll 1
    for (int k = k0 + lane; k < k1; k += 32) {
      const float y = __fdiv_rn(to_f32(row[k]), scale);
      // satfinite == clamp to [-448, 448] for finite y; round to nearest even.
      sq[m * p.K + k] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(y, __NV_SATFINITE, __NV_E4M3));
    }
    if (lane == 0) ss[m * p.G + g] = scale;
  }
  __syncthreads();
}

template <int M, typename OutT, bool kFused>
__global__ void __launch_bounds__(512) fp8_block_gemv_kernel(const Params p) {
  static_assert(M >= 1 && M <= 4, "tokens 2t, 2t + 1 of lanes t = 0, 1 hold the outputs");
  extern __shared__ __align__(16) uint8_t smem[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int kw = warp % p.warps_k;        // K slice of this warp
  const int tile_in_block = warp / p.warps_k;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int n0 = (blockIdx.x * p.tiles + tile_in_block) * kTileRows;

  const int row_a = n0 + g;
  const int row_b = row_a + 8;
  const bool ok_a = row_a < p.N;
  const bool ok_b = row_b < p.N;
  const uint8_t* wa_ptr = p.w + static_cast<int64_t>(ok_a ? row_a : 0) * p.w_stride + 16 * t;
  const uint8_t* wb_ptr = p.w + static_cast<int64_t>(ok_b ? row_b : 0) * p.w_stride + 16 * t;
  const int steps = (p.K + kStepCols - 1) / kStepCols;
  const int stride_u = kUnroll * p.warps_k;

  // The weight loads of a batch are issued one batch ahead (and the first one before the fused
  // quantization), so the quantization prologue runs while the first loads are in flight.
  uint4 wa[kUnroll], wb[kUnroll];
  auto load_w = [&](int s0) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int s = s0 + u * p.warps_k;
      const bool in_k = s < steps && s * kStepCols + 16 * t < p.K;  // K % 16 == 0: all in or all out
      wa[u] = make_uint4(0, 0, 0, 0);
      wb[u] = make_uint4(0, 0, 0, 0);
      if (in_k && ok_a) wa[u] = ld_stream(wa_ptr + s * kStepCols);
      if (in_k && ok_b) wb[u] = ld_stream(wb_ptr + s * kStepCols);
    }
  };
  load_w(kw);

  float* red = reinterpret_cast<float*>(smem);  // [tiles][warps_k][32][4]
  const int red_floats = p.warps_k > 1 ? p.tiles * p.warps_k * 32 * 4 : 0;
  const uint8_t* xq;
  const float* xs;
  int64_t x_stride, xs_s0, xs_s1;
  if constexpr (kFused) {
    uint8_t* sq = smem + red_floats * sizeof(float);
    float* ss = reinterpret_cast<float*>(sq + ((M * p.K + 15) & ~15));
    quantize_to_smem<M, OutT>(p, sq, ss);
    xq = sq;
    xs = ss;
    x_stride = p.K;
    xs_s0 = p.G;
    xs_s1 = 1;
  } else {
    xq = static_cast<const uint8_t*>(p.x);
    xs = p.x_scale;
    x_stride = p.x_stride;
    xs_s0 = p.xs_s0;
    xs_s1 = p.xs_s1;
  }

  const bool x_row = g < M;
  const uint8_t* x_ptr = xq + (x_row ? g : 0) * x_stride + 16 * t;
  // Output columns of this lane: tokens 2t and 2t + 1 (C fragment of m16n8).
  const int m0 = 2 * t, m1 = 2 * t + 1;
  const float* ws_row = p.w_scale + static_cast<int64_t>(min(n0, p.N - 1) / p.bn) * p.ws_s0;
  const float* xs0 = xs + (m0 < M ? m0 : 0) * xs_s0;
  const float* xs1 = xs + (m1 < M ? m1 : 0) * xs_s0;

  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int s0 = kw; s0 < steps; s0 += stride_u) {
    uint4 xv[kUnroll];
    float sc0[kUnroll], sc1[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int s = s0 + u * p.warps_k;
      const bool in_k = s < steps && s * kStepCols + 16 * t < p.K;
      xv[u] = make_uint4(0, 0, 0, 0);
      if (in_k && x_row) xv[u] = *reinterpret_cast<const uint4*>(x_ptr + s * kStepCols);
      const int grp = min(s, steps - 1) * kStepCols / p.bk;
      const float sw = __ldg(ws_row + grp * p.ws_s1);
      sc0[u] = m0 < M ? sw * xs0[grp * xs_s1] : 0.f;
      sc1[u] = m1 < M ? sw * xs1[grp * xs_s1] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float c[4] = {0.f, 0.f, 0.f, 0.f};
      step_mma(c, wa[u], wb[u], xv[u]);
      acc[0] = fmaf(c[0], sc0[u], acc[0]);
      acc[1] = fmaf(c[1], sc1[u], acc[1]);
      acc[2] = fmaf(c[2], sc0[u], acc[2]);
      acc[3] = fmaf(c[3], sc1[u], acc[3]);
    }
    load_w(s0 + stride_u);
  }

  if (p.warps_k > 1) {
    float4* r4 = reinterpret_cast<float4*>(red);
    r4[(tile_in_block * p.warps_k + kw) * 32 + lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    __syncthreads();
    if (kw != 0) return;
    for (int w = 1; w < p.warps_k; ++w) {
      const float4 v = r4[(tile_in_block * p.warps_k + w) * 32 + lane];
      acc[0] += v.x;
      acc[1] += v.y;
      acc[2] += v.z;
      acc[3] += v.w;
    }
  }
  OutT* out = static_cast<OutT*>(p.out);
  const OutT* bias = static_cast<const OutT*>(p.bias);
  const float ba = (bias != nullptr && ok_a) ? to_f32(bias[row_a]) : 0.f;
  const float bb = (bias != nullptr && ok_b) ? to_f32(bias[row_b]) : 0.f;
  if (m0 < M) {
    if (ok_a) out[m0 * p.out_stride + row_a] = from_f32<OutT>(acc[0] + ba);
    if (ok_b) out[m0 * p.out_stride + row_b] = from_f32<OutT>(acc[2] + bb);
  }
  if (m1 < M) {
    if (ok_a) out[m1 * p.out_stride + row_a] = from_f32<OutT>(acc[1] + ba);
    if (ok_b) out[m1 * p.out_stride + row_b] = from_f32<OutT>(acc[3] + bb);
  }
}

}  // namespace gemv
}  // namespace qlinear
