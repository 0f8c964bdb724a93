// W4A16 decode GEMV with x staged in shared memory ("pipe 3" of the register kernel, sm_90). Device code
// and the compiled codes (no torch headers); launch: w4a16_xs.cu, config and checks: w4a16_gemv_launch.cu.
//
//   out[m, n] = sum_k x[m, k] * (q[n, k] - zero[grp(k), n]) * scale[grp(k), n]  (+ bias[n])
//
// The register kernel's weight stream and math (reg_load / reg_compute of w4a16_gemv.cuh: the same lane
// order, dequantize, mma and zero fold), with two changes:
//   - the CTA's W warps split the rows, not K: warp w owns R 16-row tiles over the whole of K, so a CTA
//     holds 16 R W rows and no cross-warp reduction is needed (each warp stores its own outputs);
//   - the CTA's x rows are copied once into shared memory (cp.async.bulk, sm_90) and every warp reads its
//     x fragments there (LDS.64) instead of from L2.
// Why: at two token tiles a warp reads 2 KB of x fragments per superblock and token tile against 1 KB of
// weights per row tile, and the register kernel's warps (which split K) each load their own. On
// 24576x1536 at M = 16 (R2 U1 W2, session 32 run 1, benchmarks/results/session32) its loads alone took
// 10.70 us, 8.12 without x: x moved twice the weight bytes from L2. Here x crosses L2 -> SM once per
// 16 R W rows.
//
// Shared memory: kXsBars mbarriers (8 bytes each), then the M x rows, xs_pitch(K) bytes apart: 2 K rounded
// up to 128, + 32, so the four token rows of a half warp's LDS.64 (32 bytes each) fall on distinct banks.
// x is copied in chunks of kXsChunkSb superblocks: one copy per token row and chunk, completing on the
// chunk's barrier (armed by thread 0 with the chunk's bytes before any copy is issued); the copies are
// issued after griddepcontrol.wait by the CTA's threads, chunk by chunk. A warp waits for a chunk's
// barrier before its first read there. Columns past K are never copied: the partial last superblock
// zeroes their fragments (CHECK), as the register kernel does, and token rows past M read row M - 1
// (their outputs are never stored). The weights, scales and zero points of the first chunk are
// requested before griddepcontrol.wait (the previous kernel never writes them), as in the register
// kernel; each warp double-buffers its chunks of U superblocks.
// Measured (session 32 run 3, 24576x1536 M = 16, symmetric layer, us): R1 U2 with 12 warps (192 rows, 128
// CTAs, one per SM) 10.58 against the register kernel's 12.50; 6 warps (256 CTAs, two per SM) 11.67, 8
// warps (192 CTAs: two waves) 16.58. Tried and removed: thread 0 bulk-prefetching the CTA's weight rows
// into L2 first (cp.async.bulk.prefetch.L2) was ~2 us slower at every config (12.96 at R1 U2 W12).
// Needs: groups of >= 128 or per channel, K % 8 == 0 (16-byte copies), x 16-byte aligned with row
// stride % 8 == 0, ceil(K / 256) <= kXsBars and the x rows within the opt-in shared memory (checked by
// the launcher: kNoXs / kTooMuchSmem).
#pragma once

#include "bulk_copy.cuh"
#include "w4a16_gemv.cuh"

namespace qlinear {
namespace w4a16g {

constexpr int kXsChunkSb = 2;                 // superblocks per x copy (one barrier each)
constexpr int kXsBars = 32;                   // so K <= 32 * 2 * 128 = 8192
constexpr int kXsBarBytes = 8 * kXsBars;

// Bytes between two staged x rows: 2 K rounded up to 128, + 32 (bank spread of the LDS.64 reads).
__host__ __device__ constexpr int64_t xs_pitch(int64_t k) { return (2 * k + 127) / 128 * 128 + 32; }
// Dynamic shared memory of a launch at M rows of x.
__host__ __device__ constexpr int64_t xs_smem_bytes(int64_t m, int64_t k) { return kXsBarBytes + m * xs_pitch(k); }
// x copy chunks of a row of K columns.
__host__ __device__ constexpr int64_t xs_chunks(int64_t k) { return (k + 128 * kXsChunkSb - 1) / (128 * kXsChunkSb); }

// The x fragments of U superblocks from sb0 (as reg_load's LX part), from the staged rows: xaddr[nt] is
// the shared address of the lane's token row (min(g + 8 nt, M - 1)) at column 4 t. CHECK: zero the
// planes past K (the partial last superblock only).
template <int U, int R, int NT, bool CHECK>
__device__ __forceinline__ void xs_read_x(const Params& p, RegChunk<U, R, NT>& c, int sb0, const uint32_t (&xaddr)[NT],
                                          int t) {
  fill_x<U, R, NT, CHECK>(p, c, sb0, t, [&](int nt, int u, int i) {
    uint2 v;
    // volatile: kept after the chunk's barrier wait (also an asm volatile)
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                 : "=r"(v.x), "=r"(v.y)
                 : "r"(xaddr[nt] + static_cast<uint32_t>((sb0 + u) * 256 + i * 32)));
    return v;
  });
}

// Threads per CTA: one row tile per warp takes up to 12 warps (a CTA of 192 rows per SM; R1 U2 needs
// 147 registers, under the 170 that 384 threads leave), more row tiles the register kernel's cap.
template <int R, int U, int NT>
constexpr int xs_threads() {
  return R == 1 && U <= 2 ? 384 : reg_threads<R, U, NT, true>();
}

// R: 16-row tiles per warp; U: superblocks per chunk (double-buffered); NT: 8-token tiles; FOLD: the
// register kernel's zero fold. blockDim = 32 W.
template <typename XT, int R, int U, int NT, int FOLD>
__global__ void __launch_bounds__(xs_threads<R, U, NT>(), 1) xs_gemv_kernel(const Params p) {
  extern __shared__ __align__(128) unsigned char xs_smem[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = (blockIdx.x * nw + warp) * (16 * R);
  const uint32_t bars = tma::smem_u32(xs_smem);
  const uint32_t xs = bars + kXsBarBytes;
  const int pitch = static_cast<int>(xs_pitch(p.k));
  const int nch = static_cast<int>(xs_chunks(p.k));
  constexpr int kChunkCols = 128 * kXsChunkSb;
  if (threadIdx.x == 0) {
    for (int c = 0; c < nch; ++c) tma::mbar_init(bars + 8 * c, 1);
    tma::mbar_fence_init();
    // armed before any copy is issued (the __syncthreads below orders the issuers after this)
    for (int c = 0; c < nch; ++c) {
      const int cols = min(p.k, (c + 1) * kChunkCols) - c * kChunkCols;
      tma::mbar_arrive_tx(bars + 8 * c, static_cast<uint32_t>(p.m * cols * 2));
    }
  }

  const uint32_t* wrow[R][2];
  int rows[R][2];
  lane_rows<R>(p, row0, g, t, rows, wrow);
  const char* const xrow[NT] = {};  // reg_load's global x rows: unused (LX = false)
  uint32_t xaddr[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xaddr[nt] = xs + static_cast<uint32_t>(min(g + 8 * nt, p.m - 1) * pitch + 8 * t);
  const uint32_t magic = magic_reg<XT>();
  float tot[R][NT][4];
  zero_tot(tot);
  uint32_t sink = 0;

  // PDL trigger as the register kernel's: at M <= 8 right away, at two token tiles after the main loop
  if constexpr (NT == 1) pdl::launch_dependents();
  const int full_end = min(p.nsb, p.k >> 7);  // superblocks with all 128 columns inside K
  int sb = 0;
  bool have = U <= full_end;
  RegChunk<U, R, NT> c0;
  if (have) reg_load<U, R, NT, false, 0, true, false>(p, c0, 0, wrow, xrow, rows, t);
  __syncthreads();  // the barriers' init and arming, before any copy or wait
  pdl::wait();
  for (int j = threadIdx.x; j < nch * p.m; j += blockDim.x) {
    const int c = j / p.m, tok = j - c * p.m;
    const int col0 = c * kChunkCols, bytes = (min(p.k, col0 + kChunkCols) - col0) * 2;
    tma::bulk_copy(xs + static_cast<uint32_t>(tok * pitch + col0 * 2),
                   static_cast<const XT*>(p.x) + static_cast<int64_t>(tok) * p.x_stride + col0,
                   static_cast<uint32_t>(bytes), bars + 8 * c);
  }
  int ready = 0;  // chunks whose barrier this thread has waited for
  auto wait_x = [&](int sb_last) {
    const int need = sb_last / kXsChunkSb;
    for (; ready <= need; ++ready) tma::mbar_wait(bars + 8 * ready, 0);
  };
  // one chunk: the next chunk's weights requested into `nxt` first, then `cur`'s x and math; false when
  // no full chunk follows
  auto step = [&](RegChunk<U, R, NT>& cur, RegChunk<U, R, NT>& nxt) {
    const bool more = sb + 2 * U <= full_end;
    if (more) reg_load<U, R, NT, false, 0, true, false>(p, nxt, sb + U, wrow, xrow, rows, t);
    wait_x(sb + U - 1);
    xs_read_x<U, R, NT, false>(p, cur, sb, xaddr, t);
    reg_compute<XT, U, R, NT, 0, FOLD>(cur, tot, sink, magic);
    sb += U;
    return more;
  };
  RegChunk<U, R, NT> c1;
  while (have && step(c0, c1) && step(c1, c0)) {
  }
  // the full superblocks left over (< U) and the partial last one, one at a time
  for (; sb < p.nsb; ++sb) {
    RegChunk<1, R, NT> c;
    reg_load<1, R, NT, false, 0, true, false>(p, c, sb, wrow, xrow, rows, t);
    wait_x(sb);
    if (sb < full_end) {
      xs_read_x<1, R, NT, false>(p, c, sb, xaddr, t);
    } else {
      xs_read_x<1, R, NT, true>(p, c, sb, xaddr, t);
    }
    reg_compute<XT, 1, R, NT, 0, FOLD>(c, tot, sink, magic);
  }
  if constexpr (NT == 2) pdl::launch_dependents();
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int q = 0; q < 4; ++q) store_frag<XT>(p, row0 + r * 16, nt, lane, q, tot[r][nt][q]);
}

// Compiled codes: R U NT 3 as decimal digits (the register kernel's code with pipe 3), each with and
// without the zero fold. (2223 with the fold needs 255 registers and spills: not compiled. R1 U3, 12
// warps, lost to R1 U2 in session 32 run 4: 11.17 against 10.64 us on 24576x1536 M = 16.)
constexpr int kXsCodes[] = {1123, 1223, 2123};

template <int C>
struct XsCode {
  static constexpr int R = C / 1000, U = C / 100 % 10, NT = C / 10 % 10;
  static_assert(C >= 1000 && C < 10000 && U >= 1 && NT >= 1 && NT <= 2 && C % 10 == 3,
                "an x-staged code is R U NT 3 as decimal digits, NT 1 / 2");
  static constexpr int threads = xs_threads<R, U, NT>();
};

// Thread cap of a kXsCodes instance; 0 when code is not listed.
constexpr int xs_code_threads(int code) {
  return with_listed_code<kXsCodes>(code, 0, [](auto c) { return XsCode<decltype(c)::value>::threads; });
}

template <typename XT, int FOLD>
inline cudaError_t xs_dispatch(const Params& p, int code, int warps, bool pdl, cudaStream_t s) {
  return with_listed_code<kXsCodes>(code, cudaErrorInvalidValue, [&](auto c) {
    using D = XsCode<decltype(c)::value>;
    if (warps < 1 || warps * 32 > D::threads) return cudaErrorInvalidValue;
    const int rows = 16 * D::R * warps;
    const dim3 grid(static_cast<unsigned>((p.n + rows - 1) / rows));
    return launch_kernel(xs_gemv_kernel<XT, D::R, D::U, D::NT, FOLD>, grid, dim3(32 * warps),
                         static_cast<size_t>(xs_smem_bytes(p.m, p.k)), pdl, s, p);
  });
}

// Defined in w4a16_xs.cu.
cudaError_t xs_dispatch_bf16(const Params& p, int code, int warps, int fold, bool pdl, cudaStream_t s);
cudaError_t xs_dispatch_f16(const Params& p, int code, int warps, int fold, bool pdl, cudaStream_t s);

}  // namespace w4a16g
}  // namespace qlinear
