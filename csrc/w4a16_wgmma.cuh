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
// CTA: two warpgroups, 128 weight rows (64 each: one m64 wgmma row block) x TN tokens (the wgmma's N)
// x the superblocks [sb_lo, sb_hi) of its K split (blockIdx.y). Grid (row tiles, splits, token tiles).
//
// A fragments without a k permutation: wgmma's A slots of lane (g, t) are k = 2t, 2t + 1 (registers
// 0 / 1: rows g / g + 8) and 2t + 8, 2t + 9 (registers 2 / 3). Column 16 i + j of a superblock sits
// in word j, bits [4i, 4i + 4), so the lane reads words {2t, 2t + 1, 2t + 8, 2t + 9}: then plane i
// of those words is exactly k-step i's fragment, and x stays in plain k order -- what a 128-byte
// swizzled K-major B tile must be (w4a16_gemm.cuh instead reads words 4t .. 4t + 3 and permutes
// x's k within each plane, which only mma.sync's register B allows).
//
// Stage (one superblock, 1024-byte aligned):
//   x  two 64-k atoms [TN tokens][128 bytes], 16-byte chunk c of token r at chunk c ^ (r % 8): the
//      hardware's 128-byte swizzle, so the descriptor (K-major, SBO 1024) reads it directly;
//   w  [128 rows][64 bytes], chunk c of row r at c ^ (2 ((r >> 1) & 1)): a warp's 8-byte reads of
//      four rows (two chunks each) then hit 32 distinct banks;
//   the group's scales [128] (scale dtype) and zeros [128] (uint8) for the CTA's rows.
// All 256 threads fill stages with cp.async ST - 2 superblocks ahead. Two ahead is the most the ring
// allows: each warpgroup keeps one superblock's wgmma group in flight (wait_group 1) while it
// dequantizes the next, so the stage of superblock j - 1 is still being read when j is computed,
// and a stage is refilled only after the __syncthreads that follows both warpgroups' wait for it.
// The A fragments are double-buffered (registers of superblock j - 1 stay live until its group is
// known complete).
//
// K split: as w4a16_gemm.cuh (fp32 partials [tile][split][value][thread], last CTA to arrive sums in
// split order, resets the counter).
#pragma once

#include "w4a16_gemm.cuh"

namespace qlinear {
namespace w4a16g {

constexpr int kWgRows = 128;     // weight rows per CTA (two warpgroups of 64)
constexpr int kWgThreads = 256;  // threads per CTA

// Byte layout of one stage for TN tokens and ssize-byte scales; bytes rounded to 1024 so that every
// stage's x atoms stay 1024-byte aligned.
struct WgStage {
  int w_off, s_off, z_off, bytes;
};
__host__ __device__ constexpr WgStage wg_stage(int tn, int ssize) {
  const int x_bytes = tn * 256;
  const int w_off = x_bytes, s_off = w_off + kWgRows * 64, z_off = s_off + kWgRows * ssize;
  return WgStage{w_off, s_off, z_off, (z_off + kWgRows + 1023) / 1024 * 1024};
}
// Dynamic shared memory of a launch: ST stages plus the slack to align the ring to 1024 bytes.
__host__ __device__ constexpr int wg_smem_bytes(int tn, int st, int ssize) {
  return st * wg_stage(tn, ssize).bytes + 1024;
}

// Compiled (TN, ST) as (TN / 8) * 10 + ST.
constexpr int kWgCodes[] = {164, 165, 84, 88};

template <int C>
struct WgCode {
  static constexpr int TN = C / 10 * 8, ST = C % 10;
  static_assert((TN == 64 || TN == 128) && ST >= 3, "a wgmma code is (tokens / 8) * 10 + stages, stages >= 3");
};

template <size_t L>
constexpr bool wg_codes_fit(const int (&codes)[L]) {
  for (size_t i = 0; i < L; ++i)
    if (wg_smem_bytes(codes[i] / 10 * 8, codes[i] % 10, 4) > 227 * 1024) return false;
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

// Shared-memory matrix descriptor of a K-major, 128-byte swizzled tile: start address >> 4 (bits
// 0-13), leading byte offset 16 >> 4 (unused for swizzled K-major), stride byte offset 1024 >> 4 (one
// 8-row core group to the next), swizzle mode 1 = 128 bytes (bits 62-63).
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr) {
  return static_cast<uint64_t>((saddr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

// d[64 x N] += A[64 x 16] (registers) * B[16 x N] (descriptor), fp32 accumulate. Accumulator layout:
// d[4 j + c] = row 16 warp + g + 8 (c >= 2), column 8 j + 2 t + (c & 1).
template <typename XT, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc);

template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16, 64>(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, 1, 1, 1, 0;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void wgmma_rs<__half, 64>(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, 1, 1, 1, 0;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void wgmma_rs<__nv_bfloat16, 128>(float (&d)[64], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, 1, 1, 1, 0;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <>
__device__ __forceinline__ void wgmma_rs<__half, 128>(float (&d)[64], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, 1, 1, 1, 0;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

// Fills a stage with superblock sb (TN tokens, 256 threads): x as 16-byte pieces into the swizzled
// atoms (tokens >= M and columns >= K zero-filled), the CTA's 128 weight rows (rows past N read row
// N - 1, never stored), then 4-byte pieces of the group's scales and zeros. The per-thread source
// pointers and stage offsets are computed once per CTA: thread tid copies x piece tid % 16 of tokens
// tid / 16 + 16 i (the same swizzled chunk for every i) and weight piece tid % 4 of rows tid / 4 + 64 i,
// so a superblock only adds its offset.
template <int TN>
struct WgFill {
  static constexpr int XI = TN * 16 / kWgThreads;  // x pieces per thread
  static constexpr int WI = kWgRows * 4 / kWgThreads;  // weight pieces per thread
  static_assert(XI * kWgThreads == TN * 16 && WI * kWgThreads == kWgRows * 4, "whole pieces per thread");
  const char* xsrc;  // piece 0's source at superblock 0
  int64_t xstep;     // bytes between the thread's x pieces (16 tokens)
  uint32_t xdst;     // piece 0's offset in a stage (piece i: + i * 16 * 128)
  uint32_t xok;      // bit i: piece i's token < M
  int xcol;          // the pieces' column at superblock 0
  const uint32_t* wsrc[WI];
  uint32_t wdst;     // weight piece 0's offset in a stage (piece i: + i * 64 * 64)

  __device__ __forceinline__ WgFill(const Params& p, int row0, int tok0, int tid) {
    const int tok = tid >> 4, piece = tid & 15;
    xcol = piece * 8;
    xsrc = static_cast<const char*>(p.x) + (static_cast<int64_t>(tok0 + tok) * p.x_stride + xcol) * 2;
    xstep = static_cast<int64_t>(16) * p.x_stride * 2;
    xdst = (piece >> 3) * (TN * 128) + tok * 128 + (((piece & 7) ^ (tok & 7)) << 4);
    xok = 0;
#pragma unroll
    for (int i = 0; i < XI; ++i) xok |= (tok0 + tok + 16 * i < p.m ? 1u : 0u) << i;
    const int r = tid >> 2, wp = tid & 3;
#pragma unroll
    for (int i = 0; i < WI; ++i)
      wsrc[i] = p.qw + static_cast<int64_t>(min(row0 + r + 64 * i, p.n - 1)) * p.qw_stride + wp * 4;
    wdst = r * 64 + ((wp ^ (((r >> 1) & 1) << 1)) << 4);
  }

  __device__ __forceinline__ void issue(uint32_t st, const Params& p, int row0, int sb, int tid, int ssize) const {
    const bool col_ok = sb * 128 + xcol < p.k;
#pragma unroll
    for (int i = 0; i < XI; ++i) {
      const bool ok = col_ok && ((xok >> i) & 1u);
      gemm_cp16(st + xdst + i * (16 * 128), ok ? xsrc + i * xstep + sb * 256 : p.x, ok ? 16 : 0);
    }
    const WgStage S = wg_stage(TN, ssize);
#pragma unroll
    for (int i = 0; i < WI; ++i) gemm_cp16(st + S.w_off + wdst + i * (64 * 64), wsrc[i] + sb * 16, 16);
    const int64_t gb = static_cast<int64_t>(group_of_sb(sb, p.grp_mul)) * p.n;
    const int s_pieces = kWgRows * ssize / 4;
    if (tid < s_pieces) {
      const int row = row0 + tid * 4 / ssize;
      const char* src = static_cast<const char*>(p.scales) + (gb + (row < p.n ? row : 0)) * ssize;
      cp4(st + S.s_off + tid * 4, src, clamp4((static_cast<int64_t>(p.n) - row) * ssize));
    } else if (p.zeros != nullptr && tid - s_pieces < kWgRows / 4) {
      const int zc = tid - s_pieces, row = row0 + zc * 4;
      cp4(st + S.z_off + zc * 4, p.zeros + gb + (row < p.n ? row : 0), clamp4(static_cast<int64_t>(p.n) - row));
    }
  }
};

// The 8 A fragments (one per 16-k step) of local rows r and r + 8 from a stage: words
// {2t, 2t+1, 2t+8, 2t+9} of each row (two 8-byte reads through the weight swizzle), q - zero exact,
// then times the row's scale in x's dtype.
template <typename XT, int TN>
__device__ __forceinline__ void wg_dequant(uint32_t (&a)[8][4], const unsigned char* stage, const Params& p, int r,
                                           int t, uint32_t magic, int ssize) {
  const WgStage S = wg_stage(TN, ssize);
  const int sw = ((r >> 1) & 1) << 1;  // the same for r + 8
  const unsigned char* w = stage + S.w_off + (t & 1) * 8;
  const int c0 = ((t >> 1) ^ sw) << 4, c1 = ((2 + (t >> 1)) ^ sw) << 4;
  const uint2 l0 = *reinterpret_cast<const uint2*>(w + r * 64 + c0);
  const uint2 l1 = *reinterpret_cast<const uint2*>(w + r * 64 + c1);
  const uint2 h0 = *reinterpret_cast<const uint2*>(w + (r + 8) * 64 + c0);
  const uint2 h1 = *reinterpret_cast<const uint2*>(w + (r + 8) * 64 + c1);
  uint32_t lo[4], hi[4];
  split_words(make_uint4(l0.x, l0.y, l1.x, l1.y), lo);
  split_words(make_uint4(h0.x, h0.y, h1.x, h1.y), hi);
  const uint32_t s0 = pack2<XT>(stage_scale(stage + S.s_off, r, p.scale_kind));
  const uint32_t s1 = pack2<XT>(stage_scale(stage + S.s_off, r + 8, p.scale_kind));
  uint32_t nz0 = nzero<XT>(8u), nz1 = nzero<XT>(8u);
  if (p.zeros != nullptr) {
    nz0 = nzero<XT>(stage[S.z_off + r]);
    nz1 = nzero<XT>(stage[S.z_off + r + 8]);
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    a_frag_i<XT>(i, a[i], lo, hi, nz0, nz1, magic);
    a[i][0] = hmul2<XT>(a[i][0], s0);
    a[i][2] = hmul2<XT>(a[i][2], s0);
    a[i][1] = hmul2<XT>(a[i][1], s1);
    a[i][3] = hmul2<XT>(a[i][3], s1);
  }
}

#endif  // QLINEAR_WGMMA

template <typename XT, int TN, int ST>
__global__ void __launch_bounds__(kWgThreads, 1) w4_wgmma_kernel(const GemmParams gp) {
#if QLINEAR_WGMMA
  static_assert(ST >= 3, "two stages ahead need three or more");
  constexpr int V = TN / 2;  // accumulator values per thread
  extern __shared__ __align__(16) unsigned char wg_smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(wg_smem_raw));
  const uint32_t ring = (raw + 1023u) & ~1023u;  // 128-byte swizzle atoms need 1024-byte alignment
  unsigned char* smem = wg_smem_raw + (ring - raw);
  const Params& p = gp.p;
  const int tid = threadIdx.x, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int r = (tid >> 5) * 16 + g;  // local row of the lane's first A row: warpgroup 64 + warp 16 + g
  const int row0 = blockIdx.x * kWgRows;
  const int tok0 = blockIdx.z * TN;
  const int sb_lo = blockIdx.y * gp.sb_per_split;
  const int sb_hi = min(sb_lo + gp.sb_per_split, p.nsb);
  const int ssize = fkind_bytes(p.scale_kind);
  const uint32_t kStage = static_cast<uint32_t>(wg_stage(TN, ssize).bytes);
  uint32_t magic;
  asm("mov.b32 %0, %1;" : "=r"(magic) : "n"(Mma<XT>::kMagic));

  float acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = 0.f;
  uint32_t a[2][8][4];
  const WgFill<TN> fill(p, row0, tok0, tid);

#pragma unroll
  for (int s = 0; s < ST - 2; ++s) {
    if (sb_lo + s < sb_hi) fill.issue(ring + s * kStage, p, row0, sb_lo + s, tid, ssize);
    cp_commit();
  }
  // One superblock: its stage has landed, refill the slot freed two superblocks ago, dequantize into
  // buffer B, issue the 8 wgmmas, and wait for the previous superblock's group (buffer B ^ 1 free).
  auto step = [&](auto buf, int sb) {
    constexpr int B = decltype(buf)::value;
    const int j = sb - sb_lo;
    cp_wait<ST - 3>();
    // cp.async wrote through the generic proxy, wgmma reads through the async proxy
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (sb + ST - 2 < sb_hi) fill.issue(ring + ((j + ST - 2) % ST) * kStage, p, row0, sb + ST - 2, tid, ssize);
    cp_commit();
    const uint32_t xs = ring + (j % ST) * kStage;
    wg_dequant<XT, TN>(a[B], smem + (j % ST) * kStage, p, r, t, magic, ssize);
    const uint64_t d0 = wg_desc(xs);
    wg_fence();
#pragma unroll
    for (int i = 0; i < 8; ++i)
      wgmma_rs<XT, TN>(acc, a[B][i], d0 + ((((i >> 2) * TN * 128) + (i & 3) * 32) >> 4));
    wg_commit();
    wg_wait<1>();
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) keep(a[B ^ 1][i][c]);
  };
  int sb = sb_lo;
  for (; sb + 1 < sb_hi; sb += 2) {
    step(std::integral_constant<int, 0>{}, sb);
    step(std::integral_constant<int, 1>{}, sb + 1);
  }
  if (sb < sb_hi) step(std::integral_constant<int, 0>{}, sb);
  wg_wait<0>();
#pragma unroll
  for (int v = 0; v < V; ++v) keep(acc[v]);
  cp_wait<0>();

  const int tile = blockIdx.x + gridDim.x * blockIdx.z;
  if (gridDim.y > 1) {
    const int64_t tile_floats = static_cast<int64_t>(kWgThreads) * V;
    float* mine = gp.ws + (static_cast<int64_t>(tile) * gridDim.y + blockIdx.y) * tile_floats;
#pragma unroll
    for (int v = 0; v < V; ++v) __stcg(mine + v * kWgThreads + tid, acc[v]);
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
    for (int v = 0; v < V; ++v) {
      float s = 0.f;
      for (int sp = 0; sp < static_cast<int>(gridDim.y); ++sp) s += __ldcg(base + sp * tile_floats + v * kWgThreads + tid);
      acc[v] = s;
    }
  }
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int row = row0 + r + ((v & 2) ? 8 : 0);
    const int tok = tok0 + (v >> 2) * 8 + 2 * t + (v & 1);
    if (row < p.n && tok < p.m) {
      float s = acc[v];
      if (p.bias != nullptr) s += load_f(p.bias, row, p.bias_kind);
      static_cast<XT*>(p.out)[static_cast<int64_t>(tok) * p.out_stride + row] = Mma<XT>::from_f(s);
    }
  }
#else
  __trap();  // not built for sm_90a: the launcher refuses before launching (w4_wgmma_built)
#endif
}

__device__ int wgmma_built_flag = QLINEAR_WGMMA;

}  // namespace w4a16g
}  // namespace qlinear
