// FP8 block-scaled decode GEMM whose x is quantized once per thread-block cluster into shared memory
// (T = 2 codes, csrc/fp8_gemv_launch.h; sm_90; device code and the launcher's declaration, no torch).
//
//   y[m, n] = bias[n] + sum_kb sw[n / 128, kb] * sx[m, kb] * sum_{k in kb} q[m, k] * w[n, k]
//
// The register kernel of fp8_gemv.cuh gets x's codes one of two ways, and both cost at M = 9..16: with
// Q = 0 every CTA quantizes all M x K values for itself, and with Q = 1 a separate quantizer kernel runs
// first (a launch boundary) and every CTA re-reads all the codes from L2. Here the C CTAs of a cluster
// (C consecutive 16-row tiles) split the quantization: CTA rank r quantizes k-blocks [r kbc, (r + 1) kbc),
// kbc = cdiv(kb, C), of every token with fp8_gemv.cuh's quant_raw (the codes and scales of
// per_token_group_quant_fp8, bit for bit) and stores them into the shared memory of every CTA of the
// cluster (distributed shared memory). After one cluster barrier each CTA runs the register kernel's
// main loop (one 16-row tile, W warps taking the k-blocks round-robin, PF + 1 register stages of
// weights, mma.sync.m16n8k32.e4m3) with x's B fragments and scales read from its own shared memory.
//
// Shared memory: codes [8 NT][P] bytes, P = K + 64 (a pitch of 64 mod 128 bytes puts tokens g and g + 1
// in opposite halves of the 32 banks, so a warp's 16-byte loads at k = 16 t take the minimum of four
// wavefronts), group scales [8 NT][kb] fp32, then reduce_store's partial tiles. Tokens >= M hold zero
// codes and scales. K is bounded by the CTA's shared memory (K = 7168 at M > 8: 136 KB with 16 warps).
// Prefetch (the X digit): one cp.async.bulk.prefetch.L2 per weight row of the CTA for all of K, issued
// before griddepcontrol.wait, so the weight stream runs during the previous kernel's tail and the
// quantization.
#pragma once

#include "bulk_copy.cuh"
#include "cluster.cuh"
#include "fp8_gemv.cuh"

namespace qlinear {
namespace fp8g {

struct SxParams {
  Params p;      // splits = 1
  int cluster;   // C: CTAs per cluster along x sharing the quantization (1, 2, 4 or 8)
  int pitch;     // P: bytes between token rows of the shared codes
  int prefetch;  // 1: bulk L2 prefetch of the CTA's weight rows before the wait
};

// Bytes of the shared scales (a 16-byte multiple, so the partial tiles after them stay aligned).
__host__ __device__ constexpr int sx_scale_bytes(int nt, int kb) { return (8 * nt * kb * 4 + 15) / 16 * 16; }

inline size_t sx_smem_bytes(int nt, int64_t k, int warps) {
  return static_cast<size_t>(8 * nt) * static_cast<size_t>(k + 64) +
         static_cast<size_t>(sx_scale_bytes(nt, static_cast<int>(k / 128))) + smem_bytes(1, nt, warps);
}

__device__ __forceinline__ void st_cluster_v4(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
#endif
}

__device__ __forceinline__ void st_cluster_f32(uint32_t addr, float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
#endif
}

__device__ __forceinline__ void prefetch_l2_bulk(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// Items (k-block, token tile) a warp quantizes per round: their raw x is loaded before any of them is
// quantized, so a warp waits out one L2 round trip per QB items instead of one per item.
constexpr int kSxQuantBatch = 2;

template <typename XT, int NT, int PF>
__global__ void __launch_bounds__(max_threads(NT, 1, PF, true), 1) fp8_sx_kernel(const SxParams sp) {
  static_assert(PF >= 1, "the main loop is the register kernel's weight ring");
  const Params& p = sp.p;
  extern __shared__ __align__(16) uint8_t smem[];
  const int P = sp.pitch, KB = p.kb, C = sp.cluster;
  uint8_t* codes = smem;
  float* scl = reinterpret_cast<float*>(smem + 8 * NT * P);
  float* red = reinterpret_cast<float*>(smem + 8 * NT * P + sx_scale_bytes(NT, KB));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tg = blockIdx.x, row0 = tg * 16;

  // rows past N (the last tile, and the tiles a cluster rounds the grid up to) read row N - 1
  int rows[1][2];
#pragma unroll
  for (int h = 0; h < 2; ++h) rows[0][h] = min(row0 + h * 8 + g, p.n - 1);

  int kb = warp;
  constexpr int NS = PF + 1;
  WStage<1> st[NS];
#pragma unroll
  for (int i = 0; i < PF; ++i)
    if (kb + i * W < KB) load_stage<1>(st[i], p, rows, t, kb + i * W);
  if (sp.prefetch && threadIdx.x < 16)
    prefetch_l2_bulk(p.w + static_cast<int64_t>(min(row0 + static_cast<int>(threadIdx.x), p.n - 1)) * p.w_stride,
                     static_cast<uint32_t>(KB) * 128u);

  pdl::wait();
  pdl::launch_dependents();

  // this CTA's share of the quantization, stored into every CTA of the cluster
  const int rank = C > 1 ? static_cast<int>(blockIdx.x) % C : 0;
  const int kbc = (KB + C - 1) / C, q_lo = rank * kbc, q_hi = min(q_lo + kbc, KB);
  const int items = q_hi > q_lo ? (q_hi - q_lo) * NT : 0;
  for (int base = warp; base < items; base += kSxQuantBatch * W) {
    uint4 raw[kSxQuantBatch][2][2];
    bool valid[kSxQuantBatch];
#pragma unroll
    for (int b = 0; b < kSxQuantBatch; ++b) {
      const int it = base + b * W, tok = (it % NT) * 8 + g;
      valid[b] = it < items && tok < p.m;
      load_raw<XT>(raw[b], static_cast<const XT*>(p.x) + static_cast<int64_t>(valid[b] ? tok : 0) * p.x_stride,
                   valid[b], valid[b] ? q_lo + it / NT : 0, t);
    }
#pragma unroll
    for (int b = 0; b < kSxQuantBatch; ++b) {
      const int it = base + b * W;
      if (it >= items) break;  // warp-uniform: quant_raw shuffles within each token's four lanes
      const int tok = (it % NT) * 8 + g, kq = q_lo + it / NT;
      uint32_t q[8];
      const float s = quant_raw<XT>(q, raw[b], valid[b], p.scale_eps);
      const uint32_t a = tma::smem_u32(codes + tok * P + kq * 128 + 16 * t);
      const uint32_t as = tma::smem_u32(scl + tok * KB + kq);
      for (int c = 0; c < C; ++c) {
        const uint32_t d = C > 1 ? cluster::peer(a, static_cast<uint32_t>(c)) : a;
        st_cluster_v4(d, q[0], q[1], q[2], q[3]);
        st_cluster_v4(d + 64, q[4], q[5], q[6], q[7]);
        if (t == 0) st_cluster_f32(C > 1 ? cluster::peer(as, static_cast<uint32_t>(c)) : as, s);
      }
    }
  }
  // every CTA's stores into this one's shared memory land before the barrier; none touches a peer after it
  if (C > 1)
    cluster::sync();
  else
    __syncthreads();

  float acc[1][NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[0][nt][0] = acc[0][nt][1] = acc[0][nt][2] = acc[0][nt][3] = 0.f;
  const uint8_t* xr[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xr[nt] = codes + (nt * 8 + g) * P + 16 * t;

  for (; kb < KB; kb += NS * W) {
#pragma unroll
    for (int i = 0; i < NS; ++i) {
      const int kbi = kb + i * W;
      if (kbi >= KB) break;
      if (kbi + PF * W < KB) load_stage<1>(st[(i + PF) % NS], p, rows, t, kbi + PF * W);
      uint32_t q[NT][8];
      float sxc[NT][2];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const uint4 c0 = *reinterpret_cast<const uint4*>(xr[nt] + kbi * 128);
        const uint4 c1 = *reinterpret_cast<const uint4*>(xr[nt] + kbi * 128 + 64);
        q[nt][0] = c0.x, q[nt][1] = c0.y, q[nt][2] = c0.z, q[nt][3] = c0.w;
        q[nt][4] = c1.x, q[nt][5] = c1.y, q[nt][6] = c1.z, q[nt][7] = c1.w;
#pragma unroll
        for (int j = 0; j < 2; ++j) sxc[nt][j] = scl[(nt * 8 + 2 * t + j) * KB + kbi];
      }
      block_mma<NT, 1>(acc, st[i], q, sxc);
    }
  }

  reduce_store<XT, NT, 1>(acc, red, p, tg, 0, row0);
}

// Defined in fp8_sx_launch.cu: the instance for bf16 / fp16 output, one or two token tiles and PF 1 / 2,
// launched on round_up(tgs, cluster) CTAs in clusters of `cluster` along x; cudaErrorInvalidValue for an
// instance not compiled. The caller (fp8_gemv_launch.cu) has checked the config (sx_supported there).
cudaError_t launch_sx(const Params& p, bool bf16, int cluster, int pf, bool prefetch, int warps, int tgs, bool pdl,
                      cudaStream_t stream);

}  // namespace fp8g
}  // namespace qlinear
