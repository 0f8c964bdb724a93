// W4A16 decode GEMV fed by a TMA ring (sm_90): one producer warp streams the weights, scales, zero
// points and x of a CTA's rows into shared memory with cp.async.bulk.tensor; CW consumer warps read
// them with LDS and run the register kernel's dequantize + mma (reg_compute, w4a16_gemv.cuh), so the
// arithmetic and the math are those of a tested path and only the data movement is new. Device code, the
// stage layout and the compiled codes (no torch headers); maps and launch: w4a16_tma_launch.cu.
//
//   out[m, n] = sum_k x[m, k] * (q[n, k] - zero[grp(k), n]) * scale[grp(k), n]  (+ bias[n])
//
// Why: the register kernel issues its own global loads, so its loads in flight stop while its warps
// compute; at 7168x16384 M = 1 the weight words alone stream in 16.1 us, the whole kernel in ~23
// (session 10 run 8: scales / zeros, x and the math each add time instead of overlapping). Here the
// bytes in flight are the ring's ST stages, whatever the consumers are doing. Session 22 (runs 2-9,
// benchmarks/results/session22): with the consumers only handing stages back (code 82844) the same
// bytes stream in 15.2 us (~92 % of the copy ceiling); the full kernel takes 19.6 us (32844) against
// the register kernel's 23.3. The gap is the consumers' dequantize + mma: Nsight Compute (run 6) has
// 0.48 instructions issued per scheduler per cycle, stalls split between waiting for a stage and
// fixed-latency dependencies, and no pipe above 37 %; more consumer warps per SM did not move it (runs
// 5 and 7), removing the branches of the shared-memory reads did (run 8: 20.9 -> 19.6 us). Session 24
// (benchmarks/results/session24): at two token tiles, eight consumer warps beat four, on 2112x7168 as eight
// warps over eight superblocks (M = 16 8.32 against 9.61 us), on 7168x16384 as four pairs of warps
// splitting each superblock's k-steps (the k-step split, 27.64 against 29.08); x multicast over CTA
// pairs and a split of the tokens over two CTAs were slower.
// Session 25 (benchmarks/results/session25): the 2112-row layer has 66 row tiles of 32 rows, half the
// SMs; the pair split gives each tile a cluster of two CTAs that take half of K each and sum through
// distributed shared memory, so all 132 SMs stream weights and x is read once per tile as before
// (2112x7168 M = 8: 52444 5.06 against 21844 5.73-5.85 us; M = 16: 62434, with the k-step split as
// well, 6.98-7.09 against 21848 8.29-8.32).
//
// CTA: 16 R rows over the whole K, in stages of KS superblocks (128 columns each). Stage layout
// (offsets in TmaLayout): KS weight boxes [16 R rows][16 words] (a row's 64 bytes contiguous: the 8
// lanes of a quarter warp read rows g, g + 1 as 128 contiguous bytes, no bank conflict), KS x boxes
// [MB rows][128 columns] (MB = min(M, 8 NT) rows; lanes of row g >= M read row M - 1, a broadcast at
// M = 1; codes 1xxxxx at two token tiles: two swizzled 64-column halves, kTmaXHalf), one scale box
// [KS groups][16 R rows] of 16-bit scales (per channel: G = 1) and one zero box of the same shape (a
// symmetric layer's holds 8s, written once at the start; no copy lands there).
// Boxes past N, K or the last group land as zeros (TMA out-of-bounds fill): a zero x column or a zero
// scale adds nothing, so a ragged last stage needs no bounds tests.
// Consumer warp w takes the stage's superblocks j = w, w + CW, ... (U = KS / CW of them) for all R row
// tiles, so the x fragments it reads serve R tiles; each thread hands the slot back right after its reads
// (the producer refills it during the math); the CW partial sums meet in shared memory at the end. With
// the k-step split (F = 6, 7) there are 2 CW consumer warps: warps w and w + CW take the same
// superblocks, k-steps 0-3 and 4-7 of each, and their 2 CW partial sums meet the same way. With the pair
// split (F = 5, 6) the two CTAs of a cluster take stages [0, P) and [P, 2 P) (P = half the stages,
// rounded up) of the same rows; each sums its warps, then CTA c adds the two CTAs' sums (its own, then
// the other's over distributed shared memory, in rank order: the same bits either way) for half of
// the tile's outputs and stores them.
#pragma once

#include <cuda.h>

#include <type_traits>

#include "cluster.cuh"
#include "w4a16_gemv.cuh"

namespace qlinear {
namespace w4a16g {

struct TmaParams {
  CUtensorMap wmap;  // qweight [N, 16 nsb] int32: box 16 words x 16 R rows
  CUtensorMap xmap;  // x [M, K]: box 128 columns x MB rows
  CUtensorMap smap;  // scales [G, N] (G = 1 per channel): box 16 R rows x KS groups
  CUtensorMap zmap;  // zeros [G, N] uint8: box as smap (unused when symmetric)
  Params p;
  int mb;           // x rows staged per superblock
  int scale_bf16;  // 16-bit scales: bf16 (1) or fp16 (0)
  int off_x, off_s, off_z, stage_bytes, off_red, off_bar;
  uint32_t tx_bytes;  // bytes one stage's boxes land (out-of-bounds fill included)
};

// Code digits: F * 10000 + R * 1000 + KS * 100 + ST * 10 + CW; F = 2 plain, 3 with the zero fold, 7
// the k-step split (CW pairs of consumer warps, each pair splitting every superblock's 8 k-steps 4 / 4),
// 5 the pair split (a cluster of two CTAs per row tile, each half of the stages, summed through
// distributed shared memory), 6 both splits, 8 the diagnostic mode 1. One decoding for the instances
// (TmaCode) and the host's grid, size and warp counts.
// A sixth digit SW (code / 100000 % 10) puts x in TMA's 128-byte swizzle: SW = 1 at two token tiles as two
// 64-column boxes per superblock (see kTmaXHalf), SW = 2 at either as one 3-D box (see tma_x3d); the
// five-digit code's layout otherwise. A seventh digit E (code / 1000000) = 1 triggers the dependent grid
// (PDL) before the main loop at two token tiles too, as one token tile always does; E = 0 triggers after it.
// Session 37 run 3 (benchmarks/results/session37/run3): 2112x7168 M = 9 / 12 / 16 1262434 5.57 / 5.64 /
// 5.64 against 262434 6.27 / 6.30 / 6.36 us. A 262434 CTA holds 96 KB of shared memory and 288 x 96
// registers, so a second fits beside it and the next launch's producer streams its first stages while this
// one computes. 7168x16384 M = 9 / 16: 1257434 22.99 / 22.98 against 257434 22.90 / 22.92 (178 KB and 228
// registers per thread: one CTA per SM; removed).
struct TmaDigits {
  int f, r, ks, st, cw;
  int kh;  // consumer warps per superblock slot: 2 for the k-step split, else 1
  int kp;  // CTAs per row tile (one cluster): 2 for the pair split, else 1
  int sw;  // swizzled x (two token tiles)
  int early;  // PDL trigger before the main loop at two token tiles as well (one token tile: always)
};
__host__ __device__ constexpr TmaDigits tma_digits(int code) {
  const int f = code % 100000 / 10000;
  return {f, code / 1000 % 10, code / 100 % 10, code / 10 % 10, code % 10, f == 6 || f == 7 ? 2 : 1,
          f == 5 || f == 6 ? 2 : 1, code / 100000 % 10, code / 1000000};
}
// Warps of a CTA: CW * KH consumers and the producer.
__host__ __device__ constexpr int tma_warps(int code) {
  return tma_digits(code).cw * tma_digits(code).kh + 1;
}

template <int C>
struct TmaCode {
  static constexpr TmaDigits D = tma_digits(C);
  static constexpr int F = D.f, R = D.r, KS = D.ks, ST = D.st, CW = D.cw, KH = D.kh, KP = D.kp;
  static constexpr int FOLD = F == 3 ? 1 : 0, MODE = F == 8 ? 1 : 0, SW = D.sw, EARLY = D.early;
  static_assert(F >= 2 && F <= 8 && F != 4 && R >= 1 && KS >= 1 && ST >= 2 && CW >= 1 && KS % CW == 0 && SW <= 2 &&
                    EARLY <= 1,
                "a TMA ring code is [E] [SW] F R KS ST CW as decimal digits (E 0 / 1, SW 0 / 1 / 2, F 2 / 3 / 5 .. 8), "
                "CW dividing KS, ST >= 2");
};

// x of one superblock in a stage: [MB rows][256 B], or with SW (two token tiles only) two halves
// (columns 0-63, 64-127) of [MB rows][128 B] in TMA's 128-byte swizzle (16-byte chunk c of row r stored
// at chunk c ^ (r & 7)), each kTmaXHalf bytes (room for 16 rows) and 1024-byte aligned, so that the
// eight token rows an LDS.64 reads spread over all banks; with rows 256 bytes apart they all hit the
// same eight banks. Session 26 run 3 (benchmarks/results/session26/run3): every x fragment read from row
// 0 instead (no conflicts, wrong results) took 2112x7168 M = 16 62434 from 7.05 to 6.08 us and
// 7168x16384 M = 16 74444 from 27.61 to 24.78. Run 4 (every two-token-tile code swizzled): 2112x7168
// gained nothing (62434 M = 9 / 12 / 16 6.96 / 6.93 / 7.02; its row-0 twin 6.69 / 6.44 / 6.49: the halves'
// extra copies cost about what the conflicts did), 7168x16384 M = 16 24444 26.39 vs 74444 28.43 (run 3,
// unswizzled: 27.61): so only 124444 is swizzled.
// SW = 2 (tma_x3d): [8 nt rows][256 B] in the same swizzle, 1024-byte aligned as well.
constexpr int kTmaXHalf = 2048, kTmaSwAlign = 1024;
__host__ __device__ constexpr int tma_x_sb_bytes(bool sw, int mb, int nt = 2) {
  return sw ? nt * kTmaXHalf : mb * 256;
}
// the ring's alignment: stages (and so the swizzled halves) kTmaSwAlign bytes with SW; the dynamic
// shared memory then carries that much slack, which the kernel skips to align its ring
__host__ __device__ constexpr int tma_ring_align(bool sw) { return sw ? kTmaSwAlign : 128; }
__host__ __device__ constexpr int tma_ring_slack(bool sw) { return sw ? kTmaSwAlign : 0; }

struct TmaLayout {
  int off_x, off_s, off_z, stage_bytes;
  int landed;  // bytes the weight, x and scale boxes land (the zero box adds ks * r * 16)
};

// One stage's layout for r row tiles, ks superblocks and mb x rows (16-bit scales; stages 128-byte
// aligned, 1024 with swizzled x). TMA wants every box 128-byte aligned in shared memory: tma_codes_fit
// checks the scale and zero boxes (the scale box's 32 r ks bytes are a multiple of 128 only when r * ks
// is a multiple of 4; session 25 run 3's 112-row codes, r * ks = 14, failed). Unswizzled x rows are 256
// bytes apart: session 25 run 6 padded them to 288 (144-column boxes, no bank conflicts on the x reads)
// and every M from 4 on got slower (2112x7168 M = 4 / 8 / 16: 5.36 / 5.97 / 9.25 vs 4.87 / 5.06 / 6.97
// us). `landed`: what one stage's copies write (the swizzled halves' room for 16 rows is not all filled).
__host__ __device__ constexpr TmaLayout tma_stage_layout(int r, int ks, int mb, bool sw, int nt = 2) {
  const int w = ks * r * 16 * 64;
  const int x = ks * tma_x_sb_bytes(sw, mb, nt);
  const int s = ks * r * 16 * 2;
  const int z = ks * r * 16;
  const int a = tma_ring_align(sw);
  return {w, w + x, w + x + s, (w + x + s + z + a - 1) / a * a, w + ks * mb * 256 + s};
}

// Dynamic shared memory of code C at mb x rows: ST stages, the cross-warp reduction (with the pair
// split one more tile: the CTA's sum, which the other CTA reads), ST full and ST empty mbarriers, and
// with swizzled x the slack that aligns the ring to 1024 bytes.
__host__ __device__ constexpr bool tma_swizzled(int code, int nt) {
  return (tma_digits(code).sw == 1 && nt == 2) || tma_digits(code).sw == 2;
}
// SW = 2 (one or two token tiles): a superblock's x is one box of a 3-D map over x viewed as [M][K / 64][64]
// (box 64 x 2 x MB), which lands in shared memory as [MB rows][2 halves][64 columns] under the same
// 128-byte swizzle: 128-byte line L = 2 row + half has its 16-byte chunk c stored at c ^ (L & 7). A half-warp's
// LDS.64 (rows g .. g + 3, lanes t) then touches 16 distinct 8-byte slots of one 128-byte span: no
// conflicts, as with SW = 1, from one copy instead of two. Needs K % 64 == 0 (the view); the launcher
// runs the unswizzled twin (tma_twin) otherwise.
// Why: session 26 runs 3-4 measured SW = 1 on 2112x7168 M = 16 at 7.02 us against its row-0 twin's 6.49
// and the unswizzled code's row-0 twin at 6.08: the second copy per superblock costs about what the
// conflicts it removes did.
__host__ __device__ constexpr bool tma_x3d(int code, int /*nt: either*/) { return tma_digits(code).sw == 2; }
// The unswizzled twin of an SW = 2 code: the same code with SW = 0.
__host__ __device__ constexpr int tma_twin(int code) { return code - tma_digits(code).sw * 100000; }
__host__ __device__ constexpr int tma_smem_bytes(int code, int nt, int mb) {
  const TmaDigits d = tma_digits(code);
  const bool sw = tma_swizzled(code, nt);
  const int ring = d.st * tma_stage_layout(d.r, d.ks, mb, sw, nt).stage_bytes;
  const int red = (d.cw * d.kh + (d.kp > 1 ? 1 : 0)) * d.r * nt * 4 * 32 * 4;
  return ring + red + 16 * d.st + tma_ring_slack(sw);
}

// The lane's byte offsets of its x fragments inside a swizzled half (SW), per token tile
// and 32-byte column group a (k-steps a and a + 4): row `row`, 16-byte chunk 2 a + t / 2 moved to
// (2 a + t / 2) ^ (row & 7), 8 bytes into it for odd t.
// X3D (SW = 2): the rows are 256 bytes apart, the halves 128 bytes apart inside a row, and chunk
// 2 a + t / 2 of half h moves to (2 a + t / 2) ^ ((2 row + h) & 7) = (2 a ^ (2 row & 6)) + ((t / 2) ^ h)
// (both XOR terms of 2 a are even, of t / 2 and h bit 0 only): xo holds the row and a part, dh[h] the half's.
template <int NT, bool X3D = false>
__device__ __forceinline__ void tma_x_offsets(int mb, int g, int t, int (&xo)[NT][4], int (&dh)[2]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int row = min(g + 8 * nt, mb - 1);
#pragma unroll
    for (int a = 0; a < 4; ++a)
      xo[nt][a] = X3D ? row * 256 + (((2 * a) ^ (2 * row & 6)) << 4) + ((t & 1) << 3)
                      : row * 128 + (((2 * a + (t >> 1)) ^ (row & 7)) << 4) + ((t & 1) << 3);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) dh[h] = X3D ? h * 128 + (((t >> 1) ^ h) << 4) : h * kTmaXHalf;
}

__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// x of superblock j (the chunk's u-th) from stage slot `base`: k-steps I0 .. I0 + NI - 1 of both token tiles.
template <int U, int NT, int I0, int NI, bool SW, int RB>
__device__ __forceinline__ void tma_lds_x(const TmaParams& tp, const char* base, int j, int u, int g, int t,
                                          const int (&xo)[NT][4], const int (&dh)[2], RegChunk<U, RB, NT>& c) {
  if constexpr (SW) {
    const char* xb = base + tp.off_x + j * tma_x_sb_bytes(true, 0, NT);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = I0; i < I0 + NI; ++i)
        c.x[u][nt][i] = *reinterpret_cast<const uint2*>(xb + dh[i >> 2] + xo[nt][i & 3]);
  } else {
    const char* xb = base + tp.off_x + j * tma_x_sb_bytes(false, tp.mb) + t * 8;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const char* xr = xb + min(g + 8 * nt, tp.mb - 1) * 256;
#pragma unroll
      for (int i = I0; i < I0 + NI; ++i) c.x[u][nt][i] = *reinterpret_cast<const uint2*>(xr + i * 32);
    }
  }
}

// The chunk of stage slot `base` that consumer warp w computes: its U superblocks j = w + CW u, read from
// shared memory into the register kernel's chunk (x: k-steps I0 .. I0 + NI - 1 only), the weights, scales
// and zero points of the stage's row tiles R0 .. R0 + RB - 1 (of R). No branches: the scale kind is a select,
// and a symmetric layer's zero box holds 8s written once (TMA never overwrites it). Per superblock u: the
// weights, then x (unless WX is false), then the scales and zero points.
template <int R, int R0, int RB, int U, int NT, int CW, int I0 = 0, int NI = 8, bool SW = false, bool WX = true>
__device__ __forceinline__ void tma_lds(const TmaParams& tp, const char* base, int w, int g, int t, int gj0, int sb0,
                                        const int (&xo)[NT][4], const int (&dh)[2], RegChunk<U, RB, NT>& c) {
  const Params& p = tp.p;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int j = w + CW * u;
    const char* wb = base + j * (R * 16 * 64) + (R0 * 16 + g) * 64 + t * 16;
#pragma unroll
    for (int r = 0; r < RB; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) c.w[u][r][h] = *reinterpret_cast<const uint4*>(wb + (r * 16 + 8 * h) * 64);
    if constexpr (WX) tma_lds_x<U, NT, I0, NI, SW>(tp, base, j, u, g, t, xo, dh, c);
    // the stage's scale / zero boxes start at group gj0; superblock sb0 + j is in group_of_sb(sb0 + j)
    const int e0 = (group_of_sb(sb0 + j, p.grp_mul) - gj0) * (R * 16) + R0 * 16 + g;
    const uint16_t* sp = reinterpret_cast<const uint16_t*>(base + tp.off_s) + e0;
    const uint8_t* zp = reinterpret_cast<const uint8_t*>(base + tp.off_z) + e0;
#pragma unroll
    for (int r = 0; r < RB; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t v = sp[r * 16 + 8 * h];
        c.s[u][r][h] = tp.scale_bf16 ? __uint_as_float(v << 16) : __half2float(__ushort_as_half(static_cast<unsigned short>(v)));
        c.z[u][r][h] = zp[r * 16 + 8 * h];
      }
  }
}

// The producer's copies of stage st into slot `dst` (barrier bar): weights, scales and zero points
// (wx false) or x (wx true; two swizzled halves per superblock with SW, one 3-D box with X3D).
template <int R, int KS, bool SW, bool X3D, int NT>
__device__ __forceinline__ void tma_issue(const TmaParams& tp, uint32_t dst, uint32_t bar, int st, int row0, bool wx) {
  const int sb0 = st * KS;
  if (!wx) {
#pragma unroll
    for (int j = 0; j < KS; ++j) tma::tensor_copy_2d(dst + j * (R * 16 * 64), &tp.wmap, (sb0 + j) * 16, row0, bar);
    const int g0 = group_of_sb(sb0, tp.p.grp_mul);
    tma::tensor_copy_2d(dst + tp.off_s, &tp.smap, row0, g0, bar);
    if (tp.p.zeros != nullptr) tma::tensor_copy_2d(dst + tp.off_z, &tp.zmap, row0, g0, bar);
  } else if constexpr (X3D) {
#pragma unroll
    for (int j = 0; j < KS; ++j)  // coordinates (column in the half, half = 2 sb, row)
      tma::tensor_copy_3d(dst + tp.off_x + j * tma_x_sb_bytes(true, 0, NT), &tp.xmap, 0, (sb0 + j) * 2, 0, bar);
  } else {
#pragma unroll
    for (int j = 0; j < KS; ++j)
#pragma unroll
      for (int h = 0; h < (SW ? 2 : 1); ++h)  // SW: two 64-column halves
        tma::tensor_copy_2d(dst + tp.off_x + j * tma_x_sb_bytes(SW, tp.mb) + h * kTmaXHalf, &tp.xmap,
                            (sb0 + j) * 128 + h * 64, 0, bar);
  }
}

// CTAs per SM the register budget is cut for (__launch_bounds__): eight consumer warps fit two CTAs
// of 9 warps at <= 112 registers (session 22 run 4, ncu: 117 registers left one CTA per SM, 13.6 %
// occupancy); one row tile per CTA (448 CTAs at 7168 rows) all resident with four. Two token tiles
// keep the whole budget (their chunks spill below it).
constexpr int tma_min_blocks(int r, int cw, int nt) { return nt == 2 ? 1 : (cw >= 8 ? 2 : (r == 1 ? 4 : 2)); }

// Row tiles in a consumer warp's first register block: a chunk of R > 4 row tiles is read and computed in
// two blocks (R - R / 2 and R / 2 tiles), so that the weights and the register kernel's two accumulator
// chains per tile held at once are about half (R = 7, 8: the whole chunk spills even at 255 registers).
__host__ __device__ constexpr int tma_row_block(int r) { return r > 4 ? r - r / 2 : r; }

// Row tiles R0 .. R0 + RB - 1 of a warp's sums, as an array of their own (the same registers).
template <int R0, int RB, int R, int NT>
__device__ __forceinline__ float (&tot_rows(float (&tot)[R][NT][4]))[RB][NT][4] {
  static_assert(R0 + RB <= R, "row tiles within the sums");
  return *reinterpret_cast<float(*)[RB][NT][4]>(&tot[R0]);
}

// The instance of code C (TmaCode) at NT token tiles. FOLD: the register kernel's zero-point fold
// (reg_compute). MODE 1 (diagnostics, codes 8xxxx): the consumers only wait for each stage and hand it
// back (session 22 run 2 also had a mode 2, reads without math: 15.79 us against 15.36 for mode 1 at
// 7168x16384 M = 1; removed). KH = 2 (the k-step split, codes 7xxxx): consumer warp w takes the
// superblocks of slot w % CW and, of each, the k-steps 4 (w / CW) .. + 3: twice the warps per SM for the
// same stage, each with half the chain.
template <typename XT, int C, int NT>
__global__ void __launch_bounds__(32 * tma_warps(C), tma_min_blocks(TmaCode<C>::R, tma_warps(C) - 1, NT))
    tma_gemv_kernel(const __grid_constant__ TmaParams tp) {
  using D = TmaCode<C>;
  constexpr int R = D::R, KS = D::KS, ST = D::ST, CW = D::CW, KH = D::KH, KP = D::KP, FOLD = D::FOLD, MODE = D::MODE;
  constexpr int U = KS / CW, NW = CW * KH, NI = 8 / KH, RB = tma_row_block(R);
  constexpr bool SW = tma_swizzled(C, NT), X3D = tma_x3d(C, NT);
  const Params& p = tp.p;
  extern __shared__ __align__(16) char smem_raw[];
  // swizzled x: the ring kTmaSwAlign-aligned (TMA's 128-byte swizzle is a function of the address)
  char* smem = SW ? smem_raw + (kTmaSwAlign - tma::smem_u32(smem_raw) % kTmaSwAlign) % kTmaSwAlign : smem_raw;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // pair split: CTAs KP i .. KP i + KP - 1 (one cluster; rank = part) take row tile i, each a KP-th
  // of its stages (KP = 2 is compiled; the code holds for any KP)
  const int part = KP > 1 ? static_cast<int>(blockIdx.x) % KP : 0;
  const int row0 = static_cast<int>(blockIdx.x) / KP * (16 * R);
  const int nst_all = (p.nsb + KS - 1) / KS, per = (nst_all + KP - 1) / KP;
  const int st_lo = part * per;                   // first stage of this CTA
  const int nst = max(0, min(nst_all - st_lo, per));  // stages of this CTA
  const uint32_t full0 = tma::smem_u32(smem + tp.off_bar), empty0 = full0 + 8 * ST;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < ST; ++s) {
      tma::mbar_init(full0 + 8 * s, 1);
      tma::mbar_init(empty0 + 8 * s, 32 * NW);
    }
    tma::mbar_fence_init();
  }
  if (p.zeros == nullptr) {
    // symmetric: every slot's zero box holds 8 (TMA writes no zero box then)
    constexpr int kZ = KS * R * 16;
    for (int e = threadIdx.x; e < ST * kZ; e += blockDim.x) smem[(e / kZ) * tp.stage_bytes + tp.off_z + e % kZ] = 8;
  }
  __syncthreads();
  // the dependent grid is triggered here (one token tile, or E = 1) or after the main loop
  constexpr bool kTriggerFirst = NT == 1 || D::EARLY;
  if constexpr (kTriggerFirst) pdl::launch_dependents();

  if (warp == NW) {
    // producer: one lane; weights / scales / zeros of the first stages before griddepcontrol.wait (the
    // previous kernel never writes them), x after
    if (lane == 0) {
      const int pro = nst < ST ? nst : ST;
      for (int s = 0; s < pro; ++s) {
        tma::mbar_arrive_tx(full0 + 8 * s, tp.tx_bytes);
        tma_issue<R, KS, SW, X3D, NT>(tp, tma::smem_u32(smem + s * tp.stage_bytes), full0 + 8 * s, st_lo + s, row0,
                                      false);
      }
      pdl::wait();
      for (int s = 0; s < pro; ++s)
        tma_issue<R, KS, SW, X3D, NT>(tp, tma::smem_u32(smem + s * tp.stage_bytes), full0 + 8 * s, st_lo + s, row0,
                                      true);
      for (int st = ST; st < nst; ++st) {
        const int slot = st % ST;
        tma::mbar_wait(empty0 + 8 * slot, static_cast<uint32_t>((st / ST - 1) & 1));
        const uint32_t dst = tma::smem_u32(smem + slot * tp.stage_bytes), bar = full0 + 8 * slot;
        tma::mbar_arrive_tx(bar, tp.tx_bytes);
        tma_issue<R, KS, SW, X3D, NT>(tp, dst, bar, st_lo + st, row0, false);
        tma_issue<R, KS, SW, X3D, NT>(tp, dst, bar, st_lo + st, row0, true);
      }
    }
    if constexpr (KP > 1) {
      // the consumers' two cluster barriers count every thread of the pair
      __syncwarp();
      cluster::sync();
      cluster::sync();
    }
    return;
  }

  const int g = lane >> 2, t = lane & 3;
  int xo[NT][4], dh[2];
  if constexpr (SW) tma_x_offsets<NT, X3D>(tp.mb, g, t, xo, dh);
  const uint32_t magic = magic_reg<XT>();
  float tot[R][NT][4];
  zero_tot(tot);
  uint32_t sink = 0;
  for (int st = 0; st < nst; ++st) {
    const int slot = st % ST;
    tma::mbar_wait(full0 + 8 * slot, static_cast<uint32_t>((st / ST) & 1));
    const int sb0 = (st_lo + st) * KS;
    const int gj0 = group_of_sb(sb0, p.grp_mul);
    // the slot goes back as soon as this thread's reads of it are done (the arrival releases them), so the
    // producer refills it while the chunk is computed from registers: one more stage in flight
    auto consume = [&](auto i0) {
      [[maybe_unused]] constexpr int I0 = decltype(i0)::value;  // (the diagnostic mode reads nothing)
      [[maybe_unused]] const char* base = smem + slot * tp.stage_bytes;
      [[maybe_unused]] const int w = warp % CW;
      if constexpr (RB == R) {
        [[maybe_unused]] RegChunk<U, R, NT> c;
        if constexpr (MODE != 1) tma_lds<R, 0, R, U, NT, CW, I0, NI, SW>(tp, base, w, g, t, gj0, sb0, xo, dh, c);
        tma::mbar_arrive(empty0 + 8 * slot);
        if constexpr (MODE == 0) reg_compute<XT, U, R, NT, 0, FOLD, I0, NI>(c, tot, sink, magic);
      } else {
        // two blocks of RB and R - RB row tiles: x once, each block's weights just before its math, the slot
        // handed back after the second block's reads
        static_assert(MODE == 0 && FOLD == 0, "row blocks: no fold or diagnostics");
        RegChunk<U, RB, NT> c;
        RegChunk<U, R - RB, NT> c2;
#pragma unroll
        for (int u = 0; u < U; ++u) tma_lds_x<U, NT, I0, NI, SW>(tp, base, w + CW * u, u, g, t, xo, dh, c);
        tma_lds<R, 0, RB, U, NT, CW, I0, NI, SW, false>(tp, base, w, g, t, gj0, sb0, xo, dh, c);
        reg_compute<XT, U, RB, NT, 0, FOLD, I0, NI>(c, tot_rows<0, RB>(tot), sink, magic);
        tma_lds<R, RB, R - RB, U, NT, CW, I0, NI, SW, false>(tp, base, w, g, t, gj0, sb0, xo, dh, c2);
        tma::mbar_arrive(empty0 + 8 * slot);
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = I0; i < I0 + NI; ++i) c2.x[u][nt][i] = c.x[u][nt][i];
        reg_compute<XT, U, R - RB, NT, 0, FOLD, I0, NI>(c2, tot_rows<RB, R - RB>(tot), sink, magic);
      }
    };
    if (KH == 1 || warp < CW)
      consume(std::integral_constant<int, 0>{});
    else
      consume(std::integral_constant<int, 8 - NI>{});
  }
  if constexpr (!kTriggerFirst) pdl::launch_dependents();
  if constexpr (MODE != 0) {
    // diagnostics: keep the loads alive; practically never stores
    if (sink == 0x9E3779B9u) static_cast<XT*>(p.out)[0] = Mma<XT>::from_f(1.f);
    return;
  }

  // cross-warp reduction in its own region (other warps may still read the ring), + bias, store; the
  // output may be read by the previous grid until it completes
  float* red = reinterpret_cast<float*>(smem + tp.off_red);
  if constexpr (KP == 1) {
    reduce_store_in<XT, R, NT>(p, tot, row0, red, NW, [] {
      named_sync(1, 32 * NW);
      pdl::wait();
    });
  } else {
    // pair split: each CTA sums its warps' partials into `mine`; after a cluster barrier CTA
    // `part` sums the KP CTAs' values (distributed shared memory) for a KP-th of the tile, in part
    // order (the same bits whichever CTA sums), and stores them; a second barrier keeps each CTA's
    // `mine` alive until the others have read it
    constexpr int V = R * NT * 4 * 32;
    static_assert(V % KP == 0, "each CTA of the cluster stores V / KP values");
    stage_partials(tot, red);
    named_sync(1, 32 * NW);
    float* mine = red + NW * V;
    for (int v = threadIdx.x; v < V; v += 32 * NW) {
      float s = 0.f;
      for (int wi = 0; wi < NW; ++wi) s += red[wi * V + v];
      mine[v] = s;
    }
    cluster::sync();
    pdl::wait();
    uint32_t src[KP];  // `mine` of cluster rank q, rank part's read locally
#pragma unroll
    for (int q = 0; q < KP; ++q) src[q] = cluster::peer(tma::smem_u32(mine), static_cast<uint32_t>(q));
    for (int v = part * (V / KP) + static_cast<int>(threadIdx.x); v < (part + 1) * (V / KP); v += 32 * NW) {
      float vals[KP];
#pragma unroll
      for (int q = 0; q < KP; ++q) vals[q] = q == part ? mine[v] : cluster::load_f32(src[q] + 4u * static_cast<uint32_t>(v));
      float s = vals[0];
#pragma unroll
      for (int q = 1; q < KP; ++q) s += vals[q];
      const int ln = v & 31, c = (v >> 5) & 3, rn = v >> 7;
      store_frag<XT>(p, row0 + (rn / NT) * 16, rn % NT, ln, c, s);
    }
    cluster::sync();
  }
}

// TMA ring shapes compiled, per token tiles (code: [E] [SW] F R KS ST CW as decimal digits; F 3 = the zero
// fold, 5 = the pair split, 6 = pair + k-step split, 7 = the k-step split, 8 = diagnostic mode 1; SW 1 =
// swizzled x in two boxes per superblock, SW 2 = in one 3-D box). The dispatch (qlinear/ops/w4a16.py
// _CUDA_RING_AUTO) uses 252444, 257434 (one token tile), 257434 and 1262434 (two); the others are its
// measured neighbours, kept for re-tuning (benchmarks/bench_w4tma.py).
// Session 24 runs 2-3 and 10 at two token tiles on 2112x7168 M = 16 (us): 21848 8.32, 21858 8.57,
// 21844 9.61, 21854 9.62, 21484 9.82, 71848 8.48, 71844 9.13 (removed: 21854, 21484, 21858, 71848,
// 71844). Session 25 runs 1-3 (benchmarks/results/session25), 2112x7168: 52434 lost to 52444 at M = 1 /
// 4 / 8 (4.73 / 5.01 / 5.23 vs 4.65 / 4.87 / 5.06 us), 62444 / 62424 / 52444 to 62434 at M = 16 (7.14 /
// 7.27 / 8.11 vs 6.98-7.09); quad splits (clusters of four, 44232 / 44242) took ~9 us at every M (not
// every cluster of four is resident at once: a second wave); 112-row pair splits on 7168x16384 (67232
// / 67242) 28.7-30.6 vs 19.9-27.4; sixteen-warp pair codes at two token tiles (run 4, M = 16) 62838
// / 52848 8.24 / 8.49 vs 62434 6.97; all removed. Session 26 run 2 (benchmarks/results/session26/run2): a
// workspace split (four CTAs per 64-row tile, a quarter of K each, no cluster, partial sums through a
// global workspace: half the pair split's x bytes) lost at every M on 2112x7168 (M = 1 / 8 / 16: best
// 6.17 / 6.55 / 8.69 vs 4.63 / 5.06 / 7.00 us) and on 7168x16384 M = 16 (34.64 vs 27.38); removed.
// Session 30 run 7 (benchmarks/results/session30/run7): SW = 2 at one token tile, 2112x7168 M = 2 / 4 / 8:
// 252444 4.69 / 4.70 / 4.74 vs 52444 4.71 / 4.87 / 5.11 us; 7168x16384 M = 1 / 4 / 8: 232844 26.25 / 26.65 /
// 26.43 vs 32844 19.91 / 20.48 / 31.05, 222464 22.77 / 22.82 / 22.52 vs 22464 28.10 / 21.56 / 21.66 (their
// stages hold 8 x rows of x per superblock at every M, and fewer CTAs fit an SM): only 252444 kept.
// Session 33 run 3 (benchmarks/results/session33/run3, 7168x16384, us): the 112-row pair split at one token
// tile, sym-fp16 M = 1 / 4 / 5 / 8: 257434 18.82 / 19.20 / 19.18 / 19.28 vs the dispatch then (32844 at M <= 4,
// 22464 above) 19.79 / 20.31 / 21.24 / 21.68 [bf16 64.24 / 65.04 / 65.25 / 65.72]; asym-bf16 M = 1 / 8 18.84 /
// 19.47 vs 20.02 (32844, the zero fold) / 22.22; 257444 19.75-20.30 (removed).
constexpr int kTmaNT1[] = {32844, 22844, 22464, 22848, 21844, 82844, 52444, 252444, 257434, 57434};
// Session 30 (benchmarks/results/session30, runs 1-3): SW = 2 (one 3-D x box per superblock) took 2112x7168
// M = 16 from 6.97 (62434) to 6.36 us (262434) and 7168x16384 M = 16 from 26.27 (124444) to 25.87 (224444);
// its neighbours lost: 262444 6.80, 262424 6.72, 261434 (16-row pair split, two CTAs per SM) 8.43 and
// 274444 12.78 on 2112x7168 M = 16; 274444 26.70, 224464 26.84 on 7168x16384 M = 16 (removed).
// Session 33 run 1 (benchmarks/results/session33/run1, 7168x16384, M = 9 / 12 / 16, us): pair splits of
// taller tiles at SW = 2, their chunks in two register blocks (tma_row_block): 257434 (112 rows: 64
// clusters, 128 CTAs) 22.85 / 22.85 / 22.65 vs 224444 (64 rows, 112 CTAs, the dispatch then) 25.85 / 25.94 /
// 25.64 [bf16 62.34 / 62.97 / 63.37]; 267434 23.95 / 24.08 / 23.80; 128 rows (56 clusters) 258434 24.58 /
// 24.79 / 24.41, 268434 26.40 / 26.50 / 26.27 (removed). A 112-row tile reads x once per 112 rows instead of
// 64 (33.5 MB of x through L2 at M = 16 instead of 58.7) and keeps 128 of 132 SMs busy; session 25's
// 112-row pair splits (67232 / 67242: four consumer warps sharing two superblocks per stage, x
// unswizzled) had lost. Chunks of two superblocks per warp (257824 / 257442) spill, so were not measured.
// Run 2 (same method), a stage more or fewer: 257444 / 257424 23.53 / 23.36 at M = 9 and 23.54 / 23.84 at
// M = 16 vs 257434 22.84 / 22.90 (removed). Run 3: 48-row pair splits on
// 2112x7168 (44 clusters, 88 CTAs) M = 9 / 16: 253434 7.76 / 7.86, 263434 7.33 / 7.47 vs 262434 6.30 / 6.37
// (removed).
constexpr int kTmaNT2[] = {24444, 34444, 22444, 24464, 21844, 21848, 74444, 62434, 124444, 224444, 262434,
                           257434, 57434, 1262434, 1062434};

template <size_t L>
constexpr bool tma_codes_fit(const int (&codes)[L], int nt) {
  for (size_t i = 0; i < L; ++i) {
    if (tma_smem_bytes(codes[i], nt, 8 * nt) > static_cast<int>(kSm90SmemOptin)) return false;
    const TmaDigits d = tma_digits(codes[i]);
    for (int mb = 1; mb <= 8 * nt; ++mb) {
      const TmaLayout l = tma_stage_layout(d.r, d.ks, mb, tma_swizzled(codes[i], nt), nt);
      if (l.off_s % 128 != 0 || l.off_z % 128 != 0) return false;
    }
  }
  return true;
}
static_assert(tma_codes_fit(kTmaNT1, 1) && tma_codes_fit(kTmaNT2, 2),
              "a TMA ring code exceeds 227 KB of smem or puts a box off 128-byte alignment");

// Every SW = 2 code's unswizzled twin (tma_twin), which runs where K % 64 != 0, is compiled too.
template <size_t L>
constexpr bool tma_x3d_twins_listed(const int (&codes)[L]) {
  for (size_t i = 0; i < L; ++i) {
    if (tma_digits(codes[i]).sw != 2) continue;
    bool found = false;
    for (size_t j = 0; j < L; ++j) found = found || codes[j] == tma_twin(codes[i]);
    if (!found) return false;
  }
  return true;
}
static_assert(tma_x3d_twins_listed(kTmaNT1) && tma_x3d_twins_listed(kTmaNT2),
              "an SW = 2 TMA ring code's unswizzled twin is not compiled");

// Defined in w4a16_tma_launch.cu (the call's tensor maps, then the instance of `code`).
cudaError_t tma_dispatch_bf16(const Params& p, int code, int nt, bool pdl, cudaStream_t s);
cudaError_t tma_dispatch_f16(const Params& p, int code, int nt, bool pdl, cudaStream_t s);

}  // namespace w4a16g
}  // namespace qlinear
