// W4A16 GEMM on Hopper warpgroup MMA (wgmma, sm_90a) for M from about a hundred rows of x up, qlinear's
// packed layout (w4a16_gemv.cuh's header). Device code only (no torch headers).
//
//   out[m, n] = sum_k x[m, k] * dt((q[n, k] - zero[grp(k), n]) * scale[grp(k), n])  (+ bias[n])
//
// Computed transposed, out^T = Wdeq x^T: the dequantized weight is wgmma's A operand, which may come
// from registers, so it never goes back to shared memory; x is the B operand, read by the tensor cores
// from a shared-memory stage. dt = x's dtype: one rounding of the scaled weight, as w4a16_gemm.cuh and
// the dequantize + cuBLAS path.
//
// CTA: the superblocks [sb_lo, sb_hi) of its K split (blockIdx.y) for ROWS weight rows x TN tokens, in
// one of three shapes:
//   ROWS = 128: two warpgroups, each 64 of the rows (one m64 wgmma row block) and all TN tokens (the
//               wgmma's N);
//   ROWS = 192: three such warpgroups (384 threads, 168 registers; 128 or 176 tokens). 24576 rows are
//               128 tiles: one wave at M <= 128, where 128-row tiles make 192 (1.45 waves). 2112 rows are
//               11 tiles: at M = 1024, 176 tokens and two K splits summed in pairs make 11 x 6 x 2 = 132 CTAs
//               that move 2.9x fewer x bytes into shared memory than the 64-row ones below (kAb: their A
//               fragments);
//   ROWS = 64:  two warpgroups over the same rows and tokens, warpgroup h the k-steps 4h .. 4h + 3 of
//               every superblock (x atom h, the words' low / high 16-bit planes), the two tiles summed
//               through shared memory at the end. 2112 rows are 33 tiles, so 2112x7168 at M = 1024 is
//               33 x 4 CTAs of 256 tokens, one full wave on 132 SMs, where 128-row tiles give
//               17 x 4 = 68 (half the GPU idle; a K split to fill it makes 136, two waves). They read x
//               twice as often per weight row, which loses on short rows (24576x1536).
//               Mode 2 (kAlt, 128 tokens, 4 or 6 stages): warpgroup h takes all k-steps of every other
//               superblock instead (h, h + 2, ...), in stages of its own that its first thread refills. Each
//               superblock's barrier wait, scale loads and release then happen in one warpgroup, not both:
//               2112x7168 at M = 128 13.27 us against 14.73 (session 39 run 6; qlinear/ops/w4a16.py
//               _CUDA_WGMMA_AUTO).
// Each weight is dequantized once per CTA in every shape. Grid (row tiles, splits, token tiles).
//
// A fragments without a k permutation: wgmma's A slots of lane (g, t) are k = 2t, 2t + 1 (registers
// 0 / 1: rows g / g + 8) and 2t + 8, 2t + 9 (registers 2 / 3). Column 16 i + j of a superblock sits
// in word j, bits [4i, 4i + 4), so the lane reads words {2t, 2t + 1, 2t + 8, 2t + 9}: then plane i
// of those words is exactly k-step i's fragment, and x stays in plain k order -- what a 128-byte
// swizzled K-major B tile must be (w4a16_gemm.cuh instead reads words 4t .. 4t + 3 and permutes
// x's k within each plane, which only mma.sync's register B allows).
//
// Stage (one superblock, 1024-byte aligned), filled by TMA (2-D tensor maps built by the launcher):
//   x  two 64-k atoms [TN tokens][128 bytes] with the hardware's 128-byte swizzle, which the wgmma
//      descriptor (K-major, SBO 1024) reads directly; tokens >= M and columns >= K land as zeros;
//   w  [ROWS rows][64 bytes]: the CTA's rows' 16 words (rows >= N land as zeros, never stored).
// Thread 0 issues a stage's three copies on its `full` mbarrier (with the byte count): the first ST
// superblocks up front, then each refill as soon as the stage's `empty` mbarrier says all the CTA's
// warps are done with it. (A separate producer warp made 288 threads, which ptxas budgets as 384: 168
// registers, too few for 256 tokens. Refills issued by whichever warp released a stage last, through a
// shared acq_rel counter, were slower: session 23 run 5.) The warps wait on `full`, dequantize (scales
// and zero points straight from global memory, loaded one superblock ahead), issue their wgmmas and
// keep that group in flight while the next superblock is dequantized (wait_group 1): a stage is
// released one superblock after its use, when its group is known complete. The A fragments are
// double-buffered for the same reason.
//
// Why the MMA warps dequantize themselves (session 21, benchmarks/results/session21, runs 2-6): at
// M = 128 the main loop is bound by arithmetic, not memory (refills without x and weights: 14.44 ->
// 14.25 us on 2112x7168, 28.66 -> 27.36 on 24576x1536); on 2112x7168 dequantization and wgmmas each
// add ~3.3 us to the 9.4 of everything else, 5.2 together (run 3). Producer warps that dequantize into
// a swizzled bf16 A tile for shared-memory-operand wgmmas were 1.3-2x slower (4 / 8 producer warps:
// 7168x16384 M = 128 134.4 / 107.5 us against 67.7). Not profiled; the likely cost is shared memory:
// A is written once and read by the tensor cores, on top of x.
//
// kProd (codes P = 1, 128 rows x 256 tokens only): an extra warpgroup issues the fills instead of thread 0.
// Its first thread refills a stage as soon as the stage's `empty` mbarrier completes, so MMA warp 0 no
// longer stops in every superblock until the slowest warp has released the stage before. setmaxnreg
// moves registers to the MMA warps (producer 40, MMA warps 232: the launch's 168 x 384 threads), which
// the 128-row, 256-token loop needs (252 registers without a producer). Session 31 runs 1-2
// (benchmarks/results/session31, probe_w4a16_gemm.py, x rotated, us, without -> with): 24576x1536 M = 512 /
// 1024 72.07 -> 70.33 / 141.10 -> 137.59; 7168x16384 M = 256 / 512 / 1024 98.99 -> 97.45 / 200.44 ->
// 194.99 / 430.36 -> 415.70. It lost elsewhere and was removed there: 64 rows x 256 tokens (2112x7168
// M = 1024 54.36 against 52.37) and 128 rows x 128 tokens (M = 128: 14.76 / 27.91 / 67.43 against the
// dispatch's 14.57 / 19.96 / 63.93).
//
// K split: fp32 partials [tile][split][value][thread], summed in split order (deterministic) either as
// w4a16_gemm.cuh does (the last CTA to arrive sums the whole tile and resets the counter), or spread
// (gp.spread: every CTA of the tile waits for all partials, then sums and stores 1 / S of the tile;
// only in a cooperative launch, where all CTAs are resident). Both give the same bits.
// Or in pairs (wp.pair, an even S, clusters of the two CTAs 2i, 2i + 1 of a tile's splits): each CTA hands
// the half of its tile that its peer sums through distributed shared memory, so a pair sum
// Q_i = P_2i + P_2i+1 never crosses L2; with more than one pair, the half-tiles Q_i go through the
// workspace and the last CTA to arrive for a half sums Q_0 + Q_1 + ... (a different order from the
// other two: other bits, as deterministic). Session 35 run 1 (per-CTA stamps, 2112x7168 M = 128, 128 x
// 128 tiles, 7 spread splits): storing the fp32 partials (7.6 MB from 119 CTAs) took 2.4 us per CTA,
// waiting for the others 1.2 and the sums 1.7, against a main loop of 7.2. In pairs, 64-row CTAs x 4
// splits (132 CTAs, 1 MB of half-tiles through L2) took 14.63 us against 14.75 in bench_linear (run 4,
// GPTQ sym), and lost with zero points (15.04 against 14.71, run 3): qlinear/ops/w4a16.py
// _CUDA_WGMMA_AUTO_SYM.
#pragma once

#include <cuda.h>

#include <type_traits>

#include "cluster.cuh"
#include "w4a16_gemm.cuh"

namespace qlinear {
namespace w4a16g {

// Warps per CTA for ROWS weight rows: 8 (two warpgroups) for 64 and 128 rows, 12 (three) for 192.
__host__ __device__ constexpr int wg_warps(int rows) { return rows == 192 ? 12 : 8; }

// Byte layout of one stage for TN tokens and ROWS weight rows: x atoms, then the weight rows; bytes
// rounded to 1024 so that every stage's x atoms stay 1024-byte aligned.
struct WgStage {
  int w_off, bytes;
};
__host__ __device__ constexpr WgStage wg_stage(int tn, int rows) {
  return WgStage{tn * 256, (tn * 256 + rows * 64 + 1023) / 1024 * 1024};
}
// Dynamic shared memory of a launch: ST stages, 2 ST mbarriers, the slack to align the ring to 1024.
__host__ __device__ constexpr int wg_smem_bytes(int tn, int st, int rows) {
  return st * wg_stage(tn, rows).bytes + 16 * st + 1024;
}

// The kernel's parameters: the two tensor maps (CUtensorMap brings its own 128-byte alignment; TMA
// reads them from the parameter space: __grid_constant__) and the GEMM's operands.
struct WgParams {
  CUtensorMap xmap;  // x [M, K]: box 64 columns x TN tokens, 128-byte swizzle
  CUtensorMap wmap;  // qweight [N, words] int32: box 16 words x 128 rows, no swizzle
  CUtensorMap omap;  // out [M, N] (x's dtype): box 64 rows x TN tokens, 128-byte swizzle; used where store_tma
  GemmParams gp;
  // 1: an unsplit tile is stored by wg_store_tile_tma (wg_tma_store_rows; out and its row stride 16-byte aligned),
  // except a last token tile shifted back to end at M (the kernel's tok_own), which the threads store
  int store_tma;
  int pair;  // 1: the K split is summed in pairs (see the header note; a cluster of two CTAs along y)
};

// Compiled (ROWS, TN, ST[, mode]) as P * 10000 + H * 1000 + (TN / 8) * 10 + ST: H = 0 for 128-row CTAs,
// 1 for 64 rows (the warpgroups split the k-steps), 2 for 192 rows (three warpgroups of 64); P = 1 adds a
// producer warpgroup (see kProd in the header note); P = 2, 64 rows and an even ST: the warpgroups take
// alternate superblocks instead of halves of each (kAlt in the kernel); P = 3 / 4 (192 rows x 176 tokens, whose
// 88 accumulators leave no room for two superblocks' A fragments: ptxas serializes the wgmmas): one A buffer,
// each superblock's group waited for before the next is dequantized (the other two warpgroups keep the tensor
// cores busy meanwhile) / A double-buffered over half superblocks (kAb in the kernel).
constexpr int kWgCodes[] = {164, 165, 84, 88, 323, 1164, 1323, 2164, 10323, 21164, 21166, 32223, 32224, 42223, 42224};

__host__ __device__ constexpr int wg_code_rows(int code) {
  return code % 10000 >= 2000 ? 192 : (code % 10000 >= 1000 ? 64 : 128);
}
__host__ __device__ constexpr int wg_code_tokens(int code) { return code % 1000 / 10 * 8; }
__host__ __device__ constexpr bool wg_code_producer(int code) { return code / 10000 == 1; }
__host__ __device__ constexpr bool wg_code_alt(int code) { return code / 10000 == 2; }
// A fragments: 0 double-buffered over superblocks, 1 one buffer, 2 double-buffered over half superblocks
__host__ __device__ constexpr int wg_code_abuf(int code) { return code / 10000 >= 3 ? code / 10000 - 2 : 0; }
// Threads of a CTA: the MMA warps, and with a producer the extra warpgroup.
__host__ __device__ constexpr int wg_threads(int rows, bool producer) { return 32 * wg_warps(rows) + (producer ? 128 : 0); }
// CTAs whose unsplit tiles take wg_store_tile_tma: not 192 rows, whose 168-register CTAs spill with a second
// store path (the launcher asks, so that it encodes the out map only where the kernel reads it).
__host__ __device__ constexpr bool wg_tma_store_rows(int rows) { return rows != 192; }

template <int C>
struct WgCode {
  static constexpr int ROWS = wg_code_rows(C), TN = wg_code_tokens(C), ST = C % 10;
  static constexpr bool PROD = wg_code_producer(C), ALT = wg_code_alt(C);
  static constexpr int AB = wg_code_abuf(C);
  static_assert((TN == 64 || TN == 128 || TN == 256 || (TN == 176 && ROWS == 192 && AB != 0)) && ST >= 2 &&
                    C % 10000 / 1000 <= 2 && C / 10000 <= 4 && !(PROD && ROWS == 192) &&
                    (!ALT || (ROWS == 64 && ST % 2 == 0)) && (AB == 0 || ROWS == 192),
                "a wgmma code is P * 10000 + H * 1000 + (tokens / 8) * 10 + stages (176 tokens with 192 rows and P = 3 "
                "or 4 only; no producer with 192 rows; alternate superblocks with 64 rows and an even number of stages "
                "only; P = 3 / 4 with 192 rows only)");
};

template <size_t L>
constexpr bool wg_codes_fit(const int (&codes)[L]) {
  for (size_t i = 0; i < L; ++i)
    if (static_cast<size_t>(wg_smem_bytes(wg_code_tokens(codes[i]), codes[i] % 10, wg_code_rows(codes[i]))) >
        kSm90SmemOptin)
      return false;
  return true;
}
static_assert(wg_codes_fit(kWgCodes), "a compiled wgmma code needs more than 227 KB of shared memory");

// 1 in device code built for sm_90a (wgmma exists), else 0; the launcher reads it once per device.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define QLINEAR_WGMMA 1
#else
#define QLINEAR_WGMMA 0
#endif

#if QLINEAR_WGMMA

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps a register's value (and its allocation) alive up to this point: after a wait_group, the A
// fragments of the completed group may be reused; before it, the compiler must not.
__device__ __forceinline__ void keep(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void keep(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// Shared-memory matrix descriptor of a K-major, 128-byte swizzled tile, as two 32-bit words: the low
// word holds the start address >> 4 (bits 0-13) and the leading byte offset 16 >> 4 (unused for
// swizzled K-major, bits 16-29); the high word is the same for every tile: stride byte offset
// 1024 >> 4 (one 8-row core group to the next, bits 32-45) and swizzle mode 1 = 128 bytes (bits
// 62-63). The k steps' descriptors differ only in the start address, so they are 32-bit adds to the
// low word (the field cannot carry out: shared addresses stay below 2^18). With the single scale-load
// path below, the 128-token main loop lost 24 of its 659 instructions per two superblocks (session 15,
// SASS of runs 4 and 5).
constexpr uint32_t kWgDescHi = (1024 >> 4) | (1u << 30);
__device__ __forceinline__ uint32_t wg_desc_lo(uint32_t saddr) { return ((saddr & 0x3FFFF) >> 4) | (1u << 16); }

// d[64 x N] += A[64 x 16] (registers) * B[16 x N] (descriptor low word desc_lo, high word kWgDescHi),
// fp32 accumulate. Accumulator layout: d[4 j + c] = row 16 warp + g + 8 (c >= 2), column 8 j + 2 t + (c & 1).
template <typename XT, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint32_t desc_lo);

template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16, 64>(float (&d)[32], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%36, %37};\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

template <>
__device__ __forceinline__ void wgmma_rs<__half, 64>(float (&d)[32], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%36, %37};\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16, 128>(float (&d)[64], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%68, %69};\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

template <>
__device__ __forceinline__ void wgmma_rs<__half, 128>(float (&d)[64], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%68, %69};\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16, 256>(float (&d)[128], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%132, %133};\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

template <>
__device__ __forceinline__ void wgmma_rs<__half, 256>(float (&d)[128], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%132, %133};\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

// 176 tokens (192-row CTAs only): 2112 rows are 11 tiles of 192, so 2112x7168 at M = 1024 is 11 x 6 tiles x 2
// K splits summed in pairs, one wave of 132 CTAs of 2.9x fewer x bytes each than the 64-row tiles'.
template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16, 176>(float (&d)[88], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%92, %93};\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, "
      "{%88, %89, %90, %91}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

template <>
__device__ __forceinline__ void wgmma_rs<__half, 176>(float (&d)[88], const uint32_t (&a)[4], uint32_t desc_lo) {
  asm volatile(
      "{\n.reg .b64 d;\nmov.b64 d, {%92, %93};\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, "
      "{%88, %89, %90, %91}, d, 1, 1, 1, 0;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(desc_lo), "r"(kWgDescHi));
}

// The raw scale bits (2- or 4-byte) and zero points of rows row and row + 8 (rows past N read row
// N - 1) for the group of superblock sb, loaded from global memory; wg_group_vals converts them one
// superblock later, so that the loads' latency is not waited out where they are issued.
struct WgGroupRaw {
  uint32_t s0, s1, z0, z1;
};
// A scale of 2 or 4 bytes at s (element i) as its raw bits: one 16-bit load, and the high half only
// for fp32 (one address for both kinds; a branch on the kind made ptxas compute both kinds'
// addresses every superblock).
__device__ __forceinline__ uint32_t wg_scale_bits(const void* s, int64_t i, bool wide) {
  const uint16_t* h = static_cast<const uint16_t*>(s) + (wide ? 2 * i : i);
  return wide ? (uint32_t{h[0]} | uint32_t{h[1]} << 16) : uint32_t{h[0]};
}
__device__ __forceinline__ WgGroupRaw wg_group_load(const Params& p, int row, int sb) {
  const int64_t gb = static_cast<int64_t>(group_of_sb(sb, p.grp_mul)) * p.n;
  const int64_t i0 = gb + min(row, p.n - 1), i1 = gb + min(row + 8, p.n - 1);
  const bool wide = p.scale_kind == FKind::kFloat32;
  WgGroupRaw v;
  v.s0 = wg_scale_bits(p.scales, i0, wide);
  v.s1 = wg_scale_bits(p.scales, i1, wide);
  v.z0 = p.zeros != nullptr ? p.zeros[i0] : 8u;
  v.z1 = p.zeros != nullptr ? p.zeros[i1] : 8u;
  return v;
}

// A scale's raw bits of kind k as x's dtype, twice (both halves of a packed register): the bits
// themselves when the kinds agree.
template <typename XT>
__device__ __forceinline__ uint32_t wg_scale2(uint32_t raw, FKind k) {
  constexpr FKind kx = std::is_same_v<XT, __nv_bfloat16> ? FKind::kBFloat16 : FKind::kFloat16;
  if (k == kx) return raw * 0x00010001u;
  if (k == FKind::kFloat32) return pack2<XT>(__uint_as_float(raw));
  return pack2<XT>(k == FKind::kBFloat16 ? __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(raw)))
                                         : __half2float(__ushort_as_half(static_cast<unsigned short>(raw))));
}

// The scale (twice, x's dtype) and negated magic + zero (nzero) of rows r and r + 8.
struct WgGroupVals {
  uint32_t s0, s1, nz0, nz1;
};
template <typename XT>
__device__ __forceinline__ WgGroupVals wg_group_vals(const WgGroupRaw& raw, FKind k) {
  return WgGroupVals{wg_scale2<XT>(raw.s0, k), wg_scale2<XT>(raw.s1, k), nzero<XT>(raw.z0), nzero<XT>(raw.z1)};
}

// The NP A fragments (one per 16-k step) of local rows r and r + 8 from a stage's weight rows: words
// {2t, 2t+1, 2t+8, 2t+9} of each row (two 8-byte reads per row), q - zero exact, then times the row's
// scale in x's dtype. NP = 8: all k-steps. NP = 4: k-steps 0-3 (the words' low 16-bit planes, sel =
// 0x5410) or 4-7 (high planes, sel = 0x7632): one prmt per word pair instead of two.
template <typename XT, int NP>
__device__ __forceinline__ void wg_dequant(uint32_t (&a)[NP][4], const unsigned char* w, int r, int t,
                                           const WgGroupVals& gv, uint32_t magic, uint32_t sel) {
  static_assert(NP == 8 || NP == 4, "all 8 k-steps of a superblock, or one half");
  const unsigned char* wr = w + r * 64 + (t >> 1) * 16 + (t & 1) * 8;
  const uint2 l0 = *reinterpret_cast<const uint2*>(wr);
  const uint2 l1 = *reinterpret_cast<const uint2*>(wr + 32);
  const uint2 h0 = *reinterpret_cast<const uint2*>(wr + 8 * 64);
  const uint2 h1 = *reinterpret_cast<const uint2*>(wr + 8 * 64 + 32);
  uint32_t lo[4], hi[4];
  if constexpr (NP == 8) {
    split_words(make_uint4(l0.x, l0.y, l1.x, l1.y), lo);
    split_words(make_uint4(h0.x, h0.y, h1.x, h1.y), hi);
  } else {
    lo[0] = __byte_perm(l0.x, l0.y, sel);
    lo[1] = __byte_perm(l1.x, l1.y, sel);
    hi[0] = __byte_perm(h0.x, h0.y, sel);
    hi[1] = __byte_perm(h1.x, h1.y, sel);
    lo[2] = lo[3] = hi[2] = hi[3] = 0u;  // not read: k-steps 0-3 take index 0 and 1
  }
#pragma unroll
  for (int i = 0; i < NP; ++i) {
    a_frag_i<XT>(i, a[i], lo, hi, gv.nz0, gv.nz1, magic);
    a[i][0] = hmul2<XT>(a[i][0], gv.s0);
    a[i][2] = hmul2<XT>(a[i][2], gv.s0);
    a[i][1] = hmul2<XT>(a[i][1], gv.s1);
    a[i][3] = hmul2<XT>(a[i][3], gv.s1);
  }
}

// The output tile goes out through shared memory (the ring, free once the main loop is done): its fp32
// values as [v][warp * kWgPitch + lane] (v = the thread's accumulator index), then each thread stores
// 8 consecutive rows of one token as one 16-byte vector. Storing the accumulator registers one value
// at a time took ~4 us per CTA (session 19 run 3: %globaltimer stamps, 64 values per thread, each
// with its own index math), longer than 4 superblocks of the main loop.
// Reading value v of rows 8 h + g (g = 0 .. 7) of warp w for token 2 t + (v & 1) takes floats
// v * NW * kWgPitch + w * kWgPitch + 4 g + t (NW warps): with a pitch of 36 the lanes (w, t) of one g
// hit distinct banks.
constexpr int kWgPitch = 36;
// staged tile of V accumulators per thread of NW warps
__host__ __device__ constexpr int wg_tile_bytes(int v, int nw) { return v * nw * kWgPitch * 4; }

template <typename XT>
__device__ __forceinline__ uint32_t wg_pack2(float a, float b) {
  const XT lo = Mma<XT>::from_f(a), hi = Mma<XT>::from_f(b);
  unsigned short ul, uh;
  memcpy(&ul, &lo, 2);
  memcpy(&uh, &hi, 2);
  return uint32_t{ul} | uint32_t{uh} << 16;
}

// Stores accumulator indices [v_lo, v_hi) of the staged tile sm (+ bias) of the tokens from tok0: 4 NW vectors
// per index (NW warps x 4 token columns t), rows past N, tokens past M and tokens below tok_lo left out;
// 16-byte stores where out and its row stride allow, else one element at a time. Same value per element as
// store_frag.
// Warp w holds rows 16 (w % (ROWS / 16)) .. + 15 of the tile and, with 64 rows, the tokens of its
// warpgroup's half of the summed tile (WN = TN / 2 each).
template <typename XT, int ROWS, int WN>
__device__ __forceinline__ void wg_store_tile(const Params& p, const float* sm, int v_lo, int v_hi, int row0,
                                              int tok0, int tok_lo) {
  constexpr int NW = wg_warps(ROWS), VEC = 4 * NW;
  const bool vec = reinterpret_cast<uintptr_t>(p.out) % 16 == 0 && p.out_stride % 8 == 0;
  for (int ch = v_lo * VEC + static_cast<int>(threadIdx.x); ch < v_hi * VEC; ch += 32 * NW) {
    const int v = ch / VEC, w = (ch >> 2) % NW, t = ch & 3;
    const int tok = tok0 + (ROWS == 64 ? (w >> 2) * WN : 0) + (v >> 2) * 8 + 2 * t + (v & 1);
    const int row = row0 + (w % (ROWS / 16)) * 16 + (v & 2) * 4;
    if (tok >= p.m || tok < tok_lo) continue;
    const float* src = sm + (v * NW + w) * kWgPitch + t;
    float s[8];
#pragma unroll
    for (int g = 0; g < 8; ++g) s[g] = src[4 * g];
    if (p.bias != nullptr)
#pragma unroll
      for (int g = 0; g < 8; ++g)
        if (row + g < p.n) s[g] += load_f(p.bias, row + g, p.bias_kind);
    XT* dst = static_cast<XT*>(p.out) + static_cast<int64_t>(tok) * p.out_stride + row;
    if (vec && row + 8 <= p.n) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(wg_pack2<XT>(s[0], s[1]), wg_pack2<XT>(s[2], s[3]),
                                                  wg_pack2<XT>(s[4], s[5]), wg_pack2<XT>(s[6], s[7]));
    } else {
#pragma unroll
      for (int g = 0; g < 8; ++g)
        if (row + g < p.n) dst[g] = Mma<XT>::from_f(s[g]);
    }
  }
}

// The unsplit tile's store through TMA bulk tensor stores (session 34, run 6: the staged store above took
// 2.4 us of 48.5 per 64-row CTA on 2112x7168 at M = 1024 and 3.4 of ~21 per 128-row CTA on 24576x1536):
// each warp writes its values, bias added, in x's dtype into shared memory with stmatrix.trans (an m16n8 C
// fragment's 8 x 8 halves, transposed: one 16-byte chunk of 8 weight rows per token), as ROWS / 64 boxes of
// [TN tokens][64 rows] in the 128-byte swizzle (chunk c of token t at chunk c ^ (t % 8): the 8 tokens of one
// stmatrix matrix land in 8 different bank groups; run 7's unswizzled [TN][ROWS] layout, 8-way conflicts,
// lost), then one thread stores each box (rows past N and tokens past M are not written). f: V values per
// thread, acc[4 j + c] layout (register c of the m16n8 fragment of token tile j), the warp's tokens from
// tok_base, rows from 16 (warp % (ROWS / 16)). base: 1024-aligned free shared memory of TN x ROWS elements;
// every MMA warp calls it (it syncs them on NSYNC).
template <typename XT, int ROWS, int TN, int V, int NSYNC>
__device__ __forceinline__ void wg_store_tile_tma(const Params& p, const CUtensorMap* omap, const float (&f)[V],
                                                  uint32_t base, int row0, int tok0, int tok_base) {
  static_assert(V % 8 == 0 && ROWS % 64 == 0, "two token tiles per stmatrix.x4; boxes of 64 rows");
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int wrow = (warp % (ROWS / 16)) * 16, g = lane >> 2;
  float b0 = 0.f, b1 = 0.f;
  if (p.bias != nullptr) {
    const int ra = row0 + wrow + g;
    if (ra < p.n) b0 = load_f(p.bias, ra, p.bias_kind);
    if (ra + 8 < p.n) b1 = load_f(p.bias, ra + 8, p.bias_kind);
  }
  // lane l gives the address of row l % 8 (token t) of matrix l / 8: token tile j + (l / 8) / 2, rows
  // 8 ((l / 8) % 2) .. + 7 of the warp's 16, i.e. chunk c of box r / 64
  const int mi = lane >> 3, t = lane & 7, r = wrow + (mi & 1) * 8;
  const uint32_t addr0 = base + static_cast<uint32_t>((r / 64) * TN * 128 + (tok_base + 8 * (mi >> 1) + t) * 128 +
                                                      ((((r % 64) >> 3) ^ t) << 4));
#pragma unroll
  for (int j = 0; j < V / 4; j += 2) {
    const uint32_t r0 = wg_pack2<XT>(f[4 * j] + b0, f[4 * j + 1] + b0);
    const uint32_t r1 = wg_pack2<XT>(f[4 * j + 2] + b1, f[4 * j + 3] + b1);
    const uint32_t r2 = wg_pack2<XT>(f[4 * j + 4] + b0, f[4 * j + 5] + b0);
    const uint32_t r3 = wg_pack2<XT>(f[4 * j + 6] + b1, f[4 * j + 7] + b1);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                     addr0 + static_cast<uint32_t>(j * 8 * 128)),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
  }
  // the generic-proxy writes, visible to the bulk copies' async proxy, from every warp before the stores
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  cta_sync<NSYNC>();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int b = 0; b < ROWS / 64; ++b) tma::tensor_store_2d(omap, row0 + 64 * b, tok0, base + b * TN * 128);
    tma::bulk_store_commit_wait_read();
  }
}

// Spread K split, after the rendezvous: this CTA (split y = blockIdx.y of S = gridDim.y) sums the
// accumulator indices [y V / S, (y + 1) V / S) of the tile over the S splits' partials in split order
// (the order, hence the bits, of the last-arrival sum) into the staged tile sm. Partial float
// f = v * NT + thread (NT = 32 NW threads); one index is NT / 4 float4. Each thread keeps kB float4 x kA
// splits in flight (wg_spread_sum picks them).
template <int kA, int kB, int NW>
__device__ __forceinline__ void wg_spread_sum_in(const float* base, int64_t tile_floats, int v_lo, int v_hi,
                                                 float* sm) {
  constexpr int NT = 32 * NW;
  const int S = static_cast<int>(gridDim.y);
  const int64_t nq = tile_floats / 4;
  const int q_lo = v_lo * (NT / 4), q_hi = v_hi * (NT / 4);
  const float4* b4 = reinterpret_cast<const float4*>(base);
  for (int q0 = q_lo + static_cast<int>(threadIdx.x); q0 < q_hi; q0 += kB * NT) {
    float4 sum[kB];
#pragma unroll
    for (int b = 0; b < kB; ++b) sum[b] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int sp = 0; sp < S; sp += kA) {
      float4 t[kA][kB];
#pragma unroll
      for (int a = 0; a < kA; ++a)
#pragma unroll
        for (int b = 0; b < kB; ++b) {
          const int q = q0 + b * NT;
          t[a][b] = sp + a < S && q < q_hi ? __ldcg(b4 + (sp + a) * nq + q) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
      for (int a = 0; a < kA; ++a)
#pragma unroll
        for (int b = 0; b < kB; ++b)
          if (sp + a < S) {
            sum[b].x += t[a][b].x;
            sum[b].y += t[a][b].y;
            sum[b].z += t[a][b].z;
            sum[b].w += t[a][b].w;
          }
    }
#pragma unroll
    for (int b = 0; b < kB; ++b) {
      const int q = q0 + b * NT;
      if (q >= q_hi) continue;
      const int f = 4 * q, v = f / NT, th = f % NT;  // th % 4 == 0: one warp, 4 lanes
      *reinterpret_cast<float4*>(sm + (v * NW + (th >> 5)) * kWgPitch + (th & 31)) = sum[b];
    }
  }
}
// Up to 4 splits: 4 float4 x 4 splits per round trip (2 splits of a 64-token tile: the whole share
// of 4 float4 per thread at once). More: 3 x 8, so that 7 splits of a 128-token tile (2.25-2.5
// float4 per thread) take one round trip instead of two. Session 19 run 10 against runs 9 / 5 (us, bf16
// of the same run in brackets): 2112x7168 M = 128 14.60 [14.03] against 14.77 [14.14]; 8 x 3 at 2
// splits: 7168x16384 M = 64 66.79 [62.16] against 64.86 [62.11].
template <int NW>
__device__ __forceinline__ void wg_spread_sum(const float* base, int64_t tile_floats, int v_lo, int v_hi, float* sm) {
  if (gridDim.y <= 4)
    wg_spread_sum_in<4, 4, NW>(base, tile_floats, v_lo, v_hi, sm);
  else
    wg_spread_sum_in<8, 3, NW>(base, tile_floats, v_lo, v_hi, sm);
}

// The pair-summed K split (wp.pair; see the header note) of this CTA's V values per thread f: half r =
// cluster rank (values [r V / 2, (r + 1) V / 2)) is this CTA's to sum and store. The other half goes to the
// peer through this CTA's shared memory (sm, free after the main loop), read remotely between two cluster
// barriers; then, with more than one pair per tile, the pair sums go through the workspace and the last of
// the tile's pairs to arrive for this half adds them in pair order. NSYNC: the MMA warps' barrier.
template <typename XT, int ROWS, int WN, int V, int NSYNC>
__device__ __forceinline__ void wg_pair_finish(const WgParams& wp, const float (&f)[V], float* sm, int tile, int row0,
                                               int tok0, int tok_lo) {
  constexpr int NW = wg_warps(ROWS), NT = 32 * NW, H = V / 2;
  const GemmParams& gp = wp.gp;
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const bool hi = cluster::rank() != 0;  // this CTA sums values [H, V), its peer [0, H)
#pragma unroll
  for (int j = 0; j < H; ++j) sm[j * NT + tid] = hi ? f[j] : f[H + j];
  cluster::sync();  // the peer's half is in its shared memory
  const uint32_t theirs = cluster::peer(static_cast<uint32_t>(__cvta_generic_to_shared(sm)), hi ? 0u : 1u);
  float g[H];
#pragma unroll
  for (int j = 0; j < H; ++j) g[j] = cluster::load_f32(theirs + 4u * static_cast<uint32_t>(j * NT + tid));
  // P_2i + P_2i+1 (fp32 addition commutes: the same bits in either CTA)
#pragma unroll
  for (int j = 0; j < H; ++j) g[j] += hi ? f[H + j] : f[j];
  cluster::sync();  // the peer has read this CTA's half: sm is free again
  const int pairs = static_cast<int>(gridDim.y) / 2, pi = static_cast<int>(blockIdx.y) / 2, half = hi ? 1 : 0;
  if (pairs > 1) {
    // workspace: [tile][half][pair][j][thread]
    float* base = gp.ws + (static_cast<int64_t>(tile) * 2 + half) * pairs * H * NT;
#pragma unroll
    for (int j = 0; j < H; ++j) __stcg(base + (pi * H + j) * NT + tid, g[j]);
    if (!splitk_last_of<NSYNC>(gp.counters + 2 * tile + half, pairs)) return;
    float t[H];
#pragma unroll
    for (int j = 0; j < H; ++j) t[j] = 0.f;
    for (int q = 0; q < pairs; ++q) {
      if (q == pi) {
#pragma unroll
        for (int j = 0; j < H; ++j) t[j] += g[j];
      } else {
#pragma unroll
        for (int j = 0; j < H; ++j) t[j] += __ldcg(base + (q * H + j) * NT + tid);
      }
    }
#pragma unroll
    for (int j = 0; j < H; ++j) g[j] = t[j];
  }
  const int v0 = half * H;
#pragma unroll
  for (int j = 0; j < H; ++j) sm[((v0 + j) * NW + warp) * kWgPitch + lane] = g[j];
  cta_sync<NSYNC>();
  wg_store_tile<XT, ROWS, WN>(gp.p, sm, v0, v0 + H, row0, tok0, tok_lo);
}

#endif  // QLINEAR_WGMMA

template <typename XT, int TN, int ST, int ROWS, bool PROD, bool ALT, int AB>
__global__ void __launch_bounds__(wg_threads(ROWS, PROD), 1) w4_wgmma_kernel(const __grid_constant__ WgParams wp) {
#if QLINEAR_WGMMA
  constexpr int NW = wg_warps(ROWS), NT = 32 * NW;  // MMA warps and their threads
  // the MMA warps' barrier (named barrier 1 once a producer warpgroup has left)
  constexpr int kSync = PROD ? NT : 0;
  // ROWS = 64: warpgroup h takes k-steps 4h .. 4h + 3 of every superblock over the same 64 rows and all
  // TN tokens, and the two tiles are summed at the end (half the dequantization of each warpgroup).
  // kAlt (ROWS = 64, ST even): warpgroup h takes all k-steps of the superblocks j = h, h + 2, ... instead, in
  // stages of its own parity (s = j % ST), which its first thread refills: two pipelines that share the
  // tensor cores and meet only for the final sum. Each superblock's barrier wait, scale loads and release
  // happen in one warpgroup instead of both.
  constexpr bool kHalf = ROWS == 64;
  constexpr bool kAlt = ALT;
  static_assert(!kAlt || (kHalf && !PROD && ST % 2 == 0), "alternate superblocks: 64 rows, no producer, even ST");
  constexpr int NP = kHalf && !kAlt ? 4 : 8;  // k-steps per superblock and warpgroup
  constexpr int VA = TN / 2;               // accumulators per thread: m64 x TN per warpgroup
  constexpr int V = kHalf ? VA / 2 : VA;   // values per thread in the summed tile
  constexpr int WS = kHalf ? TN / 2 : TN;  // tokens per warpgroup in the summed tile
  static_assert(ST >= 2, "a stage is released one superblock after its use");
  static_assert(wg_tile_bytes(V, NW) <= ST * wg_stage(TN, ROWS).bytes, "the staged output tile must fit in the ring");
  // A fragments (wg_code_abuf): kAb = 0 two superblocks' (the one in the tensor cores and the next), 1 one
  // superblock's (the group waited for before the next dequantize), 2 two half superblocks' (k-steps 0-3 /
  // 4-7, each half its own wgmma group)
  constexpr int kAb = AB;
  static_assert(kAb == 0 || (!kHalf && !PROD), "one A buffer or half-superblock buffers: 128 / 192 rows, no producer");
  constexpr uint32_t kStage = wg_stage(TN, ROWS).bytes;
  extern __shared__ __align__(16) unsigned char wg_smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(wg_smem_raw));
  const uint32_t ring = (raw + 1023u) & ~1023u;  // 128-byte swizzle atoms need 1024-byte alignment
  unsigned char* smem = wg_smem_raw + (ring - raw);
  const uint32_t full0 = ring + ST * kStage, empty0 = full0 + 8 * ST;  // mbarriers
  const GemmParams& gp = wp.gp;
  const Params& p = gp.p;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int row0 = blockIdx.x * ROWS;
  // A last token tile that ends past M computes the TN tokens that end at M instead (where M >= TN) and stores
  // only its own, [tok_own, M): with x boxes partly past M (TMA's zero fill), the GEMM took up to twice as long.
  // Session 38 runs 6-7 (probe_w4a16_gemm.py, x rotated, us, before -> after): 2112x7168 64-row CTAs M = 520 /
  // 600 / 900 97.44 / 81.01 / 68.40 -> 53.47 / 53.04 / 54.75 (M = 768, full tiles: 47.98); 24576x1536 M = 600
  // 114.13 -> 96.41; 7168x16384 M = 600 324.81 -> 294.95. Not explained (the store was not it: run 6 stored
  // partial tiles through the threads, no change). The tokens this tile shares with the one before get the
  // same bits there (same operands, same order) and are not stored twice.
  const int tok_own = blockIdx.z * TN;
  const int tok0 = p.m >= TN && tok_own + TN > p.m ? p.m - TN : tok_own;
  const int sb_lo = blockIdx.y * gp.sb_per_split;
  const int nsb = min(sb_lo + gp.sb_per_split, p.nsb) - sb_lo;  // superblocks of this CTA

  // superblock j into its stage (thread 0 only): the weight rows (with the stage's byte count), then x
  auto fill_w = [&](int j) {
    const int s = j % ST;
    const uint32_t st = ring + s * kStage, bar = full0 + 8 * s;
    tma::mbar_arrive_tx(bar, static_cast<uint32_t>(TN * 256 + ROWS * 64));
    tma::tensor_copy_2d(st + wg_stage(TN, ROWS).w_off, &wp.wmap, (sb_lo + j) * 16, row0, bar);
  };
  auto fill_x = [&](int j) {
    const int s = j % ST;
    const uint32_t st = ring + s * kStage, bar = full0 + 8 * s;
    const int sb = sb_lo + j;
    tma::tensor_copy_2d(st, &wp.xmap, sb * 128, tok0, bar);
    tma::tensor_copy_2d(st + TN * 128, &wp.xmap, sb * 128 + 64, tok0, bar);
  };
  // the first ST superblocks (the weights before griddepcontrol.wait, x after it); superblock j + ST into
  // superblock j's stage once every MMA warp has released it
  auto fill_first = [&] {
    for (int j = 0; j < ST && j < nsb; ++j) fill_w(j);
    pdl::wait();
    for (int j = 0; j < ST && j < nsb; ++j) fill_x(j);
  };
  auto refill_after = [&](int j) {
    tma::mbar_wait(empty0 + 8 * (j % ST), static_cast<uint32_t>((j / ST) & 1));
    fill_w(j + ST);
    fill_x(j + ST);
  };
  // Programmatic dependent launch (when the launcher asks for it): the next grid may be scheduled at
  // once (its CTAs take SMs this grid leaves idle or frees). The first stages' weights, scales and
  // zero points, which no kernel writes, are requested before griddepcontrol.wait; x, the workspace,
  // the counters and the output only after it (the issuing thread's x copies; every thread waits).
  pdl::launch_dependents();
  if (tid == 0) {
    for (int s = 0; s < ST; ++s) {
      tma::mbar_init(full0 + 8 * s, 1);
      tma::mbar_init(empty0 + 8 * s, kAlt ? 4 : NW);  // kAlt: the owning warpgroup's 4 warps
    }
    tma::mbar_fence_init();
  }
  __syncthreads();
  if constexpr (PROD) {
    // kProd: the producer warpgroup gives its registers to the MMA warps (40 + 2 x 232 per thread = the
    // 168 x 3 the launch holds) and its first thread issues every fill, each as soon as the stage's
    // `empty` mbarrier completes, so no MMA warp ever waits for the others to refill a stage. It leaves
    // once the last fill is issued; the MMA warps sync on named barrier 1 from then on.
    if (warp >= NW) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
      if (tid == NT) {
        fill_first();
        for (int j = ST; j < nsb; ++j) refill_after(j - ST);
      }
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
  } else if (tid == 0) {
    fill_first();
  }

  const int g = lane >> 2, t = lane & 3;
  // local row of the lane's first A row: 16 (warp % (ROWS / 16)) + g (128 rows: warpgroup 64 + warp
  // 16 + g); with 64 rows, warpgroup h reads x atom h (k-steps 4h ..) and the words' plane half h
  const int r = (warp % (ROWS / 16)) * 16 + g;
  const uint32_t x_off = kHalf && !kAlt ? static_cast<uint32_t>(warp >> 2) * TN * 128 : 0u;
  const uint32_t sel = kHalf && !kAlt && warp >= 4 ? 0x7632u : 0x5410u;
  // kAlt: this warpgroup's first superblock and the step between its superblocks
  const int j0 = kAlt ? warp >> 2 : 0;
  constexpr int kJs = kAlt ? 2 : 1;
  uint32_t magic;
  asm("mov.b32 %0, %1;" : "=r"(magic) : "n"(Mma<XT>::kMagic));
  float acc[VA];
#pragma unroll
  for (int v = 0; v < VA; ++v) acc[v] = 0.f;
  uint32_t a[kAb == 1 ? 1 : 2][kAb == 2 ? 4 : NP][4];
  WgGroupRaw graw = wg_group_load(p, row0 + r, min(sb_lo + j0, p.nsb - 1));
  pdl::wait();

  // Every scheme's superblock j starts alike: convert its group values (loaded one superblock ago), load those of
  // this warpgroup's next superblock, wait for its stage; and hands a completed superblock jp's stage back alike
  // (warpgroup j0's first thread refills it, where no producer warpgroup does).
  auto enter = [&](int j) {
    const WgGroupVals gv = wg_group_vals<XT>(graw, p.scale_kind);
    graw = wg_group_load(p, row0 + r, min(sb_lo + j + kJs, p.nsb - 1));
    tma::mbar_wait(full0 + 8 * (j % ST), static_cast<uint32_t>((j / ST) & 1));
    return gv;
  };
  auto release = [&](int jp) {
    if (lane == 0) tma::mbar_arrive(empty0 + 8 * (jp % ST));
    if (!PROD && tid == j0 * 128 && jp + ST < nsb) refill_after(jp);
  };
  // each scheme's step is defined in its own branch: the others' bodies index A buffers of another shape
  if constexpr (kAb == 1) {
    // kAb = 1: superblock j in one wgmma group, waited for before the next dequantize (released at once)
    auto step_one = [&](int j) {
      const int s = j % ST;
      const WgGroupVals gv = enter(j);
      wg_dequant<XT, 8>(a[0], smem + s * kStage + wg_stage(TN, ROWS).w_off, r, t, gv, magic, 0x5410u);
      const uint32_t d0 = wg_desc_lo(ring + s * kStage);
      wg_fence();
#pragma unroll
      for (int i = 0; i < 8; ++i) wgmma_rs<XT, TN>(acc, a[0][i], d0 + ((((i >> 2) * TN * 128) + (i & 3) * 32) >> 4));
      wg_commit();
      wg_wait<0>();
      release(j);
    };
    for (int j = 0; j < nsb; ++j) step_one(j);
  } else if constexpr (kAb == 2) {
    // kAb = 2: superblock j as two groups of 4 k-steps (the words' low / high planes, x atoms 0 / 1), each
    // dequantized into its own buffer while the other half's group is in the tensor cores; superblock j - 1 is
    // complete (its stage released) once the first half of j has been issued and the group before waited for
    auto step_halves = [&](int j) {
      const int s = j % ST;
      const WgGroupVals gv = enter(j);
      const unsigned char* w = smem + s * kStage + wg_stage(TN, ROWS).w_off;
      const uint32_t d0 = wg_desc_lo(ring + s * kStage);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        wg_dequant<XT, 4>(a[h], w, r, t, gv, magic, h ? 0x7632u : 0x5410u);
        wg_fence();
#pragma unroll
        for (int i = 0; i < 4; ++i) wgmma_rs<XT, TN>(acc, a[h][i], d0 + ((h * TN * 128 + i * 32) >> 4));
        wg_commit();
        wg_wait<1>();
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int c = 0; c < 4; ++c) keep(a[h ^ 1][i][c]);
        if (h == 0 && j >= 1) release(j - 1);
      }
    };
    for (int j = 0; j < nsb; ++j) step_halves(j);
  } else {
    // Superblock j: enter it, dequantize into buffer B, issue the NP wgmmas, wait for this warpgroup's
    // superblock before j and release its stage.
    auto step = [&](auto buf, int j) {
      constexpr int B = decltype(buf)::value;
      const int s = j % ST;
      const WgGroupVals gv = enter(j);
      wg_dequant<XT, NP>(a[B], smem + s * kStage + wg_stage(TN, ROWS).w_off, r, t, gv, magic, sel);
      const uint32_t d0 = wg_desc_lo(ring + s * kStage + x_off);
      wg_fence();
#pragma unroll
      for (int i = 0; i < NP; ++i) wgmma_rs<XT, TN>(acc, a[B][i], d0 + ((((i >> 2) * TN * 128) + (i & 3) * 32) >> 4));
      wg_commit();
      wg_wait<1>();
#pragma unroll
      for (int i = 0; i < NP; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c) keep(a[B ^ 1][i][c]);
      if (j >= j0 + kJs) release(j - kJs);  // this warpgroup's superblock before j: its group is complete
    };
    int j = j0;
    for (; j + kJs < nsb; j += 2 * kJs) {
      step(std::integral_constant<int, 0>{}, j);
      step(std::integral_constant<int, 1>{}, j + kJs);
    }
    if (j < nsb) step(std::integral_constant<int, 0>{}, j);
  }
  wg_wait<0>();
#pragma unroll
  for (int v = 0; v < VA; ++v) keep(acc[v]);
  cta_sync<kSync>();  // every warp is done with the ring: it holds the staged output tile from here on
  float* sm = reinterpret_cast<float*>(smem);

  // The tile's values, V per thread (f = acc, or with 64 rows the two warpgroups' sums), to the
  // workspace for a K split, then staged in shared memory and stored.
  auto finish = [&](float (&f)[V]) {
    const int tile = blockIdx.x + gridDim.x * blockIdx.z;
    if constexpr (!PROD && V % 2 == 0) {
      if (wp.pair) {
        wg_pair_finish<XT, ROWS, WS, V, kSync>(wp, f, sm, tile, row0, tok0, tok_own);
        return;
      }
    }
    if (gridDim.y > 1) {
      const int64_t tile_floats = static_cast<int64_t>(NT) * V;
      float* mine = gp.ws + (static_cast<int64_t>(tile) * gridDim.y + blockIdx.y) * tile_floats;
#pragma unroll
      for (int v = 0; v < V; ++v) __stcg(mine + v * NT + tid, f[v]);
      const float* base = gp.ws + static_cast<int64_t>(tile) * gridDim.y * tile_floats;
      if (gp.spread) {
        splitk_rendezvous<kSync>(gp.counters, tile);
        // the departure's atomic is in flight while the share is summed
        const int dep = tid == 0 ? splitk_depart(gp.counters, tile) : 0;
        const int S = static_cast<int>(gridDim.y), y = static_cast<int>(blockIdx.y);
        const int v_lo = y * V / S, v_hi = (y + 1) * V / S;
        wg_spread_sum<NW>(base, tile_floats, v_lo, v_hi, sm);
        cta_sync<kSync>();
        wg_store_tile<XT, ROWS, WS>(p, sm, v_lo, v_hi, row0, tok0, tok_own);
        if (tid == 0) splitk_reset_if_last(gp.counters, tile, dep);
        return;
      }
      if (!splitk_last_arrival<kSync>(gp.counters, tile)) return;
      // split-major: the V loads of one split are independent (a v-major loop waited out one L2 round
      // trip per value: run 5, 2112x7168 M = 128 took 89 us with 7 splits against 69 with none)
#pragma unroll
      for (int v = 0; v < V; ++v) f[v] = 0.f;
      for (int sp = 0; sp < static_cast<int>(gridDim.y); ++sp) {
        const float* part = base + sp * tile_floats + tid;
#pragma unroll
        for (int v = 0; v < V; ++v) f[v] += __ldcg(part + v * NT);
      }
    }
    if constexpr (wg_tma_store_rows(ROWS)) {
      // not a shifted last tile (its box would rewrite the tile before's tokens)
      if (wp.store_tma && gridDim.y == 1 && tok0 == tok_own) {
        wg_store_tile_tma<XT, ROWS, TN, V, kSync>(p, &wp.omap, f, ring, row0, tok0, kHalf ? (warp >> 2) * WS : 0);
        return;
      }
    }
    // acc[4 j + c] is register c of the m16n8 C fragment of the warp's 16 rows and token tile j
#pragma unroll
    for (int v = 0; v < V; ++v) sm[(v * NW + warp) * kWgPitch + lane] = f[v];
    cta_sync<kSync>();
    wg_store_tile<XT, ROWS, WS>(p, sm, 0, V, row0, tok0, tok_own);
  };
  if constexpr (kHalf) {
    // warpgroup h keeps values [h V, (h + 1) V) of its tile (tokens [h TN / 2, (h + 1) TN / 2)) and
    // hands the other half to the other warpgroup through shared memory: own + other, the same bits
    // in either warpgroup (fp32 addition commutes)
    const int lt = tid & 127;
    if (warp < 4) {
#pragma unroll
      for (int v = 0; v < V; ++v) sm[v * 128 + lt] = acc[V + v];
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v) sm[(V + v) * 128 + lt] = acc[v];
    }
    cta_sync<kSync>();
    float f[V];
    if (warp < 4) {
#pragma unroll
      for (int v = 0; v < V; ++v) f[v] = acc[v] + sm[(V + v) * 128 + lt];
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v) f[v] = acc[V + v] + sm[v * 128 + lt];
    }
    cta_sync<kSync>();  // the staged tile reuses this shared memory
    finish(f);
  } else {
    finish(acc);
  }
#else
  __trap();  // not built for sm_90a: the launcher refuses before launching (w4_wgmma_built)
#endif
}

__device__ int wgmma_built_flag = QLINEAR_WGMMA;

}  // namespace w4a16g
}  // namespace qlinear
