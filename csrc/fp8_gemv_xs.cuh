// FP8 decode GEMM with x staged in shared memory (sm_90; device code and its smem layout, no torch headers):
// fp8_gemv.cuh's pre-quantized register kernel (R = 1, weights in a register ring PF k-blocks ahead), except
// that each CTA receives all of its k range of x's codes and group scales once, through bulk copies, instead
// of every warp loading its k-blocks' codes from L2.
//
//   y[m, n] = bias[n] + sum_kb sw[n / 128, kb] * sx[m, kb] * sum_{k in kb} q[m, k] * w[n, k]
//
// Why: every CTA of the register kernel reads all of x. On 2112x7168 at M = 16 (132 CTAs) that is 15 MB
// through L2 per call, as much as the weights from HBM; with x's rows aliased, so that the same instructions
// move 1/16 of those bytes, the GEMV took 6.16 against 6.95 us (session 46 run 1). Here the CTAs of a
// thread-block cluster of CL (1, 2 or 4) neighbouring row tiles share the copies: CTA rank r copies the token
// rows m = r, r + CL, ... and each copy lands in every CTA of the cluster (multicast), so L2 sends x once per
// cluster.
//
// Chunks: the split's k range is copied in NC chunks of CK k-blocks (CK = the warp count, so the warps'
// round-robin pass i reads chunk i; NC <= kXsChunks), token row by token row, each chunk completing on its
// own mbarrier, so a warp starts as soon as the chunk it needs has landed. The scales (whole rows of
// K / 128 floats) complete on chunk 0's barrier.
//
// Layout (byte offsets, XsLayout): the warps' reduction tiles and flag (fp8_gemv.cuh's reduce_store), the
// chunk barriers, the scales [8 NT][sp] fp32 (sp = K / 128 + 4 words: tokens 0..7 on distinct banks), then
// the codes [8 NT][pitch] (pitch = the split's k-blocks x 128 + 64 bytes: the two tokens of a quarter-warp
// 16-byte load phase land on opposite bank halves). Tokens >= M are never copied; their fragments are zeros.
//
// Order of a launch: thread 0 inits the barriers and arms each with its chunk's bytes; the weights of the first
// PF k-blocks are requested; cluster arrive; griddepcontrol.wait (the codes are the previous grid's output);
// cluster wait (every CTA's barriers are armed before a peer's copy can land on them); warp 0 issues its copies;
// the main loop. The results are fp8_gemv.cuh's PQ kernel's bit for bit at the same (S, PF, W): the same
// k-blocks per warp in the same order, the same fragments and sums.
#pragma once

#include "bulk_copy.cuh"
#include "cluster.cuh"
#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

constexpr int kXsChunks = 8;  // barriers per CTA

// The byte layout of one CTA's dynamic shared memory (computed on the host, passed in XsParams).
struct XsLayout {
  int off_bar, off_sx, off_x;  // chunk barriers, scales, codes
  int sp;                      // scale row pitch in floats
  int pitch;                   // code row pitch in bytes
  int bytes;                   // total
};

__host__ __device__ constexpr int xs_align(int v, int a) { return (v + a - 1) / a * a; }

inline XsLayout xs_layout(int nt, int warps, int kb, int kbs) {
  XsLayout l{};
  const int rows = 8 * nt;
  l.off_bar = xs_align(static_cast<int>(smem_bytes(1, nt, warps)), 16);
  l.off_sx = l.off_bar + 8 * kXsChunks;
  l.sp = xs_align(kb, 4) + 4;
  l.off_x = xs_align(l.off_sx + rows * l.sp * 4, 128);
  l.pitch = kbs * 128 + 64;
  l.bytes = l.off_x + rows * l.pitch;
  return l;
}

struct XsParams {
  Params p;
  XsLayout l;
  int ck, nc;  // k-blocks per chunk, chunks
  int cl;      // CTAs per cluster (1: a plain launch)
};

template <typename XT, int NT, int PF>
__global__ void __launch_bounds__(max_threads(NT, 1, PF, true), 1) fp8_gemv_xs_kernel(const XsParams xp) {
  extern __shared__ __align__(128) uint8_t smem[];
  const Params& p = xp.p;
  const XsLayout& l = xp.l;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tg = blockIdx.x, split = blockIdx.y;
  const int row0 = tg * 16;
  const int kb_lo = split * p.kb_per_split;
  const int kb_hi = min(kb_lo + p.kb_per_split, p.kb);
  const uint32_t bar0 = tma::smem_u32(smem + l.off_bar);
  const uint32_t sx_base = tma::smem_u32(smem + l.off_sx), x_base = tma::smem_u32(smem + l.off_x);
  const int m_rows = min(p.m, 8 * NT);

  if (threadIdx.x == 0) {
    // each barrier: one arrival (this one, with the chunk's bytes) plus the copies of every CTA of the cluster
    for (int c = 0; c < xp.nc; ++c) {
      const int kbc = min(xp.ck, kb_hi - kb_lo - c * xp.ck);
      uint32_t bytes = static_cast<uint32_t>(m_rows * kbc * 128);
      if (c == 0) bytes += static_cast<uint32_t>(m_rows * p.kb * 4);
      tma::mbar_init(bar0 + 8 * c, 1);
      tma::mbar_arrive_tx(bar0 + 8 * c, bytes);
    }
    tma::mbar_fence_init();
  }

  const int rows[1][2] = {{min(row0 + g, p.n - 1), min(row0 + 8 + g, p.n - 1)}};
  float acc[1][NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[0][nt][0] = acc[0][nt][1] = acc[0][nt][2] = acc[0][nt][3] = 0.f;
  int kb = kb_lo + warp;
  constexpr int NS = PF + 1;
  WStage<1> st[NS];
#pragma unroll
  for (int i = 0; i < PF; ++i)
    if (kb + i * W < kb_hi) load_stage<1>(st[i], p, rows, t, kb + i * W);

  if (xp.cl > 1) cluster::arrive();
  else __syncthreads();  // the barriers' init before any wait on them
  pdl::wait();
  pdl::launch_dependents();
  if (xp.cl > 1) cluster::wait();

  if (warp == 0) {
    const int rank = xp.cl > 1 ? static_cast<int>(cluster::rank()) : 0;
    const int mine = (m_rows - rank + xp.cl - 1) / xp.cl;  // token rows this CTA copies
    const uint16_t mask = static_cast<uint16_t>((1u << xp.cl) - 1u);
    const uint8_t* x = static_cast<const uint8_t*>(p.x);
    // the scale rows (c = -1, on chunk 0's barrier), then the chunks in order, each over the rows
    for (int i = lane; i < (xp.nc + 1) * mine; i += 32) {
      const int c = i / mine - 1, tok = rank + (i % mine) * xp.cl;
      uint32_t dst, bytes;
      const void* src;
      uint32_t bar;
      if (c < 0) {
        dst = sx_base + static_cast<uint32_t>(tok * l.sp * 4);
        src = p.xs + static_cast<int64_t>(tok) * p.xs_s0;
        bytes = static_cast<uint32_t>(p.kb * 4);
        bar = bar0;
      } else {
        const int kb0 = c * xp.ck;
        dst = x_base + static_cast<uint32_t>(tok * l.pitch + kb0 * 128);
        src = x + static_cast<int64_t>(tok) * p.x_stride + static_cast<int64_t>(kb_lo + kb0) * 128;
        bytes = static_cast<uint32_t>(min(xp.ck, kb_hi - kb_lo - kb0) * 128);
        bar = bar0 + 8 * c;
      }
      if (xp.cl > 1) tma::bulk_copy_multicast(dst, src, bytes, bar, mask);
      else tma::bulk_copy(dst, src, bytes, bar);
    }
  }

  bool xvalid[NT];
  int xoff[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    xvalid[nt] = nt * 8 + g < p.m;
    xoff[nt] = (nt * 8 + g) * l.pitch + 16 * t;
  }
  int ready = -1;  // the last chunk this warp waited for (its chunks only increase)
  for (; kb < kb_hi; kb += NS * W) {
#pragma unroll
    for (int i = 0; i < NS; ++i) {
      const int kbi = kb + i * W;
      if (kbi >= kb_hi) break;
      if (kbi + PF * W < kb_hi) load_stage<1>(st[(i + PF) % NS], p, rows, t, kbi + PF * W);
      const int c = (kbi - kb_lo) / xp.ck;
      if (c != ready) {
        tma::mbar_wait(bar0 + 8 * c, 0);
        ready = c;
      }
      uint32_t q[NT][8];
      float sxc[NT][2];
      const int kofs = (kbi - kb_lo) * 128;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        uint4 c0 = make_uint4(0, 0, 0, 0), c1 = c0;
        if (xvalid[nt]) {
          const uint8_t* row = smem + l.off_x + xoff[nt] + kofs;
          c0 = *reinterpret_cast<const uint4*>(row);
          c1 = *reinterpret_cast<const uint4*>(row + 64);
        }
        q[nt][0] = c0.x, q[nt][1] = c0.y, q[nt][2] = c0.z, q[nt][3] = c0.w;
        q[nt][4] = c1.x, q[nt][5] = c1.y, q[nt][6] = c1.z, q[nt][7] = c1.w;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int tok = nt * 8 + 2 * t + j;
          sxc[nt][j] = tok < p.m ? reinterpret_cast<const float*>(smem + l.off_sx)[tok * l.sp + kbi] : 0.f;
        }
      }
      block_mma<NT, 1>(acc, st[i], q, sxc);
    }
  }

  reduce_store<XT, NT, 1>(acc, reinterpret_cast<float*>(smem), p, tg, split, row0);
  // a peer's copies into this CTA have all landed (every chunk was waited for before reduce_store's first
  // __syncthreads); this keeps each CTA resident until its peers are past their waits as well
  if (xp.cl > 1) cluster::sync();
}

// Host side (fp8_gemv_launch_xs.cu): the XS instances, dtype x NT x PF (1, 2).
cudaError_t launch_xs(const Params& p, bool bf16, bool two, int pf, int warps, int tgs, int cl, bool pdl,
                      cudaStream_t stream);
// The dynamic shared memory a launch needs (xs_layout's total).
int xs_smem_bytes(int nt, int warps, int kb, int kbs);

}  // namespace fp8g
}  // namespace qlinear
