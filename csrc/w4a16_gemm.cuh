// W4A16 GEMM for M = 17 .. a few hundred rows of activations on mma.sync tensor cores, qlinear's packed
// layout (w4a16_gemv.cuh's header has it). Device code only (no torch headers).
//
//   out[m, n] = sum_k x[m, k] * dt((q[n, k] - zero[grp(k), n]) * scale[grp(k), n])  (+ bias[n])
//
// dt = x's dtype: the weight is dequantized in registers and scaled there (one rounding, the
// dequantize + cuBLAS path's), then it is the A operand of mma.m16n8k16; x is the B operand. The
// decode kernels read x per warp from L2, which at M >= 32 costs more than the weights; here a CTA
// fetches its x tile once for all its warps.
//
// Tiling: a CTA owns WR row tiles of 16 rows (one per warp) x NT token tiles of 8 tokens x the
// superblocks [sb_lo, sb_hi) of its K split (blockIdx.y of gridDim.y).
// Stages: a ring of ST superblocks in shared memory, each holding
//   x  [8 NT tokens][128 k] in x's dtype, rows padded to 288 bytes (8-byte reads of lanes (g, t)
//      hit distinct banks: g * 288 mod 128 = 0, 32, 64, 96);
//   w  [16 WR rows][16 words] (the superblock's packed words of the CTA's rows);
//   the scales [16 WR] (scale dtype) and zeros [16 WR] (uint8) of the superblock's group;
// filled with cp.async by all threads ST - 1 superblocks ahead (x tokens >= M, x columns >= K and
// rows >= N zero-filled), one __syncthreads per superblock. A first version held one superblock of
// weights in registers, loaded one superblock ahead (only that much weight latency hidden): 1.8-2.8x
// slower than the Triton kernels (session 8 run 7); with the weights in the ring, about 1.3x faster
// than that (run 8), still latency-bound at 4-8 warps per SM (ncu, run 9).
// Per superblock a warp takes its rows' words (lane (g, t): words 4t .. 4t+3 of rows g and g + 8),
// and per plane i (16 k) builds the A fragment with a_frag (exact q - zero), times the scale (packed
// multiply), then NT mma.sync with B fragments x[token][16 i + 4 t .. + 3] (8 bytes per lane: the k
// order a_frag's A slots use, w4a16_gemv.cuh's header).
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
  int spread;         // wgmma GEMM only: 1 = every split's CTA sums a share of the tile (splitk_rendezvous),
                      // 0 = the last to arrive sums it all (splitk_last_arrival)
};

// Both GEMM launchers' parameters for p's operands split over `splits` CTAs per output tile (host).
inline GemmParams gemm_params(const Params& p, float* ws, int* counters, int splits) {
  GemmParams gp{};
  gp.p = p;
  gp.ws = ws;
  gp.counters = counters;
  gp.sb_per_split = (p.nsb + splits - 1) / splits;
  return gp;
}

// 16-byte cp.async without the L2::256B hint of w4a16_gemv.cuh's cp16 (the measured GEMM has none);
// 4-byte copies, commit and wait are that header's cp4 / cp_commit / cp_wait.
__device__ __forceinline__ void gemm_cp16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
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

// The barrier of the threads that compute and store a tile (here and in the K split's sums): the whole CTA
// (NSYNC = 0), or named barrier 1 over threads [0, NSYNC) (a wgmma CTA whose producer warpgroup has left).
template <int NSYNC>
__device__ __forceinline__ void cta_sync() {
  if constexpr (NSYNC == 0)
    __syncthreads();
  else
    asm volatile("bar.sync 1, %0;" ::"n"(NSYNC) : "memory");
}

// Once this CTA's fp32 partials are stored (__stcg): true for the last of `arrivals` CTAs to arrive at
// *counter, which then sees every one's partials and has reset the counter for the next launch (graph
// replays); false for the others.
template <int NSYNC = 0>
__device__ __forceinline__ bool splitk_last_of(int* counter, int arrivals) {
  __threadfence();
  cta_sync<NSYNC>();
  __shared__ int last;
  if (threadIdx.x == 0) last = atomicAdd(counter, 1) == arrivals - 1;
  cta_sync<NSYNC>();
  if (!last) return false;
  __threadfence();
  if (threadIdx.x == 0) *counter = 0;
  return true;
}
// K split (gridDim.y CTAs per output tile): splitk_last_of the tile's CTAs on counters[tile].
template <int NSYNC = 0>
__device__ __forceinline__ bool splitk_last_arrival(int* counters, int tile) {
  return splitk_last_of<NSYNC>(counters + tile, static_cast<int>(gridDim.y));
}

__device__ __forceinline__ int ld_acquire_gpu(const int* ptr) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}

// Spread K split, once this CTA's fp32 partials are stored: waits until all gridDim.y CTAs of the
// tile have stored theirs (counters[2 tile] counts arrivals), so that each can then sum its own share
// of the tile. Only for grids whose CTAs are all resident at once (a cooperative launch): a CTA waits
// here for the others. splitk_depart must follow once the CTA is past this point.
template <int NSYNC = 0>
__device__ __forceinline__ void splitk_rendezvous(int* counters, int tile) {
  __threadfence();
  cta_sync<NSYNC>();
  if (threadIdx.x == 0) {
    atomicAdd(counters + 2 * tile, 1);
    while (ld_acquire_gpu(counters + 2 * tile) < static_cast<int>(gridDim.y)) {
    }
  }
  cta_sync<NSYNC>();
  __threadfence();
}
// counters[2 tile + 1] counts the CTAs past the rendezvous (one thread per CTA, once past it): returns
// the count before this one. The CTA that got gridDim.y - 1 has seen every other one leave the wait,
// so splitk_reset_if_last (any time later) resets both counters for the next launch (graph replays).
__device__ __forceinline__ int splitk_depart(int* counters, int tile) { return atomicAdd(counters + 2 * tile + 1, 1); }
__device__ __forceinline__ void splitk_reset_if_last(int* counters, int tile, int departed_before) {
  if (departed_before == static_cast<int>(gridDim.y) - 1) {
    counters[2 * tile] = 0;
    counters[2 * tile + 1] = 0;
  }
}

// Byte layout of one stage (WR row tiles, NT token tiles, SB = bytes per scale): x, w, scales, zeros.
struct GemmStage {
  int w_off, s_off, z_off, bytes;
};
__host__ __device__ constexpr GemmStage gemm_stage(int wr, int nt, int sb) {
  const int x_bytes = 8 * nt * kGemmPitch;
  const int w_bytes = 16 * wr * 64;
  const int s_bytes = (16 * wr * sb + 15) / 16 * 16;
  const int z_bytes = (16 * wr + 15) / 16 * 16;
  return GemmStage{x_bytes, x_bytes + w_bytes, x_bytes + w_bytes + s_bytes, x_bytes + w_bytes + s_bytes + z_bytes};
}

__device__ __forceinline__ int clamp4(int64_t v) { return v < 0 ? 0 : (v > 4 ? 4 : static_cast<int>(v)); }

// Superblock sb into the stage at shared address `st`: x pieces [8 NT tokens][16 x 16 bytes], weight
// pieces [16 WR rows][4 x 16 bytes], then 4-byte pieces of the group's scales and zeros for the rows
// (a piece partly past N copies its valid bytes and zero-fills the rest).
template <int WR, int NT, int T>
__device__ __forceinline__ void gemm_stage_fill(uint32_t st, const Params& p, int row0, int tok0, int sb, int tid,
                                                int ssize) {
  static_assert((8 * NT * 16) % T == 0 && (16 * WR * 4) % T == 0, "every thread copies the same number of pieces");
  constexpr GemmStage L = gemm_stage(WR, NT, 4);  // x / w offsets do not depend on the scale size
#pragma unroll
  for (int it = 0; it < 8 * NT * 16 / T; ++it) {
    const int c = tid + it * T;
    const int tok = c >> 4, piece = c & 15;
    const int col = sb * 128 + piece * 8;
    const bool ok = tok0 + tok < p.m && col < p.k;
    const char* src = static_cast<const char*>(p.x) +
                      (static_cast<int64_t>(ok ? tok0 + tok : 0) * p.x_stride + (ok ? col : 0)) * 2;
    gemm_cp16(st + tok * kGemmPitch + piece * 16, src, ok ? 16 : 0);
  }
#pragma unroll
  for (int it = 0; it < 16 * WR * 4 / T; ++it) {
    const int c = tid + it * T;
    const int r = c >> 2, piece = c & 3;
    const int row = min(row0 + r, p.n - 1);  // rows past N read row N - 1, never stored
    gemm_cp16(st + L.w_off + r * 64 + piece * 16, p.qw + static_cast<int64_t>(row) * p.qw_stride + sb * 16 + piece * 4,
              16);
  }
  const int64_t gb = static_cast<int64_t>(group_of_sb(sb, p.grp_mul)) * p.n;
  const GemmStage S = gemm_stage(WR, NT, ssize);
  const int s_pieces = 16 * WR * ssize / 4;
  if (tid < s_pieces) {
    const int row = row0 + tid * 4 / ssize;
    const char* src = static_cast<const char*>(p.scales) + (gb + (row < p.n ? row : 0)) * ssize;
    cp4(st + S.s_off + tid * 4, src, clamp4((static_cast<int64_t>(p.n) - row) * ssize));
  } else if (p.zeros != nullptr && tid - s_pieces < 4 * WR) {
    const int zc = tid - s_pieces, row = row0 + zc * 4;
    cp4(st + S.z_off + zc * 4, p.zeros + gb + (row < p.n ? row : 0), clamp4(static_cast<int64_t>(p.n) - row));
  }
}

// The scale of local row r from the stage's scales, as a float.
__device__ __forceinline__ float stage_scale(const unsigned char* sp, int r, FKind kind) {
  if (kind == FKind::kBFloat16) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(sp)[r]);
  if (kind == FKind::kFloat16) return __half2float(reinterpret_cast<const __half*>(sp)[r]);
  return reinterpret_cast<const float*>(sp)[r];
}

// stage: the superblock's stage in shared memory (generic pointer: plain loads the compiler may
// schedule ahead of the mma, and orders against __syncthreads); wr = the warp's row tile.
template <typename XT, int WR, int NT>
__device__ __forceinline__ void gemm_superblock(float (&acc)[NT][4], const unsigned char* stage, const Params& p,
                                                int wr, int lane, uint32_t magic, int ssize) {
  const int g = lane >> 2, t = lane & 3;
  const GemmStage S = gemm_stage(WR, NT, ssize);
  const int r0 = wr * 16 + g;
  uint32_t lo[4], hi[4];
  split_words(*reinterpret_cast<const uint4*>(stage + S.w_off + r0 * 64 + 16 * t), lo);
  split_words(*reinterpret_cast<const uint4*>(stage + S.w_off + (r0 + 8) * 64 + 16 * t), hi);
  const uint32_t s2[2] = {pack2<XT>(stage_scale(stage + S.s_off, r0, p.scale_kind)),
                          pack2<XT>(stage_scale(stage + S.s_off, r0 + 8, p.scale_kind))};
  uint32_t nz[2] = {nzero<XT>(8u), nzero<XT>(8u)};
  if (p.zeros != nullptr) {
    nz[0] = nzero<XT>(stage[S.z_off + r0]);
    nz[1] = nzero<XT>(stage[S.z_off + r0 + 8]);
  }
  const unsigned char* xb = stage + g * kGemmPitch + 8 * t;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    uint32_t a[4];
    a_frag_i<XT>(i, a, lo, hi, nz[0], nz[1], magic);
    a[0] = hmul2<XT>(a[0], s2[0]);
    a[2] = hmul2<XT>(a[2], s2[0]);
    a[1] = hmul2<XT>(a[1], s2[1]);
    a[3] = hmul2<XT>(a[3], s2[1]);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint2 b = *reinterpret_cast<const uint2*>(xb + nt * 8 * kGemmPitch + i * 32);
      Mma<XT>::mma(acc[nt], a, b.x, b.y);
    }
  }
}

// Dynamic shared memory of a launch: ST stages (scales of ssize bytes).
__host__ __device__ constexpr int gemm_smem_bytes(int wr, int nt, int st, int ssize) {
  return st * gemm_stage(wr, nt, ssize).bytes;
}

template <typename XT, int WR, int NT, int ST>
__global__ void __launch_bounds__(32 * WR, 1) w4_gemm_kernel(const GemmParams gp) {
  static_assert(ST >= 2, "the x ring needs two stages or more");
  constexpr int T = 32 * WR;
  extern __shared__ __align__(16) unsigned char gemm_smem[];
  unsigned char* smem = gemm_smem;
  const Params& p = gp.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * 16 * WR + warp * 16;  // this warp's row tile
  const int tok0 = blockIdx.z * 8 * NT;
  const int sb_lo = blockIdx.y * gp.sb_per_split;
  const int sb_hi = min(sb_lo + gp.sb_per_split, p.nsb);
  const uint32_t ring = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  const int ssize = fkind_bytes(p.scale_kind);
  const uint32_t kStage = static_cast<uint32_t>(gemm_stage(WR, NT, ssize).bytes);
  const int cta_row0 = blockIdx.x * 16 * WR;
  uint32_t magic;
  asm("mov.b32 %0, %1;" : "=r"(magic) : "n"(Mma<XT>::kMagic));

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;

  // ring prologue: superblocks sb_lo .. sb_lo + ST - 2 (one cp.async group each, empty past the split)
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (sb_lo + s < sb_hi) gemm_stage_fill<WR, NT, T>(ring + s * kStage, p, cta_row0, tok0, sb_lo + s, tid, ssize);
    cp_commit();
  }
  for (int sb = sb_lo; sb < sb_hi; ++sb) {
    const int j = sb - sb_lo;
    cp_wait<ST - 2>();  // this thread's pieces of superblock sb have landed
    __syncthreads();      // everyone's have, and everyone is done with superblock sb - 1's stage
    if (sb + ST - 1 < sb_hi)
      gemm_stage_fill<WR, NT, T>(ring + ((j + ST - 1) % ST) * kStage, p, cta_row0, tok0, sb + ST - 1, tid, ssize);
    cp_commit();
    gemm_superblock<XT, WR, NT>(acc, smem + (j % ST) * kStage, p, warp, lane, magic, ssize);
  }
  cp_wait<0>();

  const int tile = blockIdx.x + gridDim.x * blockIdx.z;
  constexpr int V = NT * 4;  // accumulator values per lane
  if (gridDim.y > 1) {
    const int64_t tile_floats = static_cast<int64_t>(WR) * V * 32;
    float* mine = gp.ws + (static_cast<int64_t>(tile) * gridDim.y + blockIdx.y) * tile_floats;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) __stcg(mine + ((warp * V) + nt * 4 + c) * 32 + lane, acc[nt][c]);
    if (!splitk_last_arrival(gp.counters, tile)) return;
    const float* base = gp.ws + static_cast<int64_t>(tile) * gridDim.y * tile_floats + warp * V * 32 + lane;
    // split-major, each value summed from 0 in split order as before: the V loads of one split are
    // independent, where a value-major loop waited out one L2 round trip per value and split (the
    // wgmma GEMM's reduction had the same fix in session 11)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[nt][c] = 0.f;
    for (int sp = 0; sp < static_cast<int>(gridDim.y); ++sp) {
      const float* part = base + sp * tile_floats;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[nt][c] += __ldcg(part + (nt * 4 + c) * 32);
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
constexpr int kGemmCodes[] = {8084, 8086, 8164, 8044, 8046, 4084, 4086, 4164, 4046};

template <int C>
struct GemmCode {
  static constexpr int WR = C / 1000, NT = C / 10 % 100, ST = C % 10;
  static_assert(WR >= 1 && WR <= 16 && NT >= 1 && ST >= 2, "a GEMM code is WR * 1000 + NT * 10 + ST");
};

// Every compiled code: 16-byte aligned stage parts (cp.async 16-byte pieces, uint4 / uint2 reads) and a
// ring within sm_90's 227 KB per CTA (kSm90SmemOptin), for 2- and 4-byte scales.
template <size_t L>
constexpr bool gemm_codes_fit(const int (&codes)[L]) {
  for (size_t i = 0; i < L; ++i) {
    const int wr = codes[i] / 1000, nt = codes[i] / 10 % 100, st = codes[i] % 10;
    for (int ssize = 2; ssize <= 4; ssize += 2) {
      const GemmStage g = gemm_stage(wr, nt, ssize);
      if (g.w_off % 16 || g.s_off % 16 || g.z_off % 16 || g.bytes % 16 ||
          static_cast<size_t>(st * g.bytes) > kSm90SmemOptin)
        return false;
    }
  }
  return true;
}
static_assert(gemm_codes_fit(kGemmCodes), "a compiled GEMM code has a misaligned stage or more than 227 KB of ring");

}  // namespace w4a16g
}  // namespace qlinear
