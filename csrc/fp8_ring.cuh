// FP8 block-scaled decode GEMM, weights through a per-warp TMA ring in shared memory (sm_90; device
// code, no torch). The same product, tiles, k split, MMA (swap AB on m16n8k32 e4m3), x handling
// (quantized in the kernel or pre-quantized, loaded one k-block ahead) and epilogue as
// fp8_gemv_kernel (fp8_gemv.cuh); only the weights' path differs:
//
//   fp8_gemv_kernel: each warp holds PF + 1 k-blocks of weights in registers, so a warp has at most
//   PF + 1 blocks in flight and the register file caps warps x PF (the wide layers stream at
//   ~2.9 TB/s);
//   here: each warp owns a ring of D stages in shared memory, one k-block of its R x 16 rows each
//   (R x 2 KB). Lane 0 fills a stage with one 2-D TMA copy (box 128 bytes x 16 R rows, 128-byte
//   swizzle) completing on the stage's mbarrier, and refills it with the warp's block i + D as soon
//   as the warp has read block i. The first D blocks are requested before griddepcontrol.wait.
//   Registers hold only the stage being multiplied, so D and W are bounded by shared memory alone.
//
// Reading a stage: lane (g, t) needs, per row, the 16-byte chunks 4c + t (c = 0, 1; k = 64 c + 16 t,
// the order fp8_gemv.cuh's B fragments use). The 128-byte swizzle puts chunk j of box row b at
// position j ^ (b % 8). A 16-byte shared load is served eight lanes at a time (g = 2 i, 2 i + 1,
// t = 0..3); with MMA row g read from box row g those eight lanes would hit only four positions
// twice. So MMA row g reads box row ring_row(g) = g / 2 + 4 (g % 2): the two g of a group then XOR
// with values 4 apart and cover all eight positions once (no bank conflicts). The epilogue maps C
// rows back through ring_row. A 16 R-row box never crosses a 128-row scale block (R in {1, 2, 4}), so
// one weight scale serves the block; it is loaded one block ahead with x.
#pragma once

#include <cuda.h>

#include "bulk_copy.cuh"
#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

constexpr int kRingMaxDepth = 8;
constexpr int kRingMaxWarps = 16;
// Threads an instance is compiled for (its register cap): two 16-row tiles x two token tiles need ~180
// registers (spills at 128), the others fit 128.
__host__ __device__ constexpr int ring_max_threads(int nt, int r) { return r == 2 && nt == 2 ? 256 : 32 * kRingMaxWarps; }
constexpr int kRingStageBytes = 16 * 128;  // one k-block of one 16-row tile

__host__ __device__ constexpr int ring_row(int g) { return (g >> 1) + 4 * (g & 1); }

struct RingRows {
  static __device__ __forceinline__ int of(int g) { return ring_row(g); }
};

// Dynamic shared memory: the epilogue's reduction area (fp8_gemv.cuh smem_bytes), W x D mbarriers,
// then the rings (W x D stages of R x 2 KB) on a 1024-byte boundary (the swizzle atom), which the
// kernel finds at run time: hence the 1024 bytes of slack.
struct RingLayout {
  int bars, ring, bytes;
};
__host__ __device__ constexpr RingLayout ring_layout(int r, int nt, int warps, int depth) {
  // smem_bytes (fp8_gemv.cuh) rounded to 8
  const int bars = (4 * warps * r * nt * 128 + 16 + 7) / 8 * 8;
  const int ring = bars + warps * depth * 8;
  return RingLayout{bars, ring, ring + 1024 + warps * depth * r * kRingStageBytes};
}

struct RingParams {
  CUtensorMap wmap;  // weight [n, k] bytes: box 128 x 16 R, 128-byte swizzle
  Params p;
  int depth;  // D stages per warp, 1 .. kRingMaxDepth
};

template <typename XT, int NT, int R, bool PQ>
__global__ void __launch_bounds__(ring_max_threads(NT, R), 1) fp8_ring_kernel(const __grid_constant__ RingParams rp) {
  extern __shared__ __align__(16) float red[];
  const Params& p = rp.p;
  const int D = rp.depth;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tg = blockIdx.x, split = blockIdx.y;
  const int row0 = tg * R * 16;
  const int kb_lo = split * p.kb_per_split;
  const int kb_hi = min(kb_lo + p.kb_per_split, p.kb);
  const int kb0 = kb_lo + warp;  // the warp's blocks: kb0 + i W, i < nblk
  const int nblk = kb0 < kb_hi ? (kb_hi - kb0 + W - 1) / W : 0;
  constexpr int kStage = R * kRingStageBytes;

  const RingLayout L = ring_layout(R, NT, W, D);
  const uint32_t sbase = tma::smem_u32(red);
  const uint32_t bars = sbase + L.bars + warp * D * 8;
  const uint32_t ring0 = (sbase + L.ring + 1023) & ~1023u;
  const uint32_t ring = ring0 + warp * D * kStage;
  const char* ringp = reinterpret_cast<const char*>(red) + (ring - sbase);

  if (lane == 0) {
    for (int s = 0; s < D; ++s) tma::mbar_init(bars + 8 * s, 1);
    tma::mbar_fence_init();
  }
  __syncwarp();
  // block i of the warp into stage i % D (lane 0)
  auto issue = [&](int i) {
    const uint32_t bar = bars + 8 * (i % D);
    tma::mbar_arrive_tx(bar, kStage);
    tma::tensor_copy_2d(ring + (i % D) * kStage, &rp.wmap, (kb0 + i * W) * 128, row0, bar);
  };
  // the weights do not depend on the previous grid
  if (lane == 0)
    for (int i = 0; i < D && i < nblk; ++i) issue(i);

  pdl::wait();
  pdl::launch_dependents();

  float acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[r][nt][0] = acc[r][nt][1] = acc[r][nt][2] = acc[r][nt][3] = 0.f;

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
  const float* wsi_row = p.wsi + static_cast<int64_t>(row0 / 128) * p.wsi_s0;

  XLoad<NT, PQ> xn;
  float swn = 0.f;
  if (nblk > 0) {
    load_x<XT, NT, PQ>(xn, xrow, xvalid, kb0, t, p);
    swn = __ldg(wsi_row + static_cast<int64_t>(kb0) * p.wsi_s1);
  }
  // this lane's byte offsets in a stage: tile r, half h, chunk c
  int off[R][2][2];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int c = 0; c < 2; ++c) off[r][h][c] = (r * 16 + h * 8 + ring_row(g)) * 128 + (((4 * c + t) ^ ring_row(g)) << 4);

  for (int i = 0; i < nblk; ++i) {
    const int kbi = kb0 + i * W;
    const int s = i % D;
    tma::mbar_wait(bars + 8 * s, static_cast<uint32_t>((i / D) & 1));
    WStage<R> st;
    const char* stage = ringp + s * kStage;
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int c = 0; c < 2; ++c) st.v[r][h][c] = *reinterpret_cast<const uint4*>(stage + off[r][h][c]);
      st.sw[r] = swn;
    }
    // every lane has its fragments: the stage may be refilled
    __syncwarp();
    if (lane == 0 && i + D < nblk) issue(i + D);
    XLoad<NT, PQ> xc = xn;
    if (i + 1 < nblk) {
      load_x<XT, NT, PQ>(xn, xrow, xvalid, kbi + W, t, p);
      swn = __ldg(wsi_row + static_cast<int64_t>(kbi + W) * p.wsi_s1);
    }
    do_block<XT, NT, R, PQ, true>(acc, st, xc, xrow, xvalid, kbi, t, p);
  }

  reduce_store<XT, NT, R, RingRows>(acc, red, p, tg, split, row0);
}

}  // namespace fp8g
}  // namespace qlinear
