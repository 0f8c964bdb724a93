// Weight-only int4 decode GEMM (W4A16, M <= 16 rows of activations) on tensor cores, qlinear's
// packed layout. Device code only (no torch headers).
//
//   out[m, n] = sum_k x[m, k] * (q[n, k] - zero[grp(k), n]) * scale[grp(k), n]  (+ bias[n])
//
// Layout (qlinear.reference.w4a16): qweight int32 [N, Kp / 8], 16-word superblocks per row; bits
// [4i, 4i + 4) of word j of superblock sb hold column sb * 128 + 16 i + j ("plane" i = 16
// contiguous columns). scales [G, N] fp16 / bf16 / fp32, zeros uint8 [G, N] or null (symmetric: 8).
//
// One mma.sync.m16n8k16 per plane and 16 weight rows: the weight tile is the A operand (16 rows x
// 16 k), x^T the B operand (16 k x 8 tokens), fp32 accumulators. Lane (g = lane / 4, t = lane % 4)
// loads words 4t .. 4t+3 of one superblock for rows g and g + 8 (two 16-byte loads; 4 lanes read a
// row's 64 contiguous bytes). The k order inside one mma is free as long as A and B agree, so lane
// t's A slots {2t, 2t+1} hold columns 4t, 4t+1 of the plane and slots {2t+8, 2t+9} columns 4t+2,
// 4t+3; its B registers then hold x[token g][4t .. 4t+3] of the plane: one 8-byte load.
//
// Dequantize without conversions: prmt puts the low (high) 16 bits of two words into one register,
// so the nibble of plane i of both words sits at bits 4i and 16 + 4i; (r >> 4i) & 0x000F000F |
// 0x43004300 read as bf16x2 is (128 + q) per half (fp16: 0x6400 | q = 1024 + q), and one packed
// subtract of (128 + zero) -- the bits 0x4300 | zero -- leaves the exact q - zero. Each group's
// 8 (or fewer) mma products are scaled in fp32 once per row: total += acc * scale.
//
// Work split: a CTA owns 16 R rows; its W warps take contiguous superblock slices of K and reduce
// through shared memory (one launch, no workspace). Each warp issues the loads of U superblocks
// (2 R weight vectors, the x fragments, scales, zeros each) before it uses any: memory-level
// parallelism, not instructions, bounds a decode GEMV.
//
// SUB (group 16 / 32 / 64, inside a superblock): scales and zeros are read per plane at compute
// time (correct, not tuned). Otherwise the group is a multiple of 128 (or per channel).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {
namespace w4a16g {

enum class FKind : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

struct Params {
  void* out;
  const void* x;
  const uint32_t* qw;
  const void* scales;
  const uint8_t* zeros;  // null: symmetric (8)
  const void* bias;      // null: none
  int64_t x_stride;      // elements
  int64_t out_stride;    // elements
  int64_t qw_stride;     // int32 words
  int m, n, k;
  int nsb;             // superblocks per row (Kp / 128)
  int group_size;      // SUB only
  int num_groups;
  int sb_per_group;    // !SUB: group_size / 128, or 1 << 30 per channel
  FKind scale_kind, bias_kind;
  int pdl_prefetch;    // issue L2 prefetches of the first chunk before griddepcontrol.wait
};

template <typename XT>
struct Mma;

template <>
struct Mma<__nv_bfloat16> {
  static constexpr uint32_t kMagic = 0x43004300u;  // bf16 128.0 twice
  static __device__ __forceinline__ uint32_t sub(uint32_t a, uint32_t b) {
    // a - b as a * 1 + (-b): exact here (small integers), and fma.bf16x2 exists from sm_80
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3F803F80u), "r"(b ^ 0x80008000u));
    return d;
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
};

template <>
struct Mma<__half> {
  static constexpr uint32_t kMagic = 0x64006400u;  // fp16 1024.0 twice
  static __device__ __forceinline__ uint32_t sub(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
};

__device__ __forceinline__ float load_f(const void* p, int64_t i, FKind kind) {
  if (kind == FKind::kBFloat16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (kind == FKind::kFloat16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

// Weights are read once: keep them out of L1, ask L2 for the whole 256-byte segment (the lanes of
// the next superblocks read it).
__device__ __forceinline__ uint4 load_stream(const uint32_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

__device__ __forceinline__ void grid_dep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void grid_dep_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The A fragment of plane i for one 16-row tile: lo / hi = the prmt'ed words of rows g / g + 8
// (index 0: words 0,1 of the lane's four, index 1: words 2,3; planes 0-3 from the low halves,
// 4-7 from the high halves), minus the zero pairs zg / zg8.
template <typename XT, int I>
__device__ __forceinline__ void a_frag(uint32_t (&a)[4], const uint32_t (&lo)[4], const uint32_t (&hi)[4],
                                       uint32_t zg, uint32_t zg8) {
  constexpr int S = 4 * (I & 3);
  constexpr int H = I >> 2;  // 0: low halves, 1: high halves
  const uint32_t m = Mma<XT>::kMagic;
  a[0] = Mma<XT>::sub(((lo[H * 2 + 0] >> S) & 0x000F000Fu) | m, zg);
  a[2] = Mma<XT>::sub(((lo[H * 2 + 1] >> S) & 0x000F000Fu) | m, zg);
  a[1] = Mma<XT>::sub(((hi[H * 2 + 0] >> S) & 0x000F000Fu) | m, zg8);
  a[3] = Mma<XT>::sub(((hi[H * 2 + 1] >> S) & 0x000F000Fu) | m, zg8);
}

// Words w0..w3 -> {low16(w0) | low16(w1) << 16, low16(w2) | low16(w3) << 16, high halves alike}.
__device__ __forceinline__ void split_words(const uint4& w, uint32_t (&o)[4]) {
  o[0] = __byte_perm(w.x, w.y, 0x5410);
  o[1] = __byte_perm(w.z, w.w, 0x5410);
  o[2] = __byte_perm(w.x, w.y, 0x7632);
  o[3] = __byte_perm(w.z, w.w, 0x7632);
}

__device__ __forceinline__ uint32_t zero_pair(uint32_t magic, uint32_t z) { return magic | (z * 0x00010001u); }

// Threads per CTA the instance is compiled for: configs holding more than ~48 registers of loads
// in flight per lane (or many row tiles) get 256 threads (up to 255 registers, no spills), the light ones 512.
template <int R, int U, int NT>
constexpr int max_threads() {
  return (8 * R * U + 16 * U * NT + 16 * R) > 64 ? 256 : 512;
}

// R: 16-row tiles per CTA (every warp covers all of them); U: superblocks loaded ahead per warp;
// NT: 8-token tiles (1: M <= 8, 2: M <= 16); SUB: groups smaller than a superblock.
template <typename XT, int R, int U, int NT, bool SUB>
__global__ void __launch_bounds__(max_threads<R, U, NT>(), 1) mma_gemv_kernel(const Params p) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * (16 * R);
  const int sb_begin = static_cast<int>(static_cast<int64_t>(p.nsb) * warp / nw);
  const int sb_end = static_cast<int>(static_cast<int64_t>(p.nsb) * (warp + 1) / nw);

  const uint32_t* wp[R][2];
  int rows[R][2];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // rows past N recompute row N-1 (valid memory; never stored)
      rows[r][h] = min(row0 + r * 16 + g + 8 * h, p.n - 1);
      wp[r][h] = p.qw + static_cast<int64_t>(rows[r][h]) * p.qw_stride + 4 * t;
    }
  const XT* xp[NT];
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int tok = g + 8 * nt;
    xok[nt] = tok < p.m;
    xp[nt] = static_cast<const XT*>(p.x) + static_cast<int64_t>(xok[nt] ? tok : 0) * p.x_stride + 4 * t;
  }
  const uint32_t magic = Mma<XT>::kMagic;  // zero_pair ors (zero, zero) into it

  float tot[R][NT][4], acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) tot[r][nt][c] = acc[r][nt][c] = 0.f;

  if (p.pdl_prefetch) {
    // weights are never written by the previous kernel: warm L2 while it finishes
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (sb_begin + u < sb_end)
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int h = 0; h < 2; ++h) prefetch_l2(wp[r][h] + (sb_begin + u) * 16);
  }
  grid_dep_wait();

  for (int sb0 = sb_begin; sb0 < sb_end; sb0 += U) {
    uint4 w[U][R][2];
    uint2 xv[U][NT][8];
    float sc[SUB ? 1 : U][R][2];
    uint32_t zp[SUB ? 1 : U][R][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int sb = sb0 + u;
      const bool valid = sb < sb_end;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) w[u][r][h] = valid ? load_stream(wp[r][h] + sb * 16) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int col = sb * 128 + i * 16 + 4 * t;
          xv[u][nt][i] = (valid && xok[nt] && col < p.k) ? __ldg(reinterpret_cast<const uint2*>(xp[nt] + sb * 128 + i * 16))
                                                         : make_uint2(0u, 0u);
        }
      if constexpr (!SUB) {
        const int64_t gbase = static_cast<int64_t>(min(sb, p.nsb - 1) / p.sb_per_group) * p.n;
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            sc[u][r][h] = valid ? load_f(p.scales, gbase + rows[r][h], p.scale_kind) : 0.f;
            zp[u][r][h] = zero_pair(magic, (p.zeros != nullptr && valid) ? __ldg(p.zeros + gbase + rows[r][h]) : 8u);
          }
      }
    }

#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int sb = sb0 + u;
      if (sb >= sb_end) break;
      uint32_t lo[R][4], hi[R][4];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        split_words(w[u][r][0], lo[r]);
        split_words(w[u][r][1], hi[r]);
      }
      if constexpr (!SUB) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
#pragma unroll
          for (int r = 0; r < R; ++r) {
            uint32_t a[4];
            switch (i) {
              case 0: a_frag<XT, 0>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              case 1: a_frag<XT, 1>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              case 2: a_frag<XT, 2>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              case 3: a_frag<XT, 3>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              case 4: a_frag<XT, 4>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              case 5: a_frag<XT, 5>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              case 6: a_frag<XT, 6>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
              default: a_frag<XT, 7>(a, lo[r], hi[r], zp[u][r][0], zp[u][r][1]); break;
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) Mma<XT>::mma(acc[r][nt], a, xv[u][nt][i].x, xv[u][nt][i].y);
          }
        }
        // a group ends here: after the slice's last superblock or before the next group's first
        if (sb + 1 == sb_end || (sb + 1) % p.sb_per_group == 0) {
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              tot[r][nt][0] = fmaf(acc[r][nt][0], sc[u][r][0], tot[r][nt][0]);
              tot[r][nt][1] = fmaf(acc[r][nt][1], sc[u][r][0], tot[r][nt][1]);
              tot[r][nt][2] = fmaf(acc[r][nt][2], sc[u][r][1], tot[r][nt][2]);
              tot[r][nt][3] = fmaf(acc[r][nt][3], sc[u][r][1], tot[r][nt][3]);
#pragma unroll
              for (int c = 0; c < 4; ++c) acc[r][nt][c] = 0.f;
            }
        }
      } else {
        // group of plane i: (sb * 128 + 16 i) / group_size, clamped for the padded tail
        const int ppg = p.group_size >> 4;  // planes per group: 1, 2 or 4
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int grp = min((sb * 128 + 16 * i) / p.group_size, p.num_groups - 1);
          const int64_t gbase = static_cast<int64_t>(grp) * p.n;
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const uint32_t z0 = zero_pair(magic, p.zeros != nullptr ? __ldg(p.zeros + gbase + rows[r][0]) : 8u);
            const uint32_t z1 = zero_pair(magic, p.zeros != nullptr ? __ldg(p.zeros + gbase + rows[r][1]) : 8u);
            uint32_t a[4];
            switch (i) {
              case 0: a_frag<XT, 0>(a, lo[r], hi[r], z0, z1); break;
              case 1: a_frag<XT, 1>(a, lo[r], hi[r], z0, z1); break;
              case 2: a_frag<XT, 2>(a, lo[r], hi[r], z0, z1); break;
              case 3: a_frag<XT, 3>(a, lo[r], hi[r], z0, z1); break;
              case 4: a_frag<XT, 4>(a, lo[r], hi[r], z0, z1); break;
              case 5: a_frag<XT, 5>(a, lo[r], hi[r], z0, z1); break;
              case 6: a_frag<XT, 6>(a, lo[r], hi[r], z0, z1); break;
              default: a_frag<XT, 7>(a, lo[r], hi[r], z0, z1); break;
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) Mma<XT>::mma(acc[r][nt], a, xv[u][nt][i].x, xv[u][nt][i].y);
            if (((i + 1) & (ppg - 1)) == 0) {
              const float s0 = load_f(p.scales, gbase + rows[r][0], p.scale_kind);
              const float s1 = load_f(p.scales, gbase + rows[r][1], p.scale_kind);
#pragma unroll
              for (int nt = 0; nt < NT; ++nt) {
                tot[r][nt][0] = fmaf(acc[r][nt][0], s0, tot[r][nt][0]);
                tot[r][nt][1] = fmaf(acc[r][nt][1], s0, tot[r][nt][1]);
                tot[r][nt][2] = fmaf(acc[r][nt][2], s1, tot[r][nt][2]);
                tot[r][nt][3] = fmaf(acc[r][nt][3], s1, tot[r][nt][3]);
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[r][nt][c] = 0.f;
              }
            }
          }
        }
      }
    }
  }
  grid_dep_launch();

  // Cross-warp reduction: red[warp][v], v = ((r * NT + nt) * 4 + c) * 32 + lane.
  constexpr int V = R * NT * 4 * 32;
  extern __shared__ float red[];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) red[warp * V + ((r * NT + nt) * 4 + c) * 32 + lane] = tot[r][nt][c];
  __syncthreads();
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    float s = 0.f;
    for (int wi = 0; wi < nw; ++wi) s += red[wi * V + v];  // fixed order: deterministic
    const int ln = v & 31, c = (v >> 5) & 3, rn = v >> 7;
    const int nt = rn % NT, r = rn / NT;
    const int row = row0 + r * 16 + (ln >> 2) + (c >= 2 ? 8 : 0);
    const int tok = nt * 8 + 2 * (ln & 3) + (c & 1);
    if (row < p.n && tok < p.m) {
      if (p.bias != nullptr) s += load_f(p.bias, row, p.bias_kind);
      static_cast<XT*>(p.out)[static_cast<int64_t>(tok) * p.out_stride + row] = Mma<XT>::from_f(s);
    }
  }
}

}  // namespace w4a16g
}  // namespace qlinear
