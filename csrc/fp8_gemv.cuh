// One-launch FP8 block-scaled decode GEMM for M <= 16 rows of activations (device code, no torch).
//
//   y[m, n] = bias[n] + sum_kb sw[n / 128, kb] * sx[m, kb] * sum_{k in kb} q[m, k] * w[n, k]
//
// x [M, K] bf16 / fp16 is quantized in the kernel per row and 128-group exactly as
// qlinear.ops.per_token_group_quant_fp8 does (norm_quant.cuh's helpers: scale = max(amax, eps) / 448
// and q = e4m3_rn_satfinite(x / scale), both IEEE-rounded divisions), so codes and scales are the
// quantize-then-GEMM path's bit for bit; only the fp32 summation order differs.
//
// Swap AB on mma.sync.m16n8k32 (e4m3 x e4m3 -> f32): 16 weight rows are the MMA's M side (A, row =
// K-major, the weight's own layout), 8 tokens the N side (B; two token tiles for M > 8; tokens
// >= M get zero fragments and no loads). Fragments (PTX ISA, m16n8k32 .e4m3): lane (g = lane / 4,
// t = lane % 4) holds a0 / a2 = row g at k {4t..4t+3} / {16+4t..16+4t+3}, a1 / a3 = row g + 8 at the
// same k, b0 / b1 = token g at those k; c0, c1 = (row g, tokens 2t, 2t+1), c2, c3 = row g + 8.
// The dot product is invariant under any k permutation applied to A and B alike, so lane t
// feeds the MMA from the bytes it loaded itself: per 128-k block it reads 16 contiguous bytes at
// k = 16t and at k = 64 + 16t of its rows (each 16-byte load instruction of the warp then covers 64
// contiguous bytes of 8 rows: whole 32-byte sectors), and MMA step s = 0..3 of the block takes
// bytes 8 (s % 2) .. +7 of chunk s / 2 (low word = a0 / b0, high word = a2 / b1). No shared memory,
// no ldmatrix. x is quantized for token g at the same 32 k; the group's amax is a max over the 4
// lanes of a token (xor-shuffles 1, 2).
//
// Work split: a CTA owns R row tiles of 16 rows (x quantized once per k-block and reused for the
// R tiles) and the k-blocks [s * kbs, (s + 1) * kbs) of split s = blockIdx.y; its W warps take
// those k-blocks round-robin (neighbouring warps read neighbouring 128-byte pieces of each row).
// Each k-block's 4 MMA steps go to a fresh fragment, then acc += frag * (sw * sx[token]). The warps
// reduce through shared memory; with S > 1 splits each CTA stores its fp32 partial tile into the
// workspace and the last-arriving CTA of a tile group (arrival counter) sums the S partials in split
// order (deterministic), adds the bias, stores, and resets the counter to 0 (graph replays reuse it).
// PF = 1: the next k-block's weights are loaded before this one's MMAs (two register stages).
// PF = 2, 3: a ring of PF + 1 register stages, PF k-blocks of weights in flight while one is
// multiplied (more bytes in flight per SM for the bandwidth-bound large shapes).
// XA (x ahead, R = 1, PF 1 or 2): the warp's next block's x operands (codes and scales, or raw x) are
// loaded before this block is multiplied, so a block no longer starts with an L2 round trip for its
// x; without XA they are loaded at the start of their own block.
// PDL: the first k-block's weights and scales are requested before griddepcontrol.wait, x after.
//
// PQ (pre-quantized x): x arrives as e4m3 codes [M, K] (row stride x_stride bytes) plus fp32 group
// scales xs [M, K / 128] from per_token_group_quant_fp8 (launched just before, the GEMM with PDL so
// its first weight loads overlap the quantizer); the B fragments are the codes at the same k
// positions (16 bytes at k = 16t and 64 + 16t), so every CTA skips the quantization of M x K values
// that otherwise grows with M (each CTA repeats it for its k range).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "norm_quant.cuh"
#include "pdl.cuh"

namespace qlinear {
namespace fp8g {

struct Params {
  void* out;
  int64_t out_stride;  // elements between rows of out
  const void* x;
  int64_t x_stride;  // elements between rows of x
  const uint8_t* w;  // e4m3 [n, k]
  int64_t w_stride;  // bytes between rows
  const float* wsi;  // [cdiv(n, 128), k / 128]
  int64_t wsi_s0, wsi_s1;
  const void* bias;  // [n] in x's dtype or null
  const float* xs;  // PQ: x's group scales [m, kb], strides xs_s0, xs_s1 (x then holds e4m3 codes)
  int64_t xs_s0, xs_s1;
  float* ws;         // split partials (splits > 1)
  int* counters;     // one per tile group, zero between launches
  int m, n, kb;      // kb = k / 128
  int splits, kb_per_split;
  float scale_eps;
  int carveout;      // host side only: the launch's preferred shared-memory carveout, percent (-1: none; pdl.cuh)
};

template <typename XT>
struct XTraits;

template <>
struct XTraits<__nv_bfloat16> {
  static __device__ __forceinline__ float lo(uint32_t u) { return __uint_as_float(u << 16); }
  static __device__ __forceinline__ float hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
  static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
};

template <>
struct XTraits<__half> {
  static __device__ __forceinline__ float lo(uint32_t u) { return __half2float(__ushort_as_half(static_cast<unsigned short>(u & 0xffffu))); }
  static __device__ __forceinline__ float hi(uint32_t u) { return __half2float(__ushort_as_half(static_cast<unsigned short>(u >> 16))); }
  static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
};

// Streamed weight bytes (each read once): read-only path, no L1 allocation, 256-byte L2 fetch.
__device__ __forceinline__ uint4 ld_weight(const uint8_t* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ void mma_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One k-block of weights for R row tiles: [r][h][c] = row g + 8 h of tile r, chunk c (k = 64 c + 16 t).
template <int R>
struct WStage {
  uint4 v[R][2][2];
  float sw[R];
};

// Weight rows are kept as 32-bit indices (64-bit pointers would cost 4 R more registers).
template <int R>
__device__ __forceinline__ void load_stage(WStage<R>& st, const Params& p, const int (&rows)[R][2], int t, int kb) {
  const uint8_t* base = p.w + static_cast<int64_t>(kb) * 128 + 16 * t;
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint8_t* row = base + static_cast<int64_t>(rows[r][h]) * p.w_stride;
#pragma unroll
      for (int c = 0; c < 2; ++c) st.v[r][h][c] = ld_weight(row + c * 64);
    }
    st.sw[r] = __ldg(p.wsi + static_cast<int64_t>(rows[r][0] / 128) * p.wsi_s0 + static_cast<int64_t>(kb) * p.wsi_s1);
  }
}

// Raw x of one token tile at k-block kb for this lane (quant_raw's input): 2 x 2 16-byte loads at
// elements 64 c + 16 t (+ 8), zero for tokens >= M.
template <typename XT>
__device__ __forceinline__ void load_raw(uint4 (&raw)[2][2], const XT* xrow, bool valid, int kb, int t) {
  if (valid) {
    const uint4* p = reinterpret_cast<const uint4*>(xrow + static_cast<int64_t>(kb) * 128 + 16 * t);
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      raw[c][0] = p[c * 8];
      raw[c][1] = p[c * 8 + 1];
    }
  } else {
#pragma unroll
    for (int c = 0; c < 2; ++c) raw[c][0] = raw[c][1] = make_uint4(0, 0, 0, 0);
  }
}

// x of one token tile at k-block kb quantized for this lane from its raw values: q[c * 4 + j] =
// codes of k = 64 c + 16 t + 4 j .. +3 (low byte first); returns the group scale (0 for tokens >= M,
// whose codes are 0).
template <typename XT>
__device__ __forceinline__ float quant_raw(uint32_t (&q)[8], const uint4 (&raw)[2][2], bool valid, float eps) {
  // the 32 values are converted twice (amax, then quotients) rather than held as fp32: that would
  // cost 32 registers per token tile
  float amax = 0.f;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t u[4] = {raw[c][h].x, raw[c][h].y, raw[c][h].z, raw[c][h].w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
        amax = fmaxf(amax, fmaxf(fabsf(XTraits<XT>::lo(u[j])), fabsf(XTraits<XT>::hi(u[j]))));
    }
  }
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  const float scale = nq::div_by(fmaxf(amax, eps), nq::kE4m3Max, nq::kRcpE4m3Max);
  const float rs = nq::div_rcp(scale);
#pragma unroll
  for (int c = 0; c < 2; ++c) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t u[4] = {raw[c][h].x, raw[c][h].y, raw[c][h].z, raw[c][h].w};
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        // word c * 4 + 2h + j holds elements 8h + 4j .. +3 of chunk c = two packed pairs
        const uint32_t u0 = u[2 * j], u1 = u[2 * j + 1];
        q[c * 4 + h * 2 + j] =
            nq::e4m3x2(nq::div_by(XTraits<XT>::lo(u0), scale, rs), nq::div_by(XTraits<XT>::hi(u0), scale, rs)) |
            (nq::e4m3x2(nq::div_by(XTraits<XT>::lo(u1), scale, rs), nq::div_by(XTraits<XT>::hi(u1), scale, rs)) << 16);
      }
    }
  }
  return valid ? scale : 0.f;
}

// acc += frag * sw * sx per C column of one row tile's k-block fragment: c0, c2 are token 2t's (rows g,
// g + 8), c1, c3 token 2t + 1's; sxc = those tokens' group scales per token tile.
template <int NT>
__device__ __forceinline__ void scale_add(float (&acc)[NT][4], const float (&frag)[NT][4], float sw,
                                          const float (&sxc)[NT][2]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const float s0 = sw * sxc[nt][0], s1 = sw * sxc[nt][1];
    acc[nt][0] = fmaf(frag[nt][0], s0, acc[nt][0]);
    acc[nt][1] = fmaf(frag[nt][1], s1, acc[nt][1]);
    acc[nt][2] = fmaf(frag[nt][2], s0, acc[nt][2]);
    acc[nt][3] = fmaf(frag[nt][3], s1, acc[nt][3]);
  }
}

// One k-block of one 16-row tile, whatever holds its operands (registers here, ldmatrix fragments in
// fp8_tma.cuh): its 4 k-steps of NT mma.sync into a fresh fragment, then acc += frag * sw * sx (the
// block's scales apply to the block's sum). a(s, i): A register i of k-step s; b(s, nt, j): B register j
// of token tile nt at k-step s.
template <int NT, typename AReg, typename BReg>
__device__ __forceinline__ void kblock_mma(float (&acc)[NT][4], AReg a, BReg b, float sw, const float (&sxc)[NT][2]) {
  float frag[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) frag[nt][0] = frag[nt][1] = frag[nt][2] = frag[nt][3] = 0.f;
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_e4m3(frag[nt], a(s, 0), a(s, 1), a(s, 2), a(s, 3), b(s, nt, 0), b(s, nt, 1));
  scale_add<NT>(acc, frag, sw, sxc);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// The MMAs of one k-block for R row tiles: acc += (W_tile . x codes) * sw * sx per token column, from
// the weight stage st, the x codes q (quant_raw's order) and the lane's C-column scales sxc. K-step s
// reads bytes 8 (s % 2) .. +7 of chunk s / 2: A registers a0 / a2 = words 2 (s % 2) / +1 of rows g
// (h = 0), a1 / a3 the same of rows g + 8 (h = 1); B = codes words 2 s, 2 s + 1.
template <int NT, int R>
__device__ __forceinline__ void block_mma(float (&acc)[R][NT][4], const WStage<R>& st, const uint32_t (&q)[NT][8],
                                          const float (&sxc)[NT][2]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
    kblock_mma<NT>(
        acc[r], [&](int s, int i) { return word(st.v[r][i & 1][s >> 1], (s & 1) * 2 + (i >> 1)); },
        [&](int s, int nt, int j) { return q[nt][2 * s + j]; }, st.sw[r], sxc);
}

// The x operands of one k-block for this lane as loaded, before any arithmetic: pre-quantized, the
// codes at the k positions quant_raw produces (two 16-byte loads per token tile) and the scales of
// the lane's C columns (tokens 2t, 2t + 1); otherwise the raw x (four 16-byte loads per token tile).
// Tokens >= M get zeros.
template <int NT, bool PQ>
struct XLoad {
  uint4 v[NT][2];
  float s[NT][2];
};
template <int NT>
struct XLoad<NT, false> {
  uint4 v[NT][2][2];
};

// Loaded x of token tile nt at k-block kb.
template <typename XT, int NT, bool PQ>
__device__ __forceinline__ void load_x_nt(XLoad<NT, PQ>& xl, int nt, const void* xrow, bool xvalid, int kb, int t,
                                          const Params& p) {
  if constexpr (PQ) {
    xl.v[nt][0] = xl.v[nt][1] = make_uint4(0, 0, 0, 0);
    if (xvalid) {
      const uint4* c =
          reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(xrow) + static_cast<int64_t>(kb) * 128 + 16 * t);
      xl.v[nt][0] = c[0];
      xl.v[nt][1] = c[4];
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int tok = nt * 8 + 2 * t + j;
      xl.s[nt][j] = tok < p.m ? __ldg(p.xs + static_cast<int64_t>(tok) * p.xs_s0 + static_cast<int64_t>(kb) * p.xs_s1)
                              : 0.f;
    }
  } else {
    load_raw<XT>(xl.v[nt], static_cast<const XT*>(xrow), xvalid, kb, t);
  }
}

// The B operands of token tile nt (codes, quant_raw's order) and its C-column scales from loaded x.
template <typename XT, int NT, bool PQ>
__device__ __forceinline__ void x_operands_nt(uint32_t (&q)[8], float (&sxc)[2], const XLoad<NT, PQ>& xl, int nt,
                                              bool xvalid, int t, const Params& p) {
  if constexpr (PQ) {
    const uint4 c0 = xl.v[nt][0], c1 = xl.v[nt][1];
    q[0] = c0.x, q[1] = c0.y, q[2] = c0.z, q[3] = c0.w;
    q[4] = c1.x, q[5] = c1.y, q[6] = c1.z, q[7] = c1.w;
    sxc[0] = xl.s[nt][0];
    sxc[1] = xl.s[nt][1];
  } else {
    const float sx = quant_raw<XT>(q, xl.v[nt], xvalid, p.scale_eps);
    // C columns of this lane are tokens 2t, 2t + 1, whose scales lanes 8t and 8t + 4 computed
    sxc[0] = __shfl_sync(0xffffffffu, sx, 8 * t);
    sxc[1] = __shfl_sync(0xffffffffu, sx, 8 * t + 4);
  }
}

template <typename XT, int NT, bool PQ>
__device__ __forceinline__ void load_x(XLoad<NT, PQ>& xl, const void* const (&xrow)[NT], const bool (&xvalid)[NT],
                                       int kb, int t, const Params& p) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) load_x_nt<XT, NT, PQ>(xl, nt, xrow[nt], xvalid[nt], kb, t, p);
}

// One k-block. XA: from x loaded earlier (xl); otherwise each token tile's x is loaded into xl and
// used at once (one token tile's raw x live at a time).
template <typename XT, int NT, int R, bool PQ, bool XA>
__device__ __forceinline__ void do_block(float (&acc)[R][NT][4], const WStage<R>& st, XLoad<NT, PQ>& xl,
                                         const void* const (&xrow)[NT], const bool (&xvalid)[NT], int kb, int t,
                                         const Params& p) {
  uint32_t q[NT][8];
  float sxc[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    if constexpr (!XA) load_x_nt<XT, NT, PQ>(xl, nt, xrow[nt], xvalid[nt], kb, t, p);
    x_operands_nt<XT, NT, PQ>(q[nt], sxc[nt], xl, nt, xvalid[nt], t, p);
  }
  block_mma<NT, R>(acc, st, q, sxc);
}

// Threads per CTA an instance is compiled for, i.e. its register cap (65536 / threads): each tile
// of a weight stage holds 17 registers (PF + 1 stages), each token tile 24 (raw x + codes; 8 with
// PQ) and 8 R accumulators; XA (R = 1 only) adds a second set of loaded x (16 registers per token
// tile, 10 with PQ).
__host__ __device__ constexpr int max_threads(int NT, int R, int PF, bool PQ, bool XA = false) {
  return XA ? (PF <= 1 && (NT == 1 || PQ) ? 512 : 384)
            : R == 1 ? (PF <= 1 || (PF == 2 && (NT == 1 || PQ)) ? 512 : (PF == 2 || NT == 1 || PQ ? 384 : 256))
                     : (R == 2 && NT == 1 ? (PF == 0 ? 512 : (PF == 1 ? 384 : 256)) : 256);
}

// Shared memory of a launch: the warps' partial tiles plus the last-arrival flag.
inline size_t smem_bytes(int R, int NT, int warps) {
  return sizeof(float) * static_cast<size_t>(warps) * R * NT * 128 + 16;
}

// The CTA's epilogue: the warps' accumulators -> shared memory [warp][v][lane] (conflict-free), then
// one thread per value sums the warps; with splits > 1 each CTA publishes its partial tile to the
// workspace and the last-arriving one sums the splits in order, adds the bias and stores.
template <typename XT, int NT, int R>
__device__ __forceinline__ void reduce_store(const float (&acc)[R][NT][4], float* red, const Params& p, int tg,
                                             int split, int row0) {
  constexpr int V = R * NT * 4;  // accumulator values per lane
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const float* flat = &acc[0][0][0];
#pragma unroll
  for (int v = 0; v < V; ++v) red[(warp * V + v) * 32 + lane] = flat[v];
  __syncthreads();

  constexpr int NV = V * 32;
  if (p.splits > 1) {
    float* slot = p.ws + (static_cast<int64_t>(tg) * p.splits + split) * NV;
    for (int idx = threadIdx.x; idx < NV; idx += blockDim.x) {
      float s = 0.f;
      for (int w = 0; w < W; ++w) s += red[w * NV + idx];
      __stcg(slot + idx, s);
    }
    // classic last-block reduction: publish the partial, count arrivals, the last CTA sums
    __threadfence();
    __syncthreads();
    int* flag = reinterpret_cast<int*>(red + static_cast<size_t>(W) * NV);
    if (threadIdx.x == 0) *flag = atomicAdd(p.counters + tg, 1) == p.splits - 1;
    __syncthreads();
    if (!*flag) return;
    __threadfence();
    if (threadIdx.x == 0) p.counters[tg] = 0;  // ready for the next launch (graph replays)
  }
  const float* base = p.ws + static_cast<int64_t>(tg) * p.splits * NV;
  for (int idx = threadIdx.x; idx < NV; idx += blockDim.x) {
    const int v = idx >> 5, ln = idx & 31;
    const int i = v & 3, nt = (v >> 2) % NT, r = v / (4 * NT);
    const int row = row0 + r * 16 + (ln >> 2) + (i >> 1) * 8;
    const int tok = nt * 8 + 2 * (ln & 3) + (i & 1);
    if (row >= p.n || tok >= p.m) continue;
    float s = 0.f;
    if (p.splits > 1) {
      for (int sp = 0; sp < p.splits; ++sp) s += __ldcg(base + static_cast<int64_t>(sp) * NV + idx);
    } else {
      for (int w = 0; w < W; ++w) s += red[w * NV + idx];
    }
    if (p.bias != nullptr) s += XTraits<XT>::to(static_cast<const XT*>(p.bias)[row]);
    static_cast<XT*>(p.out)[static_cast<int64_t>(tok) * p.out_stride + row] = XTraits<XT>::from(s);
  }
}

template <typename XT, int NT, int R, int PF, bool PQ, bool XA>
__global__ void __launch_bounds__(max_threads(NT, R, PF, PQ, XA), 1) fp8_gemv_kernel(const Params p) {
  extern __shared__ float red[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tg = blockIdx.x, split = blockIdx.y;
  const int row0 = tg * R * 16;
  const int kb_lo = split * p.kb_per_split;
  const int kb_hi = min(kb_lo + p.kb_per_split, p.kb);

  int rows[R][2];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    // rows past N read row N - 1 (valid memory); their results are never stored. A 16-row tile
    // lies inside one 128-row scale block, so row g's block is the tile's.
#pragma unroll
    for (int h = 0; h < 2; ++h) rows[r][h] = min(row0 + r * 16 + h * 8 + g, p.n - 1);
  }

  float acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[r][nt][0] = acc[r][nt][1] = acc[r][nt][2] = acc[r][nt][3] = 0.f;

  int kb = kb_lo + warp;
  constexpr int NS = PF + 1;  // register stages
  WStage<R> st[NS];
  // the weights do not depend on the previous grid: the first PF k-blocks (one without PF) are
  // requested before the wait
#pragma unroll
  for (int i = 0; i < (PF > 0 ? PF : 1); ++i)
    if (kb + i * W < kb_hi) load_stage<R>(st[i], p, rows, t, kb + i * W);

  pdl::wait();
  pdl::launch_dependents();

  const void* xrow[NT];
  bool xvalid[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int m = nt * 8 + g;
    xvalid[nt] = m < p.m;
    const int64_t off = static_cast<int64_t>(xvalid[nt] ? m : 0) * p.x_stride;
    if constexpr (PQ)
      xrow[nt] = static_cast<const uint8_t*>(p.x) + off;
    else
      xrow[nt] = static_cast<const XT*>(p.x) + off;
  }

  // with XA the x operands of the warp's next block, loaded before this block is multiplied; without,
  // each block's own x, loaded at its start
  XLoad<NT, PQ> xn;
  if constexpr (XA) {
    if (kb < kb_hi) load_x<XT, NT, PQ>(xn, xrow, xvalid, kb, t, p);
  }
  if constexpr (PF > 0) {
    // ring of NS stages: block kb + i W sits in stage i; stage (i + PF) % NS is refilled with block
    // kb + (i + PF) W before block kb + i W is multiplied (stage indices are compile-time constants)
    for (; kb < kb_hi; kb += NS * W) {
#pragma unroll
      for (int i = 0; i < NS; ++i) {
        const int kbi = kb + i * W;
        if (kbi >= kb_hi) break;
        if (kbi + PF * W < kb_hi) load_stage<R>(st[(i + PF) % NS], p, rows, t, kbi + PF * W);
        if constexpr (XA) {
          XLoad<NT, PQ> xc = xn;
          if (kbi + W < kb_hi) load_x<XT, NT, PQ>(xn, xrow, xvalid, kbi + W, t, p);
          do_block<XT, NT, R, PQ, true>(acc, st[i], xc, xrow, xvalid, kbi, t, p);
        } else {
          do_block<XT, NT, R, PQ, false>(acc, st[i], xn, xrow, xvalid, kbi, t, p);
        }
      }
    }
  } else {
    static_assert(!XA, "XA needs a weight ring (PF > 0)");
    for (; kb < kb_hi; kb += W) {
      if (kb != kb_lo + warp) load_stage<R>(st[0], p, rows, t, kb);
      do_block<XT, NT, R, PQ, false>(acc, st[0], xn, xrow, xvalid, kb, t, p);
    }
  }

  reduce_store<XT, NT, R>(acc, red, p, tg, split, row0);
}

}  // namespace fp8g
}  // namespace qlinear
