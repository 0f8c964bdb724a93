// W4A16 GEMM for M = 17 .. a few hundred rows of activations on mma.sync tensor cores, qlinear's packed
// layout (w4a16_gemv.cuh's header has it). Device code only (no torch headers).
//
//   out[m, n] = sum_k x[m, k] * bf16((q[n, k] - zero[grp(k), n]) * scale[grp(k), n])  (+ bias[n])
//
// The weight is dequantized in registers, scaled there (one rounding to x's dtype, the rounding of
// the dequantize + cuBLAS path), and is the A operand of mma.m16n8k16; x is the B operand, staged in
// shared memory, where every warp of the CTA reads it. The decode kernels read x per warp from L2,
// which at M >= 32 costs more than the weights; here a CTA's x tile is fetched once for all its warps.
//
// Tiling: a CTA owns WR row tiles of 16 rows (one per warp) x NT token tiles of 8 tokens x the
// superblocks [sb_lo, sb_hi) of its K split (blockIdx.y of gridDim.y). Per superblock (128 k) a warp
//  - holds its rows' 16 words (lane (g, t): words 4t .. 4t+3 of rows g and g + 8, two 16-byte loads,
//    issued one superblock ahead), their group scale and zero;
//  - per plane i (16 k): the A fragment from a_frag (exact q - zero), times the scale (packed fma),
//    then NT mma.sync with B fragments x[token][16 i + 4 t .. + 3] read from shared memory (8 bytes
//    per lane: the k order inside a plane that a_frag's A slots use, w4a16_gemv.cuh's header).
// x stages: a ring of ST superblocks of [8 NT tokens][128 k] in x's dtype, rows padded to 288 bytes
// (8-byte reads of lanes (g, t) hit distinct banks: g * 288 mod 128 = 0, 32, 64, 96), filled with
// 16-byte cp.async by all threads ST - 1 superblocks ahead (tokens >= M and columns >= K
// zero-filled); one __syncthreads per superblock orders the ring.
// K split: gridDim.y > 1 CTAs per output tile store fp32 partials [warp][nt][c][lane] to the
// workspace; the last to arrive (counter, reset after use) sums them in split order (deterministic),
// adds the bias and stores.
#pragma once

#include "w4a16_gemv.cuh"

namespace qlinear {
namespace w4a16g {

constexpr int kGemmPitch = 288;  // bytes per token row of an x stage (128 k of 2 bytes + 32 pad)

struct GemmParams {
  Params p;           // operands (w4a16_gemv.cuh; group of superblock sb: group_of_sb(sb, grp_mul))
  float* ws;          // K split: fp32 partials [tile][split][WR * NT * 128]
  int* counters;      // K split: one per output tile (bx + gridDim.x * bz), zero between launches
  int sb_per_split;   // superblocks per K split
};

__device__ __forceinline__ void gemm_cp16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gemm_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void gemm_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// a * s + (-0) on packed halves: the scale applied to an exact (q - zero) pair, one rounding
template <typename XT>
__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t s);
template <>
__device__ __forceinline__ uint32_t hmul2<__nv_bfloat16>(uint32_t a, uint32_t s) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(s), "r"(0x80008000u));
  return d;
}
template <>
__device__ __forceinline__ uint32_t hmul2<__half>(uint32_t a, uint32_t s) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(s));
  return d;
}

// A scale in x's dtype, twice (both halves of a packed register).
template <typename XT>
__device__ __forceinline__ uint32_t pack2(float v);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float v) {
  const uint32_t h = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  return h * 0x00010001u;
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float v) {
  const uint32_t h = __half_as_ushort(__float2half_rn(v));
  return h * 0x00010001u;
}

// One superblock of a warp's 16 rows: the weight words, and the scale / -(magic + zero) pairs of
// rows g and g + 8.
struct GemmW {
  uint4 w[2];
  uint32_t s2[2];
  uint32_t nz[2];
};

template <typename XT>
__device__ __forceinline__ void gemm_load_w(GemmW& c, const Params& p, const uint32_t* const (&wrow)[2],
                                            const int (&rows)[2], int sb) {
  c.w[0] = load_stream(wrow[0] + sb * 16);
  c.w[1] = load_stream(wrow[1] + sb * 16);
  const int64_t gb = static_cast<int64_t>(group_of_sb(sb, p.grp_mul)) * p.n;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    c.s2[h] = pack2<XT>(load_f(p.scales, gb + rows[h], p.scale_kind));
    const uint32_t z = p.zeros != nullptr ? static_cast<uint32_t>(__ldg(p.zeros + gb + rows[h])) : 8u;
    c.nz[h] = nzero<XT>(z);
  }
}

// x of superblock sb into stage buffer `stage` (shared address): 16-byte pieces c = tid, tid + T, ..
// of [8 NT tokens][16 pieces].
template <int NT, int T>
__device__ __forceinline__ void gemm_stage_x(uint32_t stage, const Params& p, int tok0, int sb, int tid) {
  static_assert((8 * NT * 16) % T == 0, "every thread copies the same number of pieces");
#pragma unroll
  for (int it = 0; it < 8 * NT * 16 / T; ++it) {
    const int c = tid + it * T;
    const int tok = c >> 4, piece = c & 15;
    const int col = sb * 128 + piece * 8;
    const bool ok = tok0 + tok < p.m && col < p.k;
    const char* src = static_cast<const char*>(p.x) +
                      (static_cast<int64_t>(ok ? tok0 + tok : 0) * p.x_stride + (ok ? col : 0)) * 2;
    gemm_cp16(stage + tok * kGemmPitch + piece * 16, src, ok ? 16 : 0);
  }
}

// stage: the superblock's x in shared memory (generic pointer: plain loads the compiler may schedule
// ahead of the mma, and orders against __syncthreads).
template <typename XT, int NT>
__device__ __forceinline__ void gemm_superblock(float (&acc)[NT][4], const GemmW& c, const unsigned char* stage,
                                                int lane, uint32_t magic) {
  const int g = lane >> 2, t = lane & 3;
  uint32_t lo[4], hi[4];
  split_words(c.w[0], lo);
  split_words(c.w[1], hi);
  const unsigned char* xb = stage + g * kGemmPitch + 8 * t;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    uint32_t a[4];
    a_frag_i<XT>(i, a, lo, hi, c.nz[0], c.nz[1], magic);
    a[0] = hmul2<XT>(a[0], c.s2[0]);
    a[2] = hmul2<XT>(a[2], c.s2[0]);
    a[1] = hmul2<XT>(a[1], c.s2[1]);
    a[3] = hmul2<XT>(a[3], c.s2[1]);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint2 b = *reinterpret_cast<const uint2*>(xb + nt * 8 * kGemmPitch + i * 32);
      Mma<XT>::mma(acc[nt], a, b.x, b.y);
    }
  }
}

// Dynamic shared memory of a launch: the x ring.
__host__ __device__ constexpr int gemm_smem_bytes(int nt, int st) { return st * 8 * nt * kGemmPitch; }

template <typename XT, int WR, int NT, int ST>
__global__ void __launch_bounds__(32 * WR, 1) w4_gemm_kernel(const GemmParams gp) {
  static_assert(ST >= 2, "the x ring needs two stages or more");
  constexpr int T = 32 * WR;
  extern __shared__ __align__(16) unsigned char gemm_smem[];
  unsigned char* smem = gemm_smem;
  const Params& p = gp.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * 16 * WR + warp * 16;
  const int tok0 = blockIdx.z * 8 * NT;
  const int sb_lo = blockIdx.y * gp.sb_per_split;
  const int sb_hi = min(sb_lo + gp.sb_per_split, p.nsb);
  const uint32_t ring = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  constexpr uint32_t kStage = 8 * NT * kGemmPitch;

  int rows[2];
  const uint32_t* wrow[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    rows[h] = min(row0 + g + 8 * h, p.n - 1);  // rows past N recompute row N - 1, never stored
    wrow[h] = p.qw + static_cast<int64_t>(rows[h]) * p.qw_stride + 4 * t;
  }
  uint32_t magic;
  asm("mov.b32 %0, %1;" : "=r"(magic) : "n"(Mma<XT>::kMagic));

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;

  // ring prologue: superblocks sb_lo .. sb_lo + ST - 2 (one group each, empty past the split)
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (sb_lo + s < sb_hi) gemm_stage_x<NT, T>(ring + s * kStage, p, tok0, sb_lo + s, tid);
    gemm_commit();
  }
  GemmW cur, nxt;
  if (sb_lo < sb_hi) gemm_load_w<XT>(cur, p, wrow, rows, sb_lo);
  for (int sb = sb_lo; sb < sb_hi; ++sb) {
    const int j = sb - sb_lo;
    gemm_wait<ST - 2>();  // this thread's pieces of superblock sb have landed
    __syncthreads();      // everyone's have, and everyone is done with superblock sb - 1's stage
    if (sb + ST - 1 < sb_hi) gemm_stage_x<NT, T>(ring + ((j + ST - 1) % ST) * kStage, p, tok0, sb + ST - 1, tid);
    gemm_commit();
    if (sb + 1 < sb_hi) gemm_load_w<XT>(nxt, p, wrow, rows, sb + 1);
    gemm_superblock<XT, NT>(acc, cur, smem + (j % ST) * kStage, lane, magic);
    cur = nxt;
  }
  gemm_wait<0>();

  const int tile = blockIdx.x + gridDim.x * blockIdx.z;
  constexpr int V = NT * 4;  // accumulator values per lane
  if (gridDim.y > 1) {
    const int64_t tile_floats = static_cast<int64_t>(WR) * V * 32;
    float* mine = gp.ws + (static_cast<int64_t>(tile) * gridDim.y + blockIdx.y) * tile_floats;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) __stcg(mine + ((warp * V) + nt * 4 + c) * 32 + lane, acc[nt][c]);
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (tid == 0) last = atomicAdd(gp.counters + tile, 1) == static_cast<int>(gridDim.y) - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    if (tid == 0) gp.counters[tile] = 0;  // ready for the next launch (graph replays)
    const float* base = gp.ws + static_cast<int64_t>(tile) * gridDim.y * tile_floats;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float s = 0.f;
        for (int sp = 0; sp < static_cast<int>(gridDim.y); ++sp)
          s += __ldcg(base + sp * tile_floats + ((warp * V) + nt * 4 + c) * 32 + lane);
        acc[nt][c] = s;
      }
  }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int row = row0 + g + (c >= 2 ? 8 : 0);
      const int tok = tok0 + nt * 8 + 2 * t + (c & 1);
      if (row < p.n && tok < p.m) {
        float s = acc[nt][c];
        if (p.bias != nullptr) s += load_f(p.bias, row, p.bias_kind);
        static_cast<XT*>(p.out)[static_cast<int64_t>(tok) * p.out_stride + row] = Mma<XT>::from_f(s);
      }
    }
}

// Compiled (WR, NT, ST) as WR * 1000 + NT * 10 + ST (NT = tokens / 8).
constexpr int kGemmCodes[] = {8163, 8083, 8043, 4163, 4083, 4043, 8164, 8084};

template <int C>
struct GemmCode {
  static constexpr int WR = C / 1000, NT = C / 10 % 100, ST = C % 10;
  static_assert(WR >= 1 && WR <= 16 && NT >= 1 && ST >= 2, "a GEMM code is WR * 1000 + NT * 10 + ST");
};

}  // namespace w4a16g
}  // namespace qlinear
