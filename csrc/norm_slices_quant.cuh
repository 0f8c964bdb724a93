// RMSNorm of several column slices of the same rows in ONE launch, each slice written either as
// x's dtype (plain RMSNorm) or as FP8 e4m3 codes + per-token-group fp32 scales (group 128).
// Device code only (no torch headers). DeepSeek MLA's tail after the fused QKV-A projection:
// q_c = qkv[:, :1536] -> e4m3 + scales for q_b_proj, kv_c = qkv[:, 1536:2048] -> bf16.
//
// Formulas (fp32 throughout):
//   quantized slice: exactly rms_norm_quant_fp8's (norm_quant.cuh, its header comment):
//     rstd = 1 / sqrt_rn(sum(x^2) / W + eps), y = (x * rstd) * w (never rounded to T),
//     scale = max(amax_group(|y|), scale_eps) / 448, q = e4m3_rn(clamp(y / scale)).
//     The sum of squares runs in the same order as nq_vec_kernel / nq_row_kernel / nq_slim_kernel
//     (lane l owns 16-byte vectors l + 32 j; two chains, even / odd elements, over j ascending;
//     then the xor butterfly 16 .. 1), so codes and scales equal rms_norm_quant_fp8's bit for bit.
//   plain slice: rms_norm_slices_kernel's arithmetic, y = T(x * rsqrt(sum(x^2) / W + eps) * w)
//     (the sum order differs from the plain kernels': the result may differ by one rounding step).
//
// Layout: one warp per (row, slice) task, task g = row * n + s (the n slices of a token are
// neighbouring warps, in one block at small M). No shared memory and no block barrier: a warp
// loads its slice's weight (before the PDL wait: weights are not written by the preceding
// kernel), waits for the preceding grid, loads its row's vectors, reduces in registers and stores.
// Requirements (the launcher checks them, else falls back): 16-bit T, 16-byte aligned rows and
// slice columns, width % 8 == 0 (plain) or % 128 == 0 (quantized), width <= 256 NV.
#pragma once

#include "norm_quant.cuh"
#include "pdl.cuh"

namespace qlinear {
namespace nsq {

constexpr int kMaxSlices = 4;

struct Slice {
  void* out;             // plain: T rows; quantized: e4m3 codes
  int64_t out_stride;    // elements of out between rows
  float* scales;         // quantized: scales[row * s_row + group * s_col]; plain: nullptr
  int64_t s_row;
  int64_t s_col;
  const void* weight;    // [width], T
  int col;               // first column in x
  int width;
};

// Passed by value (kernel parameter space).
struct SliceSet {
  Slice s[kMaxSlices];
  int n;
};


// NV: 16-byte vectors per lane the registers hold (slices of up to 256 NV 16-bit elements).
template <typename T, int NV>
__global__ void __launch_bounds__(256) rms_norm_slices_quant_kernel(const void* __restrict__ x, int64_t x_stride,
                                                                    const SliceSet set, int rows, float eps,
                                                                    float scale_eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
  __trap();  // e4m3 conversion instructions: sm_89+ (the launcher checks the device)
#else
  using E = nq::Elt<T>;
  static_assert(E::VEC == 8, "16-bit types only");
  const int lane = threadIdx.x & 31;
  const int task = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x >> 5) + static_cast<int>(threadIdx.x >> 5);
  const int row = task / set.n;
  const int si = task - row * set.n;
  // a whole warp leaves together; nothing below synchronizes more than the warp
  if (row >= rows) return;
  const Slice& sl = set.s[si];
  const int nvec = sl.width >> 3;
  const bool quant = sl.scales != nullptr;

  uint4 wv[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    if (32 * j >= nvec) break;
    const int v = lane + 32 * j;
    wv[j] = v < nvec ? __ldg(reinterpret_cast<const uint4*>(sl.weight) + v) : make_uint4(0u, 0u, 0u, 0u);
  }
  pdl::wait();
  pdl::launch_dependents();
  const uint4* xr = reinterpret_cast<const uint4*>(static_cast<const T*>(x) + row * x_stride + sl.col);
  uint4 xv[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    if (32 * j >= nvec) break;
    const int v = lane + 32 * j;
    // x may be written by this launch (a plain slice in place): no read-only path
    xv[j] = v < nvec ? xr[v] : make_uint4(0u, 0u, 0u, 0u);
  }
  // nq_vec_kernel's sum: two chains over j, then the butterfly (lanes past the row add zeros)
  float h[NV][8];
  float a0 = 0.f, a1 = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    if (32 * j >= nvec) break;
    E::unpack(xv[j], h[j]);
#pragma unroll
    for (int k = 0; k < 8; k += 2) {
      a0 = fmaf(h[j][k], h[j][k], a0);
      a1 = fmaf(h[j][k + 1], h[j][k + 1], a1);
    }
  }
  const float ss = nq::warp_sum(a0 + a1);

  if (quant) {
    const float rstd = nq::row_rstd(ss, sl.width, eps);
    uint8_t* qrow = static_cast<uint8_t*>(sl.out) + row * sl.out_stride;
    float* srow = sl.scales + row * sl.s_row;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      if (32 * j >= nvec) break;  // uniform over the warp: the shuffles below see every lane
      const int v = lane + 32 * j;
      float w[8];
      E::unpack(wv[j], w);
      float amax = 0.f;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        h[j][k] = (h[j][k] * rstd) * w[k];
        amax = fmaxf(amax, fabsf(h[j][k]));
      }
      // a 128-group is 16 consecutive lanes at one j (vector v = lane + 32 j: group v / 16)
#pragma unroll
      for (int off = 8; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
      const float scale = nq::group_scale(amax, scale_eps);
      const float r = nq::div_rcp(scale);
      const float* y = h[j];
      const uint32_t c0 = nq::e4m3x2(nq::div_by(y[0], scale, r), nq::div_by(y[1], scale, r)) |
                          (nq::e4m3x2(nq::div_by(y[2], scale, r), nq::div_by(y[3], scale, r)) << 16);
      const uint32_t c1 = nq::e4m3x2(nq::div_by(y[4], scale, r), nq::div_by(y[5], scale, r)) |
                          (nq::e4m3x2(nq::div_by(y[6], scale, r), nq::div_by(y[7], scale, r)) << 16);
      if (v < nvec) {
        reinterpret_cast<uint2*>(qrow)[v] = make_uint2(c0, c1);
        if ((lane & 15) == 0) srow[(v >> 4) * sl.s_col] = scale;
      }
    }
  } else {
    // rms_norm_slices_kernel's arithmetic
    const float inv = rsqrtf(ss / static_cast<float>(sl.width) + eps);
    uint4* orow = reinterpret_cast<uint4*>(static_cast<T*>(sl.out) + row * sl.out_stride);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      if (32 * j >= nvec) break;
      const int v = lane + 32 * j;
      float w[8];
      E::unpack(wv[j], w);
      const float* f = h[j];
      const uint4 o = make_uint4(E::pack2(f[0] * inv * w[0], f[1] * inv * w[1]),
                                 E::pack2(f[2] * inv * w[2], f[3] * inv * w[3]),
                                 E::pack2(f[4] * inv * w[4], f[5] * inv * w[5]),
                                 E::pack2(f[6] * inv * w[6], f[7] * inv * w[7]));
      if (v < nvec) orow[v] = o;
    }
  }
#endif
}

}  // namespace nsq
}  // namespace qlinear
