// FP8 block-scaled decode GEMM fed by a TMA ring (sm_90), for M <= 16 pre-quantized tokens (device code,
// stage layout and compiled shapes; no torch headers). Maps and launch: fp8_tma_launch.cu.
//
//   y[m, n] = bias[n] + sum_kb sw[n / 128, kb] * sx[m, kb] * sum_{k in kb} q[m, k] * w[n, k]
//
// x arrives as e4m3 codes [M, K] with fp32 group scales sx [M, K / 128] (row-major), from
// per_token_group_quant_fp8 launched just before (this kernel with PDL): the same operands as
// fp8_gemv.cuh's PQ path, so the results differ from it only in the fp32 summation order.
//
// Why: fp8_gemv.cuh issues its own global loads from every warp, so the bytes in flight per SM fall
// whenever its warps compute; on the wide shapes it streams at most ~2.9 TB/s (session 5) and Triton
// took 7168x16384 at M <= 16 (33.4-37.0 us against a 27.5 us weight floor at 4274 GB/s). Here one
// producer thread keeps ST stages of weights and x in flight whatever the consumers do, as the W4A16
// TMA ring (w4a16_tma.cuh) does.
//
// CTA: 16 R weight rows over the whole K, in stages of KS k-blocks (128 columns each). Stage layout
// (byte offsets in TmaParams, the ring 1024-byte aligned): KS weight boxes [16 R rows][128 B], KS x boxes
// [MB rows][128 B] in slots of xslot bytes (MB = min(M, 8 NT)), both in TMA's 128-byte swizzle (16-byte
// chunk c of row r stored at chunk c ^ (r & 7)) so that the 8 rows an ldmatrix phase reads hit
// distinct banks; one weight-scale box [KS] (the CTA's rows lie in one 128-row scale block) and one
// x-scale box [MB][KS]. Boxes past N or M land as zeros (TMA out-of-bounds fill), so the last row tile
// needs no bounds tests; the scale maps need rows of 16-byte multiples, so K is a multiple of 512 and the
// stages (KS = 4) are never ragged.
// Consumer warp w takes the stage's k-blocks j = w, w + CW, ...: per k-block and row tile four
// ldmatrix.x4 of weights (m16n8k32's A: rows g / g + 8, bytes 4t.. / 16 + 4t.. of each 32-byte k-step),
// per k-step one ldmatrix of x for both token tiles (B), NT mma.sync.m16n8k32.e4m3 per k-step into a
// fresh fragment, then acc += frag * sw * sx[token]. It hands the slot back once its fragments are in
// registers (the producer refills it during the math). The warps' sums meet in fp8_gemv.cuh's
// reduce_store (the producer warp adds zeros), which adds the bias and stores.
#pragma once

#include <cuda.h>

#include "bulk_copy.cuh"
#include "code_list.h"
#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

struct TmaParams {
  CUtensorMap wmap;   // weight [N, K] uint8: box 128 x 16 R, 128-byte swizzle
  CUtensorMap xmap;   // x codes [M, K] uint8: box 128 x MB, 128-byte swizzle
  CUtensorMap smap;   // weight scales [cdiv(N, 128), K / 128] fp32: box KS x 1
  CUtensorMap xsmap;  // x scales [M, K / 128] fp32: box KS x MB
  Params p;
  int mb;  // x rows staged per k-block
  int early;  // 1: trigger the dependent grid at the start (else after the main loop)
  int xslot, off_x, off_s, off_xs, stage_bytes, off_red, off_bar;
  uint32_t tx_bytes;  // bytes one stage's boxes land (out-of-bounds fill included)
};

// Shape key R * 1000 + KS * 100 + ST * 10 + CW (row tiles, k-blocks per stage, stages, consumer warps);
// in a launch code it is the S (KS), R, PF (ST) and W (CW) digits under T = 1 (fp8_gemv_launch.cu).
struct TmaShape {
  int r, ks, st, cw;
};
__host__ __device__ constexpr TmaShape tma_shape(int key) {
  return {key / 1000, key / 100 % 10, key / 10 % 10, key % 10};
}

constexpr int kTmaAlign = 1024;  // the 128-byte swizzle is a function of address bits 4-9

struct TmaLayout {
  int xslot, off_x, off_s, off_xs, stage_bytes, landed;
};
// One stage at mb x rows: weight boxes (16 r x 128 B each, a multiple of 1024), x slots of 1024 bytes (8
// rows) or 2048 (16), then the scale boxes at 128-byte aligned offsets (TMA's alignment for boxes in shared
// memory); the stage rounded to 1024.
__host__ __device__ constexpr TmaLayout tma_layout(int r, int ks, int mb) {
  const int xslot = mb > 8 ? 2048 : 1024;
  const int off_x = ks * r * 16 * 128;
  const int off_s = off_x + ks * xslot;
  const int off_xs = off_s + 128;
  const int end = off_xs + (mb * ks * 4 + 127) / 128 * 128;
  return {xslot, off_x, off_s, off_xs, (end + kTmaAlign - 1) / kTmaAlign * kTmaAlign,
          ks * r * 16 * 128 + ks * mb * 128 + ks * 4 + mb * ks * 4};
}
// Dynamic shared memory: the ring, the warps' partial tiles (reduce_store, CW + 1 warps), ST full and ST
// empty mbarriers, and the slack that aligns the ring.
__host__ __device__ constexpr int tma_smem_bytes(int key, int nt, int mb) {
  const TmaShape s = tma_shape(key);
  return s.st * tma_layout(s.r, s.ks, mb).stage_bytes + (s.cw + 1) * s.r * nt * 128 * 4 + 16 * s.st + kTmaAlign;
}

// Compiled shapes. KS = 4 is the smallest whose scale boxes are 16 bytes wide (TMA's minimum); R = 2 and
// ST <= 4 keep two CTAs per SM (224 CTAs on 7168 rows all resident). The dispatch (qlinear/ops/fp8.py
// FP8_CUDA_CONFIG) uses 2434 on 7168x16384; the others are its measured neighbours, kept for re-tuning.
// Session 28 (benchmarks/results/session28, probe_fp8_preq.py, us, GEMV alone / after the quantizer):
// 7168x16384 M = 16 (run 3) 2434 33.33 / 34.62, 2444 33.47 / 35.53, 4444 32.82 / 35.79, 4454 32.71 / 35.67;
// 2442 (two consumer warps) lost there (run 2: 34.44 / 36.14) and on every shape: removed. On 2112x7168 M =
// 16 (132 one-tile CTAs, run 3) deeper rings were slower than 1442's 7.03 (1482 / 1492 / 1484: 8.35 / 8.40
// / 7.47, KS = 8 1842 / 1852 / 1844: 7.80 / 8.34 / 7.23) and none came near the register kernel's pair
// (8.79 best against 8.13): removed. Run 5: a pair split (a cluster of two CTAs per 32-row tile, each half
// of K, summed through distributed shared memory, as the W4A16 ring's) took 7.23-9.78 alone and 9.18 at
// best after the quantizer against the register kernel's 8.59 (bench_linear M = 16: 10.8 against 8.25):
// removed.
constexpr int kTmaKeys[] = {2434, 2444, 4444, 4454, 1444, 1442};

template <size_t L>
constexpr bool tma_keys_fit(const int (&keys)[L]) {
  for (size_t i = 0; i < L; ++i) {
    const TmaShape s = tma_shape(keys[i]);
    if (s.ks < 4 || s.ks % s.cw != 0 || s.st < 2 || 128 % (16 * s.r) != 0 || tma_smem_bytes(keys[i], 2, 16) > 227 * 1024)
      return false;
  }
  return true;
}
static_assert(tma_keys_fit(kTmaKeys),
              "an FP8 TMA shape needs KS >= 4 divisible by CW, ST >= 2, 16 R dividing 128 and <= 227 KB of smem");

__device__ __forceinline__ void ldsm_x4(uint32_t (&d)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x2(uint32_t& d0, uint32_t& d1, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(d0), "=r"(d1) : "r"(addr));
}

// The producer's copies of stage st into the slot at dst (barrier bar): weights and their scales (wx
// false: they do not depend on the previous grid) or x and its scales (wx true).
template <int R, int KS>
__device__ __forceinline__ void fp8_tma_issue(const TmaParams& tp, uint32_t dst, uint32_t bar, int st, int row0, bool wx) {
  const int kb0 = st * KS;
  if (!wx) {
#pragma unroll
    for (int j = 0; j < KS; ++j) tma::tensor_copy_2d(dst + j * (R * 16 * 128), &tp.wmap, (kb0 + j) * 128, row0, bar);
    tma::tensor_copy_2d(dst + tp.off_s, &tp.smap, kb0, row0 / 128, bar);
  } else {
#pragma unroll
    for (int j = 0; j < KS; ++j) tma::tensor_copy_2d(dst + tp.off_x + j * tp.xslot, &tp.xmap, (kb0 + j) * 128, 0, bar);
    tma::tensor_copy_2d(dst + tp.off_xs, &tp.xsmap, kb0, 0, bar);
  }
}

template <typename XT, int NT, int KEY>
__global__ void __launch_bounds__(32 * (tma_shape(KEY).cw + 1), 1) fp8_tma_kernel(const __grid_constant__ TmaParams tp) {
  constexpr TmaShape S = tma_shape(KEY);
  constexpr int R = S.r, KS = S.ks, ST = S.st, CW = S.cw, U = KS / CW;
  const Params& p = tp.p;
  extern __shared__ __align__(16) char smem_raw[];
  char* smem = smem_raw + (kTmaAlign - tma::smem_u32(smem_raw) % kTmaAlign) % kTmaAlign;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = static_cast<int>(blockIdx.x) * 16 * R;
  const int nst = (p.kb + KS - 1) / KS;
  const uint32_t ring = tma::smem_u32(smem);
  const uint32_t full0 = ring + tp.off_bar, empty0 = full0 + 8 * ST;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < ST; ++s) {
      tma::mbar_init(full0 + 8 * s, 1);
      tma::mbar_init(empty0 + 8 * s, 32 * CW);
    }
    tma::mbar_fence_init();
  }
  __syncthreads();
  if (tp.early) pdl::launch_dependents();

  float acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[r][nt][0] = acc[r][nt][1] = acc[r][nt][2] = acc[r][nt][3] = 0.f;

  if (warp == CW) {
    // producer: one lane; the weights of the first stages before griddepcontrol.wait, x after
    if (lane == 0) {
      const int pro = nst < ST ? nst : ST;
      for (int s = 0; s < pro; ++s) {
        tma::mbar_arrive_tx(full0 + 8 * s, tp.tx_bytes);
        fp8_tma_issue<R, KS>(tp, ring + s * tp.stage_bytes, full0 + 8 * s, s, row0, false);
      }
      pdl::wait();
      for (int s = 0; s < pro; ++s) fp8_tma_issue<R, KS>(tp, ring + s * tp.stage_bytes, full0 + 8 * s, s, row0, true);
      for (int st = ST; st < nst; ++st) {
        const int slot = st % ST;
        tma::mbar_wait(empty0 + 8 * slot, static_cast<uint32_t>((st / ST - 1) & 1));
        const uint32_t dst = ring + slot * tp.stage_bytes, bar = full0 + 8 * slot;
        tma::mbar_arrive_tx(bar, tp.tx_bytes);
        fp8_tma_issue<R, KS>(tp, dst, bar, st, row0, false);
        fp8_tma_issue<R, KS>(tp, dst, bar, st, row0, true);
      }
    }
    __syncwarp();
  } else {
    const int t = lane & 3, q = lane >> 3, l7 = lane & 7;
    // ldmatrix rows: weights (A) matrix q = rows 8 (q & 1) .. + 7, chunk 2 s + (q >> 1); x (B) matrix q =
    // tokens 8 (q >> 1) .. + 7 (NT = 2; x2 for one token tile: lanes 0-15), chunk 2 s + (q & 1)
    const int a_off = (l7 + 8 * (q & 1)) * 128, a_c = q >> 1;
    const int x_row = NT == 2 ? l7 + 8 * (q >> 1) : l7, x_c = q & 1;
    // x-scale rows of the lane's C columns (tokens 2t, 2t + 1 of each tile); rows >= MB hold nothing
    // staged and their outputs are never stored
    int xs_row[NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) xs_row[nt][e] = min(nt * 8 + 2 * t + e, tp.mb - 1);
    for (int st = 0; st < nst; ++st) {
      const int slot = st % ST;
      tma::mbar_wait(full0 + 8 * slot, static_cast<uint32_t>((st / ST) & 1));
      const uint32_t base = ring + slot * tp.stage_bytes;
      const char* sbase = smem + slot * tp.stage_bytes;
      uint32_t a[U][R][4][4], b[U][4][2 * NT];
      float sw[U], sx[U][NT][2];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = warp + CW * u;
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int s = 0; s < 4; ++s)
            ldsm_x4(a[u][r][s], base + j * (R * 16 * 128) + r * 16 * 128 + a_off + (((2 * s + a_c) ^ l7) << 4));
        const uint32_t xb = base + tp.off_x + j * tp.xslot + x_row * 128;
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const uint32_t addr = xb + (((2 * s + x_c) ^ l7) << 4);
          if constexpr (NT == 2)
            ldsm_x4(b[u][s], addr);
          else
            ldsm_x2(b[u][s][0], b[u][s][1], addr);
        }
        sw[u] = reinterpret_cast<const float*>(sbase + tp.off_s)[j];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) sx[u][nt][e] = reinterpret_cast<const float*>(sbase + tp.off_xs)[xs_row[nt][e] * KS + j];
      }
      tma::mbar_arrive(empty0 + 8 * slot);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r)
          kblock_mma<NT>(
              acc[r], [&](int s, int i) { return a[u][r][s][i]; }, [&](int s, int nt, int j) { return b[u][s][2 * nt + j]; },
              sw[u], sx[u]);
    }
  }
  if (!tp.early) pdl::launch_dependents();
  // the output may be read by the previous grid until it completes
  pdl::wait();
  reduce_store<XT, NT, R>(acc, reinterpret_cast<float*>(smem + tp.off_red), p, static_cast<int>(blockIdx.x), 0, row0);
}

// Defined in fp8_tma_launch.cu: the call's tensor maps, then the instance of `key` (tma_shape) for
// bf16 / fp16 output and one or two token tiles; cudaErrorInvalidValue for a key not compiled or maps the
// driver refuses.
cudaError_t launch_tma(const Params& p, bool bf16, int key, bool early, bool pdl, cudaStream_t stream);
inline bool tma_key_compiled(int key) { return code_listed(kTmaKeys, key); }

}  // namespace fp8g
}  // namespace qlinear
