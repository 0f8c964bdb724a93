// Host launchers for the RMSNorm kernels in norm.cuh. Raw pointers, strides in elements, a
// cudaStream_t; no torch headers, so this compiles with nvcc alone.
//
// Operands are [n_outer, n_inner, hidden] views (n_rows = n_outer * n_inner, last stride 1):
// row r starts at ptr + (r / n_inner) * s0 + (r % n_inner) * s1. A 2-D [n_rows, H] view with row
// stride s is {ptr, 0, s} with n_inner = n_rows.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace qlinear {

enum class NormDType : int { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };

struct NormOperand {
  void* ptr;
  int64_t s0;  // stride between outer indices (elements)
  int64_t s1;  // stride between inner indices (elements)
};

// Kernel choice. Zeros mean "pick automatically" (the usual case); benchmarks set them to sweep.
//   vecs_per_thread: 1, 2, 4 or 8 selects the 16-byte register kernel with that many vectors per
//                    thread (ignored, falling back to the generic kernel, when alignment forbids);
//                    -1 forces the generic element-wise kernel.
//   threads_per_row: power of two in [1, 1024]; must cover the row for the register kernel.
//                    A multiple of 32 that is not a power of two (e.g. 448 or 896 for 7168 fp16 /
//                    bf16) selects the one-row-per-block kernel when each thread then holds 1 or 2
//                    vectors (fp16 / bf16, 16-byte path; otherwise rounded up to a power of two).
//   rows_per_block:  power of two; threads per block = rows_per_block * threads_per_row <= 1024.
//                    Negative, -k: the persistent kernel (plain norm, 16-byte path, <= 4 vectors
//                    per thread): k blocks per SM (capped by occupancy), each looping over groups
//                    of rows with the next group's loads in flight; the block holds the automatic
//                    plan's rows. Ignored (automatic plan) for the fused add or the generic path.
//   prefetch_weight: 1 loads the weight before the row reduction (register kernel, NV <= 4),
//                    2 before the PDL wait (plain norm; the fused add takes 1): the weight must
//                    not be written by the kernel launched just before on the stream. -1 after
//                    the reduction; 0 = automatic (before it when there are few rows).
//   pdl:             1 launches with programmatic dependent launch (sm_90+; the kernels wait for
//                    the previous grid before any global access), 0 a plain launch.
//   cluster:         2, 4 or 8 splits each row over a thread-block cluster of that many CTAs
//                    (sm_90+, 16-byte path only, few enough vectors per CTA; otherwise ignored);
//                    threads_per_row is then the threads per CTA and vecs_per_thread (1 or 2) the
//                    vectors per thread.
//   cache_hints:     load hint + 4 * store hint for the row accesses of the 16-byte kernel
//                    (fp16 / bf16, 2 or 4 vectors per thread, weight not prefetched; ignored
//                    elsewhere): load 1 = ld.cs, 3 = L1 + L2 evict-first; store 1 = st.cs.
//                    Instantiated: 1, 3, 4, 5, 7; the persistent kernel: 4 only.
//                    Variant bits: + 8 = the register kernel's two-level shuffle reduction (the
//                    pre-round-2 one; fp16 / bf16, 4 vectors per thread, hints then ignored);
//                    + 16 = the one-row-per-block kernel limited to 32 registers (weight after the
//                    reduction);
//                    + 32 = the two-pass loop kernel (any dtype, 16-byte path; other knobs but
//                    threads_per_row, vecs_per_thread and pdl ignored): one row per block of
//                    threads_per_row threads (multiple of 32, 0 = 256), pass 1 loads the row
//                    with an L2 evict-last hint and sums x^2, pass 2 re-reads it (L2,
//                    evict-first) and stores with st.global.cs; vecs_per_thread 4 = four vectors
//                    per thread per step, otherwise two.
//                    + 64 + 128 with the loop kernel (fp16 / bf16): + 64 = plain stores instead of
//                    st.global.cs, + 128 = row loads allocating in L1 (L1::evict_last /
//                    evict_first, the L2 priorities unchanged).
//                    + 64 with cluster 2, 4, 8 or 16 (fp16 / bf16, 16-byte path, sm_90): the
//                    mbarrier cluster kernel (rms_norm_cluster_mbar_kernel): threads_per_row =
//                    threads per CTA (a multiple of 32; 0 = enough for the CTA's piece),
//                    vecs_per_thread 1 or 2, prefetch_weight 2 = weight before the PDL wait
//                    (plain norm), + 128 = each warp pushes its own partial (no block barrier).
//                    Row kernel (non-power-of-two threads_per_row): load / store hints 4 and 5
//                    honoured when the weight is loaded after the reduction.
// With vecs_per_thread = 0 and threads_per_row set, the register budget is the smallest of
// 1, 2, 4, 8 vectors that covers the row. All zeros is the default plan (no PDL, no cluster,
// no hints).
struct NormConfig {
  int vecs_per_thread = 0;
  int threads_per_row = 0;
  int rows_per_block = 0;
  int prefetch_weight = 0;
  int pdl = 0;
  int cluster = 0;
  int cache_hints = 0;
};

// out <- x / sqrt(mean(x^2) + eps) * weight. `out` may equal `x` (in place).
cudaError_t rms_norm_launch(NormOperand out, NormOperand x, const void* weight, int64_t n_rows,
                            int64_t n_inner, int64_t hidden, float eps, NormDType dtype,
                            cudaStream_t stream, NormConfig config = NormConfig());

// residual <- x + residual; x <- residual / sqrt(mean(residual^2) + eps) * weight (in place).
cudaError_t fused_add_rms_norm_launch(NormOperand x, NormOperand residual, const void* weight,
                                      int64_t n_rows, int64_t n_inner, int64_t hidden, float eps,
                                      NormDType dtype, cudaStream_t stream,
                                      NormConfig config = NormConfig());

// ---- several column slices of the same rows in one launch (rms_norm_slices_launch)

// The most slices one launch takes (the kernel's by-value descriptor); callers split longer lists.
constexpr int kNormMaxSlices = 4;

// One slice: columns [col, col + width) of x's rows, normalized with `weight` ([width], contiguous)
// into `out`, an [n_outer, n_inner, width] view (x's slice itself for in place, or a buffer
// disjoint from x and from the other outputs).
struct NormSlice {
  NormOperand out;
  const void* weight;
  int64_t col;
  int64_t width;
};

// Kernel choice, zeros = automatic.
//   vecs_per_thread: 16-byte vectors per thread a slice's row is spread for (1, 2 or 4; default 2
//                    for at most one row per SM, else 4); -1 forces the element-wise path for
//                    every slice. A slice that is not 16-byte aligned, or wider than 4 x 1024
//                    vectors, takes the element-wise path regardless.
//   block_threads:   threads per block (power of two, 32..1024; raised to the widest slice's
//                    threads per row).
//   pdl:             1 = programmatic dependent launch (sm_90+), as NormConfig::pdl.
struct NormSlicesConfig {
  int vecs_per_thread = 0;
  int block_threads = 0;
  int pdl = 0;
};

// For each slice s: out_s <- x[..., col_s : col_s + width_s] / sqrt(mean(.^2) + eps) * weight_s,
// all slices in one kernel launch. 1 <= n_slices <= kNormMaxSlices; slices must not overlap.
cudaError_t rms_norm_slices_launch(NormOperand x, const NormSlice* slices, int n_slices, int64_t n_rows,
                                   int64_t n_inner, float eps, NormDType dtype, cudaStream_t stream,
                                   NormSlicesConfig config = NormSlicesConfig());

}  // namespace qlinear
