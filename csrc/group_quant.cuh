// Dynamic per-token-group FP8 (e4m3) quantization of activations (device code, no torch).
//
//   scale[m, g] = max(max_{k in g} |x[m, k]|, scale_eps) / 448          (fp32, IEEE division)
//   q[m, k]     = e4m3_rn_satfinite(x[m, k] / scale[m, k / group])      (IEEE division)
//
// for x [M, K] bf16 / fp16 / fp32 with any row stride, groups of `group` consecutive columns (the
// last one may be short). The arithmetic is norm_quant.cuh's (group_scale, div_rcp, div_by,
// e4m3x2), so codes and scales equal those of qlinear.kernels.fp8_triton.per_token_group_quant_fp8
// and of the reference bit for bit (an x of -0 gives code 0x80, IEEE's sign, where the Triton
// kernel's division gives 0x00: both decode to 0).
//
// Layout: one thread per 16-byte vector of x (VEC = 8 16-bit or 4 fp32 values), LPG = group / VEC
// consecutive lanes per group (a power of two <= 32, so a group never straddles a warp); the group's
// amax is an xor-shuffle max over those lanes. Rows in [M, M_pad) (padding a GEMM asked for) read as
// zeros: codes 0 and the scale scale_eps / 448. Each thread stores its VEC codes as one 8- or 4-byte
// word, the group's first lane the scale.
//
// PDL: griddepcontrol.wait before x is read (x may be the previous kernel's output). The trigger
// that lets the next grid (the GEMM reading the codes) launch is placed by `trigger`: kFirst before
// the wait, kEarly right after it, kLate once this thread's x is loaded, kExit never explicitly (the
// grid's completion).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "norm_quant.cuh"
#include "pdl.cuh"

namespace qlinear {
namespace gq {

enum Trigger : int { kLate = 0, kEarly = 1, kFirst = 2, kExit = 3 };

struct Params {
  const void* x;
  int64_t x_stride;  // elements between rows of x
  uint8_t* q;        // e4m3 codes, row stride q_stride bytes
  int64_t q_stride;
  float* scales;  // scales[m * s_row_stride + g * s_col_stride]
  int64_t s_row_stride, s_col_stride;
  int64_t m;       // rows of x
  int64_t m_pad;   // rows of q / scales (>= m)
  int64_t vpr;     // threads per row: groups x LPG
  int k;           // columns
  float scale_eps;
  int trigger;   // Trigger
  bool prefetch;  // ask L2 for x's lines before the wait
};

template <typename T, int LPG>
__global__ void __launch_bounds__(512) group_quant_kernel(const Params p) {
  constexpr int VEC = nq::Elt<T>::VEC;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = tid / p.vpr;
  const int v = static_cast<int>(tid - row * p.vpr);
  const int col = v * VEC;
  const bool in_k = col < p.k;
  const T* xp = static_cast<const T*>(p.x) + row * p.x_stride + col;

  if (p.trigger == kFirst) pdl::launch_dependents();
  // A prefetch returns nothing to the SM and L2 is coherent, so asking for x before the previous grid
  // is done cannot read stale data: the loads after the wait see its writes. One request per 128-byte
  // line (x's rows are 16-byte aligned, so a line holds up to 8 of the threads' vectors; a row's first
  // vector asks for the line it starts in).
  if (p.prefetch && row < p.m && in_k && (col == 0 || (reinterpret_cast<uintptr_t>(xp) & 127) < 16))
    asm volatile("prefetch.global.L2 [%0];" ::"l"(xp));
  pdl::wait();
  if (p.trigger == kEarly) pdl::launch_dependents();
  uint4 raw = make_uint4(0, 0, 0, 0);
  if (row < p.m && in_k) raw = *reinterpret_cast<const uint4*>(xp);
  if (p.trigger == kLate) pdl::launch_dependents();

  float f[VEC];
  nq::Elt<T>::unpack(raw, f);
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < VEC; ++i) amax = fmaxf(amax, fabsf(f[i]));
  // threads past the last row still shuffle (whole warps take part) but store nothing
#pragma unroll
  for (int off = LPG / 2; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float scale = nq::group_scale(amax, p.scale_eps);
  const float r = nq::div_rcp(scale);
  if (row >= p.m_pad) return;

  uint8_t* qrow = p.q + row * p.q_stride;
  if (in_k) {
    if constexpr (VEC == 8) {
      const uint32_t lo = nq::e4m3x2(nq::div_by(f[0], scale, r), nq::div_by(f[1], scale, r)) |
                          (nq::e4m3x2(nq::div_by(f[2], scale, r), nq::div_by(f[3], scale, r)) << 16);
      const uint32_t hi = nq::e4m3x2(nq::div_by(f[4], scale, r), nq::div_by(f[5], scale, r)) |
                          (nq::e4m3x2(nq::div_by(f[6], scale, r), nq::div_by(f[7], scale, r)) << 16);
      *reinterpret_cast<uint2*>(qrow + col) = make_uint2(lo, hi);
    } else {
      *reinterpret_cast<uint32_t*>(qrow + col) =
          nq::e4m3x2(nq::div_by(f[0], scale, r), nq::div_by(f[1], scale, r)) |
          (nq::e4m3x2(nq::div_by(f[2], scale, r), nq::div_by(f[3], scale, r)) << 16);
    }
  }
  if (v % LPG == 0) p.scales[row * p.s_row_stride + (v / LPG) * p.s_col_stride] = scale;
}

}  // namespace gq
}  // namespace qlinear
