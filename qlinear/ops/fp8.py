"""FP8 (e4m3) ops: activation quantization, block-scaled / per-channel / per-tensor FP8 linear, and
the fused RMSNorm -> FP8 quantization.

Backend choice, for every op: the ``backend=`` argument, then the op's environment variable
(``QLINEAR_FP8_QUANT_BACKEND``, ``QLINEAR_FP8_BLOCK_BACKEND``, ``QLINEAR_FP8_SCALED_BACKEND``,
``QLINEAR_RMS_NORM_QUANT_BACKEND``; ``auto`` or unset = capability), then the device: CPU tensors
use the fp32 references of ``qlinear.reference.fp8``, CUDA tensors the Triton kernels of
``qlinear.kernels.fp8_triton`` or ``torch._scaled_mm`` (cuBLAS / CUTLASS).

The block-scaled GEMM has a fourth backend, "cuda": one launch of the CUDA extension's decode kernel
(``csrc/fp8_gemv.cuh``, M <= 16) that quantizes x itself, bit-identical codes and scales to
:func:`per_token_group_quant_fp8` (or, with a Q = 1 config code, runs that quantizer first and
reads its codes). A T = 1 config code runs the TMA ring kernel instead (``csrc/fp8_tma.cuh``, sm_90,
after that quantizer): one producer thread streams the weights and x through shared memory, which the
wide shapes need (7168x16384). Auto dispatch takes the "cuda" backend for M <= :data:`FP8_CUDA_MAX_M`
(0 = never until measured) with the :data:`FP8_CUDA_CONFIG` code; where it does not apply (extension
unavailable, K % 128, alignment, dtype; for T = 1 codes also another GPU or scale rows its tensor maps
cannot describe, :func:`_cuda_tma_ok`) it falls back to "triton".

The device-facing work runs inside ``torch.library`` custom ops (namespace ``qlinear``) with fake
implementations, so ``torch.compile`` traces through them and CUDA graphs capture them; the
backend is resolved before the op is entered and passed to it as a string.

``torch._scaled_mm`` facts this module relies on (torch 2.9 - 2.11, CUDA >= 12.9):

* Blockwise "DeepSeek" recipe = ``(BlockWise1x128, BlockWise128x128)``, recognized from the scale
  shapes/strides by ``aten/src/ATen/native/cuda/ScaledBlas.cpp`` (``is_blockwise_1x128_scaling``,
  ``is_blockwise_128x128_scaling``): ``mat1`` e4m3 [M, K] row-major, ``mat2`` = ``weight.t()`` (a
  column-major [K, N] view of the [N, K] weight), ``scale_a`` fp32 [M, cdiv(K, 128)] **outer-dim-
  major** (strides ``(1, M)``), ``scale_b`` fp32 [cdiv(K, 128), cdiv(N, 128)] = ``weight_scale_inv.t()``
  of a contiguous [cdiv(N, 128), cdiv(K, 128)] tensor. ``use_fast_accum`` must be False
  (``CUDABlas.cpp``), output bf16 / fp16 / fp32, Hopper (sm_90) only, K and N multiples of 16.
* cuBLAS (docs, "128-element 1D and 128x128 2D Block Scaling For FP8 Data Types", "Scaling factors
  layouts") further requires M and N to be multiples of 4 — why M = 1 failed with
  ``CUBLAS_STATUS_NOT_SUPPORTED`` — and the column stride of a 128x128 scale to be a multiple of 4
  (``cdiv(K, 128) % 4 == 0`` here: the v1 API cannot pass a padded stride). So M is padded to a
  multiple of 4 by the quantization kernel itself (zero rows, cut off after the GEMM).
* Row-wise recipe: ``scale_a`` fp32 [M, 1] and ``scale_b`` fp32 [1, N], both contiguous; tensor-wise:
  both scales one fp32 element. A bias must have the output dtype (bf16 / fp16).
"""

import sys
from dataclasses import dataclass
from typing import Optional

import torch

from qlinear._utils import (FP8_E4M3, FP8_E4M3_MAX, Fp8GroupActivation, cdiv, cuda_capability, define_op, describe,
                            empty_group_scales, env_backend)
from qlinear.reference import fp8 as _ref

__all__ = [
    "per_token_group_quant_fp8",
    "per_token_quant_fp8",
    "fp8_block_linear",
    "fp8_block_backend",
    "fp8_block_linear_quantized",
    "fp8_block_quantized_backend",
    "Fp8GroupActivation",
    "fp8_scaled_linear",
    "fp8_scaled_backend",
    "rms_norm_quant_fp8",
    "FP8_BLOCK_DISPATCH",
    "FP8_CUDA_MAX_M",
    "FP8_CUDA_CONFIG",
    "fp8_block_gemv_cuda",
]

_QUANT_BACKENDS = ("cuda", "triton", "reference")
_BLOCK_BACKENDS = ("scaled_mm", "triton", "cuda", "reference")
_SCALED_BACKENDS = ("scaled_mm", "reference")
_NORM_BACKENDS = ("cuda", "triton", "reference")
_ACT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _kernels():
    # The one allowed function-local import: it keeps triton off the import path of qlinear.ops.
    from qlinear.kernels import fp8_triton

    return fp8_triton


# --------------------------------------------------------------------------------------------
# dispatch table of the block-scaled GEMM
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    max_m: int  # the rule applies for M <= max_m
    backend: str


# Keyed by the weight's (N, K); None holds every other shape. The first rule with M <= max_m wins.
# Numbers behind it: notes/gpu_run1/bench_fp8.txt (H200, torch 2.11, Triton 3.6, bf16 out, µs
# per whole op, activation quantization included; "triton" = qlinear's split-K kernel with the
# best config of that run's sweep):
#   2112x7168  M=1/2/4/16: triton 11.5/11.9/12.0/12.1 · scaled_mm 21.0/20.2/18.4/18.3
#              M=64: triton 13.6 · scaled_mm 25.7 · M=128: triton 21.8 · scaled_mm 26.1
#              M=1024: triton 88.9 (default cfg) · scaled_mm 52.4 · M=4096: 260 · 143
#   24576x1536 M=1..16: triton 16.6-17.6 · scaled_mm 20.0-20.3 · M=64: 19.1 · 20.2
#              M=128: 33.2 · 20.3 · M=1024: 154 · 82.8 · M=4096: 563 · 320
#   7168x16384 M=1..16: triton 36.1-39.6 · scaled_mm 41.4-43.0 · M=64: 47.4 · 50.5
#              M=128: 84.4 · 52.5 · M=1024: 425 · 233 · M=4096: 1516 · 895
# Other shapes: Triton won every measured M <= 64, scaled_mm every M >= 128 but one.
# 2112x7168 M = 65..128 moved to scaled_mm: whole layer (bench_linear, H200, two runs at 2f328ec /
# 98a1612) Triton 27.3 / 27.3 us vs scaled_mm 25.0 / 24.9 us; the two separate layers it replaces
# take 43.9 / 42.7 us, so merged/separate 0.57 instead of 0.62.
FP8_BLOCK_DISPATCH: dict = {
    (2112, 7168): (_Rule(64, "triton"), _Rule(sys.maxsize, "scaled_mm")),
    (24576, 1536): (_Rule(64, "triton"), _Rule(sys.maxsize, "scaled_mm")),
    (7168, 16384): (_Rule(64, "triton"), _Rule(sys.maxsize, "scaled_mm")),
    None: (_Rule(64, "triton"), _Rule(sys.maxsize, "scaled_mm")),
}


# The "cuda" one-launch decode kernel in auto dispatch: taken for M <= this bound where it applies
# (_cuda_gemv_ok). An int for every shape, or a dict keyed by the weight's (N, K) with None for
# every other shape.
# H200, session 5, two sweeps (benchmarks/results/session5/fp8cuda_r1.json, fp8cuda_r2.json: whole
# op incl. activation quantization, cold weights, graph replays of all candidates alternated), us
# at M = 1 / 4 / 8 / 12 / 16 from r2, best "cuda" code vs backend="triton" in the same run:
#   2112x7168   7.44 / 7.59 / 7.35 / 10.74 / 11.43  vs 9.40 / 9.38 / 9.57 / 9.84 / 10.45 -> cuda M <= 8
#   1536x7168   6.71 / 6.82 / 6.81 /  8.95 /  9.15  vs 8.61 / 8.81 / 8.97 / 9.45 / 9.70  -> cuda M <= 16
#    576x7168   5.34 / 5.45 / 5.54 /  7.07 /  7.17  vs 6.65 / 6.80 / 7.10 / 7.33 / 7.67  -> cuda M <= 16
#   24576x1536 25.3 / 25.2 / 19.9 / 20.1 / 21.1    vs 14.7 / 15.9 / 15.9 / 16.2 / 15.8  -> Triton
#   7168x16384 46.4 / 42.3 / 42.3 / 48.8 / 48.6    vs 35.0 / 36.1 / 36.6 / 37.6 / 38.3  -> Triton
# (r1 had the launcher's automatic config on 24576x1536 at 15.6 / 16.0 us vs Triton 16.1 / 17.0 at
# M = 1 / 4; r2 measured that same dispatch at 16.5 / 16.8 vs Triton 14.7 / 15.9, so it is off.)
# The wide shapes stayed on Triton: this kernel streams at most ~2.9 TB/s there (no smem ring); since
# session 28 7168x16384 takes the TMA ring kernel (below).
# Other shapes: Triton (not measured).
# Session 8 (benchmarks/results/session8/run1, run2: probe_fp8_preq.py, cold weights, alternated graph
# replays, us): 2112x7168 M = 9 / 12 / 16 pre-quantized with 14 warps and the quantizer's PDL trigger
# early (1011114, FP8_CUDA_CONFIG) 8.81 / 9.03 / 9.35 (run 1: M = 16 9.27) vs the Triton path 9.18 /
# 9.42 / 9.70 (run 1: 9.66) -> cuda M <= 16.
# Session 28 runs 2-3 (benchmarks/results/session28/run2, run3: probe_fp8_preq.py, cold weights, alternated
# graph replays, us): the TMA ring kernel (T = 1 codes, csrc/fp8_tma.cuh) after the quantizer on
# 7168x16384, best code vs the dispatch then (Triton) in the same run:
#   M = 1:  101042304 32.80 / 32.86 (trigger early; late 32.84 / 32.46) vs 33.43 / 33.34
#   M = 8:  101042404 32.92 (early) vs 34.82
#   M = 16: 101042304 34.59 / 34.62 (early) vs 36.81 / 36.95 (GEMV alone 33.27 / 33.33, 3.5 TB/s)
# -> cuda M <= 16 on 7168x16384 (sm_90 only: _cuda_tma_ok). On few rows (2112x7168, 132 one-tile CTAs,
# run 3) no ring depth beat the register kernel: M = 16 best pair 8.79 (101081404, X = 1) vs 8.13, M = 8
# 8.01 vs 6.54, M = 1 7.63 vs 6.32; on 24576x1536 (run 2, M = 16) 22.19 vs Triton 13.59. Run 5 (26d9179):
# a pair split of the TMA ring (two CTAs per 32-row tile, each half of K; removed) on 2112x7168 M = 16 took
# 9.18 at best vs 11011114's 8.59 in the probe, and bench_linear read 10.8 vs run 4's 8.25.
FP8_CUDA_MAX_M: "int | dict" = {
    (2112, 7168): 16,
    (1536, 7168): 16,
    (576, 7168): 16,
    (7168, 16384): 16,
    None: 0,
}

# Launch config of the "cuda" kernel: code X * 10000000 + Q * 1000000 + S * 10000 + R * 1000 + PF * 100
# + W (csrc/fp8_gemv_launch.h; 0 = the launcher's automatic choice). X = 1: each warp loads its next
# k-block's x before multiplying the current one (R = 1, PF 1 / 2). Q = 1: x is quantized first by
# per_token_group_quant_fp8 (Triton, the same codes and scales) and the GEMM, launched with PDL,
# reads the codes (fp8_block_gemv_preq) instead of re-quantizing x in every CTA. PF = 1, 2, 3 keep
# that many k-blocks of weights in flight (compiled for R = 1, and PF <= 2 for R = 2).
# An int, or a dict keyed by (N, K) of tuples of (max_m, code) or (max_m, code, trigger) (the first
# with M <= max_m wins), None for every other shape; trigger ("first" / "early" / "late") is the PDL
# trigger of a Q = 1 code's quantizer, FP8_CUDA_QUANT_PDL where absent. From the sweeps: one CTA per
# 16-row tile with 16 warps splitting K and the next k-block prefetched (11116) on the 7168-wide MLA
# shapes, x pre-quantized from M = 9 on 1536 rows (1011116); 576 rows (36 tiles) split K over 4 CTAs
# (41108, pre-quantized 1041108 for two token tiles).
# Session 8 run 2 (benchmarks/results/session8/run2, M = 16, us, quantizer trigger late / early):
# 2112x7168 1011114 12.80 / 9.35 (16 warps, 1011116: 12.99 / 12.52; 13 warps 13.37 / 9.94; PF = 2
# 1011214 12.48 / 9.63) -> 1011114 early for M = 9..16; 576x7168 1041108 6.68 / 6.49 -> early;
# 1536x7168 1011116 8.41 / 9.19, 1011114 8.53 / 8.49 -> unchanged.
# Session 9 run 4 (benchmarks/results/session9/run4/fp8xa, probe_fp8_preq.py, same method; us, X = 1
# "x ahead" code vs the entry before it, pre-quantized pairs with the quantizer trigger early): each
# warp loading its next block's x before multiplying the current one is faster everywhere on the MLA
# shapes:
#   2112x7168 M = 1 / 4 / 8 10011116 6.33 / 6.41 / 6.51 vs 11116 6.89 / 7.14 / 7.20;
#             M = 9 / 12 / 16 11011114 7.71 / 7.80 / 8.19 vs 1011114 8.64 / 8.79 / 9.54
#             (11011116 at M = 16: 8.64; GEMV alone 7.00 vs 7.77)
#   1536x7168 M = 4 / 8 10011116 5.88 / 5.94 vs 11116 6.53 / 6.59 (M = 1 not measured);
#             M = 16 11011116 7.40 (trigger early) vs the entry before, 1011116 with trigger late, 8.40
#   576x7168  M = 1 / 4 10041108 4.95 / 4.99 vs 41108 5.17 / 5.26; M = 16 11041108 6.39 vs 1041108 6.45
# On 24576x1536 / 7168x16384 at M = 16 the best X codes (11011104) took 16.96 / 38.30 us against
# Triton's 14.32 / 37.12: those shapes stayed on Triton (7168x16384: the TMA ring since session 28).
# Session 25 runs 5-6 (benchmarks/results/session25, same method, quantizer early) tried a cluster
# split (the S split CTAs of a tile group in one cluster, summed through distributed shared memory)
# and x ahead at R = 2: 2112x7168 M = 16 whole path 9.13 (cluster, S = 2) vs 11011114 8.48; 576x7168
# M = 16 6.54 vs 11041108 6.52, M = 9 6.09 vs 6.40. No win on a target shape: removed again.
# Session 29 run 1 (benchmarks/results/session29/run1, same method, 5711aa2): x quantized once per
# thread-block cluster into shared memory (each of C CTAs quantizes 1/C of the k-blocks and stores the codes
# into every CTA of the cluster; then the register kernel's loop on shared x; one launch, no quantizer).
# 2112x7168 M = 16: C = 2 9.69-10.53 (L2 prefetch of the weight rows 10.20-10.50), C = 1 11.96, C = 4 / 8
# 15.8-19.2 vs the quantizer + 11011114 8.17; M = 8: C = 2 7.59 vs 10011116 6.52. Each cluster still reads
# all of x in bf16 (66 x 229 KB from L2 at M = 16) before its first MMA: removed.
# Session 29 run 3 (benchmarks/results/session29/run3, same method, 03b251e): K splits in the TMA ring
# (taller row tiles over part of K, partial tiles summed through the workspace, so x's codes cross L2 once
# per 32 / 64 rows instead of once per 16): 2112x7168 M = 16 alone 9.32 (32 rows, 2 splits) / 10.60 (64
# rows, 4 splits) vs 11011114 7.00; after the quantizer 11.21 / 13.60 vs 8.25; M = 1 8.73 / 10.01 vs the
# in-kernel 10011116 6.34. Slower at M = 1 too, where x's traffic is nil: four consumer warps per SM, not
# L2, bound these CTAs. Removed.
# Session 29 run 6 (benchmarks/results/session29/run6, same method, 347fdb2): the quantizer writing
# column-major x scales for the register kernel (the tokens of a k-block adjacent): 2112x7168 GEMV alone
# M = 16 / 12 / 9 7.30 / 6.55 / 6.29 vs row-major 7.02 / 6.42 / 6.30, after the quantizer 8.46 / 8.00 / 7.77
# vs 8.13 / 7.89 / 7.82: row-major kept. Run 5: the quantizer's rows per program 2 as 1 (8.17 vs 8.20), 4
# and 16 (eight-warp programs, which leave no room for the GEMV's CTAs beside them) 11.3-12.0.
# Session 46 (benchmarks/results/session46): the pair on the CUDA quantizer with trigger "first" and both launches
# at FP8_PAIR_CARVEOUT (a common L1 / shared-memory split, see there). Run 4, probe_fp8_preq.py (same method):
# 2112x7168 M = 16 7.96-7.98 (carveout 10 / 14) vs the Triton pair 8.19-8.20, M = 9 7.51-7.53 vs 7.86-7.88;
# bench_linear (two passes each, alternated): M = 16 8.04 / 8.05 vs 8.27 / 8.27, M = 9 7.51 / 7.52 vs 7.89 / 7.90.
# Also faster there, not adopted: 1536x7168 / 576x7168 at M = 16 on the CUDA quantizer "first", 7.17 / 5.87 vs
# 7.64 / 6.45 (with or without the carveout); they are the two separate layers the merged 2112-row layer is
# measured against, and the 2112x7168 row alone is what this change was measured for.
# Session 47 (benchmarks/results/session47, same probe, 2112x7168): run 1, every k-block of a warp's weights copied
# into shared memory by cp.async before the PDL wait (no weight registers; notes/s47_staged_weights.patch): alone M = 16
# 7.56-7.87 vs 7.16, pair 8.83 (carveout 60 %) vs 7.93, M = 1 in-kernel 8.03 vs 6.34. Run 3, CTA tg visiting its warps'
# blocks from (tg * r) % 4 on so the CTAs do not all read the same x lines at once: M = 16 no gain (8.52-8.60 vs
# 8.48-8.63), M = 1 / 8 6.38 / 6.72 vs 6.34 / 6.58. Both removed; the padded code rows of FP8_PAIR_CODE_ROW_PAD won.
FP8_CUDA_CONFIG: "int | dict" = {
    (2112, 7168): ((8, 10011116), (16, 11011114, "first", "cuda")),
    (1536, 7168): ((8, 10011116), (16, 11011116, "early")),
    (576, 7168): ((8, 10041108), (16, 11041108, "early")),
    (7168, 16384): ((16, 101042304, "early"),),
    None: 0,
}
_CUDA_PREQ = 1000000  # the Q digit of a config code
# The T digit: T = 1 runs the TMA ring kernel (csrc/fp8_tma.cuh; sm_90, pre-quantized x, shape key in
# the S / R / PF / W digits, X = 1 its PDL trigger at the start; csrc/fp8_gemv_launch.h). Codes measured
# in session 28 (runs 2-3, table above): 101042304 = 2 row tiles, 4 k-blocks per stage, 3 stages, 4
# consumer warps.
# PDL trigger of the quantizer a Q = 1 code launches first when neither the call nor the
# FP8_CUDA_CONFIG entry names one ("early" / "late"; QLINEAR_PDL=0 still turns PDL off). H200,
# session 8 run 1 (benchmarks/results/session8/run1, probe_fp8_preq.py, M = 16, cold weights, us,
# quantizer late / early + the GEMV with PDL): 2112x7168 W = 16 (1011116) 13.13 / 12.69, W = 14
# (1011114) 12.96 / 9.27, W = 12 (1011112) 13.47 / 9.75; 1536x7168 1011116 8.53 / 9.04, 1011114
# 8.56 / 8.54. With an early trigger the quantizer's CTAs start while the previous GEMV still runs,
# which needs registers left on the SMs: 16 warps of 120-127 registers hold all of them.
FP8_CUDA_QUANT_PDL = "late"
# The quantizer a Q = 1 code launches first while a CUDA graph is captured (eager calls: FP8_EAGER_QUANT_CUDA):
# "triton" (qlinear.kernels.fp8_triton, every measurement above)
# or "cuda" (csrc/group_quant.cuh, the same codes and scales; launched with PDL under the same rule as the
# Triton launch, qlinear.kernels._pdl.launch_options, and the same trigger names).
# An FP8_CUDA_CONFIG row may name it in a fourth field (after the trigger); this is the default. Session 43 runs
# 1-2 (benchmarks/results/session43, probe_fp8_preq.py, us, CUDA quantizer at 128 threads vs Triton, both before
# the GEMV with PDL): 2112x7168 M = 16 with trigger "first" 8.14 vs 8.24 (run 1, one x) but 8.50-8.52 vs
# 8.45-8.48 (run 2, x rotated and one x), and bench_linear (run 2, two passes) 8.5 vs 8.3; M = 9 7.46 vs 7.89
# (run 1) but 8.02 vs 7.75 (run 2). 1536x7168 / 576x7168 M = 16, first: 7.20 / 5.91 vs 7.54 / 6.48 (run 2 only;
# early in run 1: 7.56 / 6.33-6.43 vs 7.44 / 6.44). Prefetching x into L2 before the wait: no consistent gain.
# No row names "cuda": one run's win on the two small shapes is within the run-to-run spread seen on 2112x7168.
# Session 44 runs 1-2 (benchmarks/results/session44, same probe, x rotated over 8 copies, us): the GEMV waiting for
# per-k-block release flags of the CUDA quantizer (each quantizer CTA stores its codes and scales for one group and 8
# or 16 rows, then st.release a flag; each GEMV warp polls its k-blocks' flags with ld.acquire.gpu instead of
# griddepcontrol.wait on the quantizer grid, and counts them down for the next pair) lost everywhere against the
# Triton pair in the same run: 2112x7168 M = 16 9.76-9.89 (flags one per 128-byte line; 0-400 ns sleep between
# polls; trigger early / late) vs 8.18-8.28, M = 9 9.34-9.71 vs 7.82-7.84; 1536x7168 / 576x7168 M = 16 8.13 / 6.79
# vs 7.75 / 6.38. All flags on four lines: 14.79 at M = 16. Not compiled (notes/s44_flags.patch).
FP8_CUDA_QUANTIZER = "triton"
# The preferred shared-memory carveout (percent of an SM's most shared memory; -1: none) that both launches of a Q = 1
# decode pair take when its quantizer is the CUDA one: an SM runs the CTAs of two grids side by side only under one
# split of its memory into L1 and shared memory, and without a common carveout the driver configures the quantizer
# (no shared memory) and the GEMV (14 KB) differently, which costs the pair PDL's overlap. Session 46 run 3
# (benchmarks/results/session46/run3, probe_fp8_preq.py, 2112x7168, cold weights, x rotated, us, CUDA quantizer
# trigger first / early + 11011114; the carveout set on both kernels; two rounds): M = 16 none 8.48 / 8.79-8.80,
# 10 % 8.10-8.12 / 8.25-8.31, 0 % 8.48 / 8.80, 100 % 10.86 / 10.79 (the GEMV alone 9.14 against 7.17: L1 shrinks);
# M = 9 none 7.82-7.87 / 8.23-8.28, 10 % 7.49 / 7.91-7.92. The committed Triton pair in the same processes: 8.24-8.27
# (M = 16), 7.73-7.74 (M = 9); a carveout set on the Triton quantizer's kernel as well made it 11.2-11.5.
FP8_PAIR_CARVEOUT = 10
# The CUDA quantizer's threads per CTA there, and whether it asks L2 for x before its PDL wait.
FP8_CUDA_QUANT_THREADS = 128
FP8_CUDA_QUANT_PREFETCH = False
# Bytes of padding after each row of the codes a Q = 1 pair's CUDA quantizer writes for the GEMV (a multiple of 16;
# the GEMV reads rows at any 16-byte stride). Every CTA of the GEMV reads all of x's codes, so where their lines
# land matters: identical 2112x7168 M = 16 calls captured into 8 graphs in one process took 7.91-8.20 us, each graph
# index the same time in every process on a machine and the same graphs slowest on every machine (session 47 runs
# 2-7, benchmarks/results/session47, probe_fp8_graph_spread.py: the codes, scales and output are the only buffers
# that differ between the graphs).
# Unpadded rows of 7168 codes are 56 lines of 128 bytes apart. Mean of the 8 graphs, us, pad 0 / 128 / 256 / 384 /
# 896 / 1920 bytes: run 4 8.01 / 7.93 / 7.94 / 7.92 / 7.89 / -, run 5 8.02 / - / - / - / 7.91 / 8.21, run 7 (a fresh
# machine start) 8.00 / 7.90 at 0 / 896; run 3 (a slower machine) 8.56 / 8.44 at 0 / 128. bench_linear (the layer call,
# one graph) M = 16 at 896 / 0: 7.72 / 7.73 / 7.72 / 7.74 against 8.02 / 8.02 / 8.03 / 8.03 (runs 5-6, one machine,
# alternated), 7.74 against 8.03 (run 7); M = 9 7.43 against 7.51. Which padding helps follows the buffers' placement
# (1920 lost), which these runs did not explain: 896 is the pad that won in every run that measured it.
FP8_PAIR_CODE_ROW_PAD = 896
# per_token_group_quant_fp8's automatic choice on CUDA tensors, and the quantizer of the scaled_mm path: the
# CUDA quantizer where it applies (True), else Triton; launched with FP8_QUANT_CUDA_THREADS threads per CTA and
# PDL under the Triton launches' rule. H200, session 43 runs 1-2 (benchmarks/results/session43: probe_group_quant.py,
# group 128, bf16 x rotated past L2, alternated graph replays, us; Triton / CUDA at 128 / 256 / 512 threads):
#   K = 7168  M = 128: 2.45 / 2.16 / 2.06 / 2.08   M = 1024: 9.18 / 10.13 / 8.10 / 8.27
#             M = 16384: 118.1 / 140.2 / 104.8 / 107.7 (3.01 / 2.54 / 3.40 / 3.31 TB/s of x, codes and scales)
#   K = 1536  M = 1024: 3.60 / 3.18 / 3.05   M = 4096: 9.71 / 8.89 / 7.10   M = 16384: 34.1 / 31.2 / 23.9 (run 1)
#   M <= 16 (K = 7168, both with PDL): Triton 0.99-1.04, the automatic CUDA launch 1.02-1.10; without PDL 1.5-1.6.
# Host time of one eager call (run 1, the device's CPU): Triton 47-52 us, CUDA 22-23 us (32 once).
FP8_QUANT_CUDA = True
FP8_QUANT_CUDA_THREADS = 256
# Eager calls (no CUDA-graph capture on the stream) of the paths that launch a quantizer before their GEMM (the
# Q = 1 decode pairs, the Triton GEMM) take the CUDA quantizer where it applies, whatever FP8_CUDA_QUANTIZER says:
# an eager call is host-bound (the GEMM takes 5-25 us of GPU time, the call 100-250 us of CPU time), and the CUDA
# launch costs half the Triton one's host time (22-23 against 47-52 us, session 43 run 1). Captured calls keep the
# quantizer the tables were measured with (their GPU time; a graph replay has no host time per kernel). Both write
# the same codes and scales, so the outputs are equal bit for bit. Session 44 run 3 (benchmarks/bench_host.py,
# 2112x7168 FP8 block layer, two passes, multiples of F.linear's host time in the same pass; the device's CPU
# read F.linear at 17-27 us): M = 16 (the decode pair) 5.0-5.4x on vs 6.5-7.3x off; M = 48 (the Triton GEMM)
# 7.9-8.5x vs 8.2-8.8x, within the spread of the passes.
FP8_EAGER_QUANT_CUDA = True

# Workspaces of the split-K launches: kFp8GemvCounters (4096) int32 arrival counters, zeroed once
# here and reset by the kernel, then fp32 partial tiles. One per (device, stream): two split-K
# launches running at the same time on two streams would otherwise share counters and partials
# and corrupt each other's results. Allocated on a stream's first eager call, never inside a
# graph capture (the graph's private pool would own it): a capture on a stream without its own
# workspace uses the device's capture workspace (allocated with the first eager workspace of that
# device), so graphs captured on such streams must not be replayed concurrently with one another;
# warm up on the capture stream to give its graph a workspace of its own.
_CUDA_TMA = 100000000

_CUDA_WS_COUNTERS = 4096
_CUDA_WS_WORDS = _CUDA_WS_COUNTERS + (1 << 21)
_cuda_ws: dict = {}  # (device index, stream id or "capture") -> int32 workspace


def _by_shape(table, N: int, K: int):
    if isinstance(table, dict):
        return table.get((N, K), table.get(None, 0))
    return table


def _cuda_max_m(N: int, K: int) -> int:
    return int(_by_shape(FP8_CUDA_MAX_M, N, K) or 0)


def _cuda_row(M: int, N: int, K: int) -> tuple[int, Optional[str], str]:
    """(code, quantizer trigger or None, quantizer) of the :data:`FP8_CUDA_CONFIG` entry for M x N x K; the
    quantizer ("triton" / "cuda") is the row's fourth field, else :data:`FP8_CUDA_QUANTIZER`."""
    entry = _by_shape(FP8_CUDA_CONFIG, N, K)
    if isinstance(entry, (tuple, list)):
        for row in entry:
            if M <= row[0]:
                return (int(row[1]), row[2] if len(row) > 2 else None,
                        row[3] if len(row) > 3 else FP8_CUDA_QUANTIZER)
        return 0, None, FP8_CUDA_QUANTIZER
    return int(entry or 0), None, FP8_CUDA_QUANTIZER


def _cuda_entry(M: int, N: int, K: int) -> tuple[int, Optional[str]]:
    """(code, quantizer trigger or None) of the :data:`FP8_CUDA_CONFIG` entry for M x N x K."""
    return _cuda_row(M, N, K)[:2]


def _cuda_config(M: int, N: int, K: int) -> int:
    return _cuda_row(M, N, K)[0]


def _cuda_quantizer(M: int, N: int, K: int) -> str:
    """The quantizer of the :data:`FP8_CUDA_CONFIG` entry for M x N x K (see :func:`_cuda_row`)."""
    return _cuda_row(M, N, K)[2]


def _cuda_tma_ok(code: int, x: torch.Tensor, weight_scale_inv: Optional[torch.Tensor],
                 check_pointers: bool = True) -> bool:
    """Whether a T = 1 code's TMA ring kernel takes these operands (True for any other code): sm_90, K a
    multiple of 512 (the quantizer's scale rows, K / 128 floats, must be 16-byte multiples for the tensor
    map) and weight scales whose rows are contiguous 16-byte multiples at a 16-byte aligned address
    (None: not checked here; the launcher refuses them). ``check_pointers`` False skips the address
    test, as :func:`_cuda_gemv_ok`'s does while torch.compile traces with fake tensors (the launch
    checks again)."""
    if (code // _CUDA_TMA) % 10 != 1:
        return True
    cap = cuda_capability(x.device.index or 0)
    if cap is None or cap[0] != 9 or (x.shape[-1] // 128) % 4:
        return False
    s = weight_scale_inv
    return s is None or (s.dim() == 2 and s.stride(1) == 1 and (s.shape[0] == 1 or s.stride(0) % 4 == 0)
                         and (not check_pointers or s.data_ptr() % 16 == 0))


def _cuda_rows_ok(x2: torch.Tensor, weight: torch.Tensor, block_size, check_pointers: bool = True) -> bool:
    """The decode kernels' conditions on a 2-D x [M, K] of floats or e4m3 codes: CUDA, 1 <= M <= 16, K % 128
    == 0, block (128, 128), sm_89+, 16-byte aligned x / weight rows and pointers."""
    if x2.device.type != "cuda" or x2.dim() != 2 or tuple(block_size) != (128, 128):
        return False
    M, K = x2.shape
    if not 1 <= M <= 16 or K % 128 or weight.stride(0) % 16 or (M > 1 and x2.stride(0) * x2.element_size() % 16):
        return False
    cap = cuda_capability(x2.device.index or 0)
    if cap is None or cap < (8, 9):
        return False
    return not check_pointers or (x2.data_ptr() % 16 == 0 and weight.data_ptr() % 16 == 0)


def _cuda_gemv_ok(x: torch.Tensor, weight: torch.Tensor, block_size, check_pointers: bool = True) -> bool:
    """Whether the "cuda" kernel takes these operands: fp16 / bf16 x [M <= 16, K] (2-D view) and
    :func:`_cuda_rows_ok`'s conditions."""
    if x.device.type != "cuda" or x.dtype not in (torch.float16, torch.bfloat16):
        return False
    if not 1 <= x.numel() // max(x.shape[-1], 1) <= 16:
        return False  # before flattening: a large x is never this kernel's
    return _cuda_rows_ok(_flat(x) if x.dim() != 2 else x, weight, block_size, check_pointers)


def _cuda_ops():
    """``torch.ops.qlinear_C`` or None (a load failure is warned about once and remembered)."""
    # Function-local import (the one allowed kind): keeps the extension loader off `import qlinear.ops`.
    from qlinear.kernels import cuda_ext

    return cuda_ext.ops_or_none("fp8_block_linear uses Triton", stacklevel=4)


def _quant_cuda_ext() -> bool:
    from qlinear.kernels import cuda_ext

    return cuda_ext.ops_or_none("per_token_group_quant_fp8 uses Triton", stacklevel=4) is not None


def _cuda_ext_failed() -> bool:
    from qlinear.kernels import cuda_ext

    return cuda_ext.failed()


def _cuda_workspace(device: torch.device) -> Optional[torch.Tensor]:
    """The split-K workspace of the current stream of ``device`` (see ``_cuda_ws``), or None during a
    graph capture when neither that stream nor the device has one yet."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(index).cuda_stream
    ws = _cuda_ws.get((index, stream))
    if ws is not None:
        return ws
    if torch.cuda.is_current_stream_capturing():
        return _cuda_ws.get((index, "capture"))
    ws = torch.zeros(_CUDA_WS_WORDS, dtype=torch.int32, device=device)
    _cuda_ws[(index, stream)] = ws
    if (index, "capture") not in _cuda_ws:
        _cuda_ws[(index, "capture")] = torch.zeros(_CUDA_WS_WORDS, dtype=torch.int32, device=device)
    return ws


def fp8_block_gemv_cuda(
    x: torch.Tensor,
    weight: torch.Tensor,
    weight_scale_inv: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    config: Optional[int] = None,
    pdl: Optional[bool] = None,
    quant_pdl: Optional[str] = None,
) -> Optional[torch.Tensor]:
    """The "cuda" backend on a 2-D ``x`` [M <= 16, K]: ``[M, N]`` in x's dtype, or None where it
    does not apply (:func:`_cuda_gemv_ok`, extension unavailable, config not supported, workspace not
    yet allocated during a graph capture). ``config``: launch code (see :data:`FP8_CUDA_CONFIG`;
    None = that table; Q = 1 quantizes x with :func:`per_token_group_quant_fp8` first and launches
    the GEMM on the codes); ``pdl`` None: on for M <= ``qlinear.kernels._pdl.PDL_MAX_M`` on sm_90+;
    ``quant_pdl``: that quantizer's PDL trigger, "first" / "early" / "late" (``qlinear.kernels._pdl``;
    None: the table entry's, else :data:`FP8_CUDA_QUANT_PDL`).

    Split-K launches use a workspace per (device, stream) (``_cuda_ws``).
    """
    if x.dim() != 2 or not _cuda_gemv_ok(x, weight, (128, 128)):
        return None
    ops = _cuda_ops()
    if ops is None:
        return None
    ws = _cuda_workspace(x.device)
    if ws is None:
        return None
    M, K = x.shape
    N = weight.shape[0]
    code, table_trigger, quantizer = (_cuda_row(M, N, K) if config is None
                                      else (int(config), None, FP8_CUDA_QUANTIZER))
    if not _cuda_tma_ok(code, x, weight_scale_inv):
        return None  # before quantizing: the caller's fallback quantizes for itself
    if pdl is None:
        from qlinear.kernels import _pdl  # function-local: imports triton

        pdl = M <= _pdl.PDL_MAX_M and _pdl.pdl_enabled(x.device)
    if (code // _CUDA_PREQ) % 10 == 1:
        trigger = quant_pdl or table_trigger or FP8_CUDA_QUANT_PDL
        if quantizer != "cuda" and _eager_cuda_quant(x):
            quantizer = "cuda"
        carveout = -1
        if quantizer == "cuda" and _cuda_quant_ok(x, 128):
            from qlinear.kernels import _pdl  # function-local: imports triton

            opts = _pdl.launch_options(x.device, M, trigger=trigger)
            carveout = FP8_PAIR_CARVEOUT
            q, s = quant_fp8_cuda(x, 128, pdl=opts["USE_PDL"], trigger=trigger, threads=FP8_CUDA_QUANT_THREADS,
                                  prefetch=FP8_CUDA_QUANT_PREFETCH, carveout=carveout, row_pad=FP8_PAIR_CODE_ROW_PAD)
        else:
            q, s = _kernels().per_token_group_quant_fp8(x, 128, scale_eps=_ref.FP8_SCALE_EPS, pdl_trigger=trigger)
        if ops.fp8_block_gemv_supported(q, weight, weight_scale_inv, ws, code, s) != 0:
            return None
        return ops.fp8_block_gemv_preq(q, s, weight, weight_scale_inv, bias, ws, x.dtype, code, bool(pdl), carveout)
    if ops.fp8_block_gemv_supported(x, weight, weight_scale_inv, ws, code) != 0:
        return None
    return ops.fp8_block_gemv(x, weight, weight_scale_inv, bias, ws, code, bool(pdl), _ref.FP8_SCALE_EPS)


def _scaled_mm_cuda_ok() -> bool:
    version = torch.version.cuda
    if not version:
        return False
    major, minor = (int(v) for v in version.split(".")[:2])
    return (major, minor) >= (12, 9)


def _scaled_mm_block_ok(x: torch.Tensor, weight: torch.Tensor, block_size, weight_scale_inv) -> bool:
    """Whether the cuBLAS blockwise recipe accepts these operands (see the module docstring)."""
    if x.device.type != "cuda" or tuple(block_size) != (128, 128):
        return False
    cap = cuda_capability(x.device.index or 0)
    if cap is None or cap[0] != 9 or not _scaled_mm_cuda_ok():
        return False
    N, K = weight.shape
    if N % 16 or K % 16 or cdiv(K, 128) % 4:
        return False
    return weight_scale_inv is None or weight_scale_inv.is_contiguous()


def fp8_block_backend(
    x: torch.Tensor,
    weight: torch.Tensor,
    block_size: tuple[int, int] = (128, 128),
    weight_scale_inv: Optional[torch.Tensor] = None,
) -> str:
    """Backend that ``fp8_block_linear(x, weight, ...)`` picks when ``backend`` is None:
    ``QLINEAR_FP8_BLOCK_BACKEND`` if set, else "reference" off CUDA, else "cuda" for M <=
    :data:`FP8_CUDA_MAX_M` where that kernel applies and the extension has not failed to load, else
    the dispatch table (:data:`FP8_BLOCK_DISPATCH`) where cuBLAS blockwise applies (Hopper, CUDA >=
    12.9, shapes above), else "triton"."""
    env = env_backend("QLINEAR_FP8_BLOCK_BACKEND", _BLOCK_BACKENDS)
    if env is not None:
        return env
    if x.device.type != "cuda":
        return "reference"
    N, K = weight.shape
    M = x.numel() // max(K, 1)
    check_pointers = not torch.compiler.is_compiling()
    if (not _cuda_ext_failed() and M <= _cuda_max_m(N, K)
            and _cuda_gemv_ok(x, weight, block_size, check_pointers=check_pointers)
            and _cuda_tma_ok(_cuda_config(M, N, K), x, weight_scale_inv, check_pointers=check_pointers)):
        return "cuda"
    if not _scaled_mm_block_ok(x, weight, block_size, weight_scale_inv):
        return "triton"
    return _table_backend(M, N, K)


def _table_backend(M: int, N: int, K: int) -> str:
    """The :data:`FP8_BLOCK_DISPATCH` entry for an M x N x K GEMM."""
    rules = FP8_BLOCK_DISPATCH.get((N, K), FP8_BLOCK_DISPATCH[None])
    for rule in rules:
        if M <= rule.max_m:
            return rule.backend
    return rules[-1].backend


def _resolve(backend: Optional[str], var: str, choices: tuple, device: torch.device, gpu_default: str) -> str:
    if backend is None:
        backend = env_backend(var, choices)
    if backend is None:
        backend = gpu_default if device.type == "cuda" else "reference"
    if backend not in choices:
        raise ValueError(f"backend: expected one of {choices} or None, got {backend!r}")
    return backend


# --------------------------------------------------------------------------------------------
# argument checks (shared by the public wrappers)
# --------------------------------------------------------------------------------------------


def _check_act(name: str, x: torch.Tensor) -> None:
    if x.dtype not in _ACT_DTYPES:
        raise TypeError(f"{name}: expected one of {_ACT_DTYPES}, got {describe(x)}")
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"{name}: expected [..., K] with K > 0, got {describe(x)}")
    if x.stride(-1) != 1:
        raise ValueError(f"{name}: expected stride(-1) == 1, got {describe(x)}")


# The auto dispatch's name for Triton launched with PDL and an early trigger (rms_norm_quant_fp8; never
# taken from a caller).
_TRITON_EARLY = "triton-early"


def _check_group(group_size: int, backend: str, K: int) -> None:
    if group_size <= 0:
        raise ValueError(f"group_size: expected a positive integer, got {group_size}")
    if backend in ("triton", _TRITON_EARLY) and group_size < K and (group_size < 16 or group_size & (group_size - 1)):
        raise ValueError(f"group_size: the Triton kernels need a power of two >= 16, got {group_size}")


def _flat(x: torch.Tensor) -> torch.Tensor:
    # A view whenever the leading dimensions allow it (2-D input with any row stride: always).
    return x if x.dim() == 2 else x.reshape(-1, x.shape[-1])


def _check_fp8_weight(weight: torch.Tensor, K: int) -> None:
    if weight.dtype != FP8_E4M3:
        raise TypeError(f"weight: expected dtype {FP8_E4M3}, got {describe(weight)}")
    if weight.dim() != 2 or weight.shape[1] != K:
        raise ValueError(f"weight: expected [N, {K}], got {describe(weight)}")
    if weight.stride(1) != 1:
        raise ValueError(f"weight: expected stride(1) == 1, got {describe(weight)}")


def _check_block_weight(weight: torch.Tensor, weight_scale_inv: torch.Tensor, K: int, block_size) -> tuple[int, int, int]:
    """(N, bn, bk) of a block-scaled e4m3 weight [N, K] with fp32 scales [cdiv(N, bn), cdiv(K, bk)]."""
    _check_fp8_weight(weight, K)
    N = weight.shape[0]
    if len(block_size) != 2 or min(block_size) <= 0:
        raise ValueError(f"block_size: expected two positive ints (bn, bk), got {block_size}")
    bn, bk = (int(b) for b in block_size)
    expected = (cdiv(N, bn), cdiv(K, bk))
    if weight_scale_inv.dtype != torch.float32 or tuple(weight_scale_inv.shape) != expected:
        raise ValueError(f"weight_scale_inv: expected float32 {expected}, got {describe(weight_scale_inv)}")
    return N, bn, bk


def _check_block_backend(be: str, block_size, bk: int, name: str, x: torch.Tensor, needs_cuda: tuple) -> None:
    """A block op's backend: known, on CUDA tensors where it is one of ``needs_cuda`` (``x`` named
    ``name``), and a power-of-two ``bk`` >= 16 for the Triton kernel (which "cuda" may fall back to)."""
    if be not in _BLOCK_BACKENDS:
        raise ValueError(f"backend: expected one of {_BLOCK_BACKENDS} or None, got {be!r}")
    if be in needs_cuda and not x.is_cuda:
        raise ValueError(f"backend {be!r} needs CUDA tensors, got {name} on {x.device}; use backend='reference'")
    if be in ("triton", "cuda") and (bk < 16 or bk & (bk - 1)):
        raise ValueError(f"block_size: the Triton kernel needs bk a power of two >= 16, got {block_size}")


def _check_bias(bias: Optional[torch.Tensor], N: int, dtype: torch.dtype) -> None:
    if bias is None:
        return
    if bias.shape != (N,) or bias.dtype != dtype:
        raise ValueError(f"bias: expected shape ({N},) dtype {dtype}, got {describe(bias)}")


# --------------------------------------------------------------------------------------------
# custom ops
# --------------------------------------------------------------------------------------------


def _as_layout(s: torch.Tensor, column_major: bool) -> torch.Tensor:
    out = empty_group_scales(s.shape[0], s.shape[1], column_major, s.device)
    out.copy_(s)
    return out


# PDL trigger codes of the CUDA quantizer (csrc/group_quant.cuh gq::Trigger), by the names the Triton
# kernels use (qlinear.kernels._pdl.PDL_TRIGGERS) plus "exit" (none before the grid completes).
_GQ_TRIGGERS = {"late": 0, "early": 1, "first": 2, "exit": 3}


# The auto dispatch's name for the CUDA quantizer where it applies, else Triton (decided inside the op, on
# the real tensor's address; never taken from a caller).
_CUDA_AUTO = "cuda-auto"


def _cuda_quant_ok(x: torch.Tensor, group_size: int, check_pointers: bool = True) -> bool:
    """Whether the CUDA quantizer (``csrc/group_quant_launch.cu``) takes a 2-D ``x`` with this group:
    the launcher's own check (group_quant_fp8_supported), read from the tensor here so the auto
    dispatch costs no extra op call; the launcher still refuses, with its reason, what this lets by.
    ``check_pointers`` False skips x's address (fake tensors while torch.compile traces)."""
    eb = x.element_size()
    gb = group_size * eb
    M, K = x.shape
    return (x.is_cuda and 16 <= gb <= 512 and gb & (gb - 1) == 0 and (M <= 1 or x.stride(0) * eb % 16 == 0)
            and K * eb % 16 == 0 and (not check_pointers or x.data_ptr() % 16 == 0))


def quant_fp8_cuda(
    x: torch.Tensor,
    group_size: int = 128,
    *,
    column_major_scales: bool = False,
    pad_rows_to: int = 1,
    pdl: bool = False,
    trigger: str = "late",
    threads: int = 0,
    prefetch: bool = False,
    carveout: int = -1,
    row_pad: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`per_token_group_quant_fp8` of a 2-D ``x`` on the CUDA extension's quantizer
    (``csrc/group_quant.cuh``), with the launch knobs the dispatch tables set: ``pad_rows_to``
    (``q`` / ``scales`` get ``round_up(M, pad_rows_to)`` rows, the extra ones code 0 and scale
    1e-10 / 448), ``pdl`` (launch with programmatic stream serialization) and its ``trigger``
    ("late" / "early" / "first" / "exit", see ``csrc/group_quant.cuh``), ``threads`` per CTA (0 = the
    launcher's default), ``prefetch`` (x's lines requested into L2 before the PDL wait), ``carveout`` (the
    launch's preferred shared-memory carveout in percent, -1 none: see :data:`FP8_PAIR_CARVEOUT`) and ``row_pad``
    (bytes left after each row of ``q``, a multiple of 16: ``q`` is then a [M_pad, K] view with row stride
    K + row_pad, see :data:`FP8_PAIR_CODE_ROW_PAD`). Raises where the case is not supported (see
    :func:`_cuda_quant_ok`) or the extension does not load."""
    from qlinear.kernels import cuda_ext  # function-local: keeps the extension loader off `import qlinear.ops`

    if trigger not in _GQ_TRIGGERS:
        raise ValueError(f"trigger: expected one of {tuple(_GQ_TRIGGERS)}, got {trigger!r}")
    M, K = x.shape
    M_pad = cdiv(M, pad_rows_to) * pad_rows_to
    if not (isinstance(row_pad, int) and row_pad >= 0 and row_pad % 16 == 0):
        raise ValueError(f"row_pad: expected a non-negative multiple of 16 bytes, got {row_pad!r}")
    q = torch.empty((M_pad, K + row_pad), dtype=FP8_E4M3, device=x.device)[:, :K]
    s = empty_group_scales(M_pad, cdiv(K, group_size), column_major_scales, x.device)
    cuda_ext.load().group_quant_fp8(q, s, x, group_size, _ref.FP8_SCALE_EPS, pdl, _GQ_TRIGGERS[trigger], threads,
                                    prefetch, carveout)
    return q, s


def _eager_cuda_quant(x: torch.Tensor) -> bool:
    """Whether a quantize-then-GEMM path takes the CUDA quantizer for a CUDA ``x`` because this call is eager
    (:data:`FP8_EAGER_QUANT_CUDA`; not while a CUDA graph is being captured on the current stream)."""
    return FP8_EAGER_QUANT_CUDA and x.is_cuda and not torch.cuda.is_current_stream_capturing()


def _quant_cuda_colmajor(x: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The Triton GEMM's activation quantizer on the CUDA kernel (column-major scales), for eager calls."""
    return _quant_cuda_auto(x, group_size, True)


def _quant_cuda_auto(x: torch.Tensor, group_size: int, column_major_scales: bool,
                     pad_rows_to: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """The CUDA quantizer where the automatic choice takes it (the public op, the scaled_mm path's activations):
    PDL and its trigger as a Triton launch of the same rows would have them (qlinear.kernels._pdl.launch_options),
    :data:`FP8_QUANT_CUDA_THREADS` threads per CTA."""
    from qlinear.kernels import _pdl  # function-local: imports triton

    opts = _pdl.launch_options(x.device, x.shape[0])
    trigger = _pdl.PDL_TRIGGER_NAMES[opts["PDL_EARLY"]]
    return quant_fp8_cuda(x, group_size, column_major_scales=column_major_scales, pad_rows_to=pad_rows_to,
                          pdl=opts["USE_PDL"], trigger=trigger, threads=FP8_QUANT_CUDA_THREADS)


@define_op("qlinear::per_token_group_quant_fp8", mutates_args=())
def _quant_op(
    x: torch.Tensor, group_size: int, column_major_scales: bool, backend: str
) -> tuple[torch.Tensor, torch.Tensor]:
    if backend == "reference":
        q, s = _ref.per_token_group_quant_fp8_ref(x, group_size)
        return q, _as_layout(s, column_major_scales)
    if backend == "cuda" or (backend == _CUDA_AUTO and _cuda_quant_ok(x, group_size)):
        return _quant_cuda_auto(x, group_size, column_major_scales)
    return _kernels().per_token_group_quant_fp8(
        x, group_size, column_major_scales=column_major_scales, scale_eps=_ref.FP8_SCALE_EPS
    )


@_quant_op.register_fake
def _(x, group_size, column_major_scales, backend):
    M, K = x.shape
    q = torch.empty((M, K), dtype=FP8_E4M3, device=x.device)
    return q, empty_group_scales(M, cdiv(K, group_size), column_major_scales, x.device)


def per_token_group_quant_fp8(
    x: torch.Tensor,
    group_size: int = 128,
    *,
    column_major_scales: bool = False,
    backend: Optional[str] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic e4m3 quantization of ``x`` [..., K] per group of ``group_size`` columns of each row.

    ``scale = max(max|x_g|, 1e-10) / 448`` (fp32), ``q = e4m3(clamp(x_g / scale, -448, 448))``; the
    last group of a row may be short. ``x``: bf16 / fp16 / fp32, ``stride(-1) == 1`` (rows may be
    strided). Returns ``q`` e4m3 [..., K] (contiguous) and fp32 ``scales`` [..., cdiv(K, g)]; with
    ``column_major_scales`` (2-D result only) the scales have strides ``(1, M)`` (transpose of a
    contiguous [G, M]), the layout the GEMMs read coalesced. Backends: "cuda" (the CUDA extension's
    quantizer: group_size x element size a power of two from 16 to 512 bytes, x's base and row
    stride and K x element size multiples of 16 bytes), "triton", "reference". None:
    ``QLINEAR_FP8_QUANT_BACKEND``, else "reference" off CUDA, else "cuda" where it applies and the
    extension loads (:data:`FP8_QUANT_CUDA`), else "triton".
    """
    _check_act("x", x)
    explicit = backend is not None or env_backend("QLINEAR_FP8_QUANT_BACKEND", _QUANT_BACKENDS) is not None
    be = _resolve(backend, "QLINEAR_FP8_QUANT_BACKEND", _QUANT_BACKENDS, x.device, "cuda")
    K = x.shape[-1]
    _check_group(group_size, be, K)
    if column_major_scales and x.dim() != 2:
        raise ValueError(f"column_major_scales: needs a 2-D x, got {describe(x)}")
    x2 = _flat(x)
    if be == "cuda":
        if not x.is_cuda:
            raise ValueError(f"backend 'cuda' needs CUDA tensors, got x on {x.device}; use backend='reference'")
        if not explicit:
            # the address is checked inside the op (_CUDA_AUTO): fake tensors have none
            ok = FP8_QUANT_CUDA and _cuda_quant_ok(x2, group_size, check_pointers=False)
            be = _CUDA_AUTO if ok and _quant_cuda_ext() else "triton"
            _check_group(group_size, "triton", K)  # the op may still take Triton
    q, s = _quant_op(x2, group_size, column_major_scales, be)
    if x.dim() != 2:
        q = q.reshape(x.shape)
        s = s.reshape(*x.shape[:-1], s.shape[-1])
    return q, s


def per_token_quant_fp8(x: torch.Tensor, backend: Optional[str] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic per-token e4m3 quantization: one group per row of ``x`` [M, K] (formula of
    :func:`per_token_group_quant_fp8` with ``group_size = K``). Returns ``(q [M, K], scales [M, 1])``."""
    _check_act("x", x)
    if x.dim() != 2:
        raise ValueError(f"x: expected [M, K], got {describe(x)}")
    return per_token_group_quant_fp8(x, x.shape[-1], backend=backend)


@define_op("qlinear::fp8_block_linear", mutates_args=())
def _block_linear_op(
    x: torch.Tensor,
    weight: torch.Tensor,
    weight_scale_inv: torch.Tensor,
    block_n: int,
    block_k: int,
    bias: Optional[torch.Tensor],
    backend: str,
) -> torch.Tensor:
    block = (block_n, block_k)
    if backend == "reference":
        return _ref.fp8_block_linear_ref(x, weight, weight_scale_inv, block, bias)
    if backend == "cuda":
        # falls back to "triton" where the kernel does not apply (see fp8_block_gemv_cuda)
        y = fp8_block_gemv_cuda(x, weight, weight_scale_inv, bias) if block == (128, 128) else None
        if y is not None:
            return y
        backend = "triton"
    k = _kernels()
    M = x.shape[0]
    if backend == "triton":
        # Quantize-then-GEMM, tiles from kernels.fp8_triton.GEMM_CONFIGS (or its heuristic); at
        # M <= SWAP_AB_MAX_M with QLINEAR_FP8_SMALL_M=swapab (or SMALL_M_PATH) one swap-AB launch
        # that quantizes in-kernel (SWAP_AB_CONFIGS): same codes and scales.
        eager = _eager_cuda_quant(x) and _cuda_quant_ok(x, block_k) and _quant_cuda_ext()
        return k.fp8_block_linear_triton(x, weight, weight_scale_inv, block, bias, scale_eps=_ref.FP8_SCALE_EPS,
                                         quantize=_quant_cuda_colmajor if eager else None)
    # scaled_mm: cuBLAS needs M % 4 == 0; the quantizer writes the zero pad rows itself.
    if FP8_QUANT_CUDA and _cuda_quant_ok(x, block_k) and _quant_cuda_ext():
        q, s = _quant_cuda_auto(x, block_k, True, pad_rows_to=4)
    else:
        q, s = k.per_token_group_quant_fp8(
            x, block_k, column_major_scales=True, pad_rows_to=4, scale_eps=_ref.FP8_SCALE_EPS
        )
    return _scaled_mm_blockwise(q, s, weight, weight_scale_inv, x.dtype, bias, M)


def _scaled_mm_blockwise(q, s, weight, weight_scale_inv, out_dtype, bias, m: int):
    """cuBLAS's blockwise FP8 GEMM on codes ``q`` [M', K] and column-major scales ``s``: the first ``m``
    rows of ``q @ W.T`` in ``out_dtype``, plus ``bias``."""
    out = torch._scaled_mm(
        q, weight.t(), scale_a=s, scale_b=weight_scale_inv.t(), out_dtype=out_dtype, use_fast_accum=False
    )
    if out.shape[0] != m:
        out = out[:m]
    if bias is not None:
        # Added outside cuBLAS: its bias epilogue is not documented for the blockwise recipe.
        out = out + bias
    return out


@_block_linear_op.register_fake
def _(x, weight, weight_scale_inv, block_n, block_k, bias, backend):
    return torch.empty((x.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)


def fp8_block_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    weight_scale_inv: torch.Tensor,
    block_size: tuple[int, int] = (128, 128),
    bias: Optional[torch.Tensor] = None,
    *,
    backend: Optional[str] = None,
) -> torch.Tensor:
    """``y = x @ W.T + bias`` with a block-scaled e4m3 weight and dynamic per-token-group FP8
    activations (the DeepSeek-V3 / compressed-tensors FP8_BLOCK recipe).

    ``x`` [..., K] bf16 / fp16 / fp32, ``stride(-1) == 1`` (2-D rows may be strided); ``weight``
    e4m3 [N, K] with ``stride(1) == 1``; ``weight_scale_inv`` fp32 [cdiv(N, bn), cdiv(K, bk)], a
    multiplier: ``W[n, k] = weight[n, k] * weight_scale_inv[n // bn, k // bk]``; ``block_size =
    (bn, bk)``; ``bias`` [N] in ``x.dtype``. ``x`` is quantized per row in groups of ``bk``
    (:func:`per_token_group_quant_fp8`), the GEMM accumulates in fp32. Returns ``x.dtype`` [..., N].
    Backends: "scaled_mm" (cuBLAS blockwise, Hopper), "triton", "cuda" (one-launch decode kernel,
    M <= 16, K % 128 == 0, block (128, 128), fp16 / bf16; elsewhere it runs "triton"), "reference";
    :func:`fp8_block_backend` tells which one None picks.
    """
    _check_act("x", x)
    K = x.shape[-1]
    N, bn, bk = _check_block_weight(weight, weight_scale_inv, K, block_size)
    _check_bias(bias, N, x.dtype)
    be = backend if backend is not None else fp8_block_backend(x, weight, (bn, bk), weight_scale_inv)
    _check_block_backend(be, block_size, bk, "x", x, ("cuda",))
    if be == "scaled_mm":
        if (bn, bk) != (128, 128) or N % 16 or K % 16 or cdiv(K, 128) % 4:
            raise ValueError(
                "backend 'scaled_mm' needs block_size (128, 128), N and K multiples of 16 and "
                f"cdiv(K, 128) % 4 == 0; got block_size={block_size}, weight {describe(weight)}"
            )
        if not weight_scale_inv.is_contiguous():
            raise ValueError(f"weight_scale_inv: backend 'scaled_mm' needs it contiguous, got {describe(weight_scale_inv)}")
    out = _block_linear_op(_flat(x), weight, weight_scale_inv, bn, bk, bias, be)
    return out if x.dim() == 2 else out.reshape(*x.shape[:-1], N)


# --------------------------------------------------------------------------------------------
# block-scaled FP8 linear on activations quantized beforehand
# --------------------------------------------------------------------------------------------


def _flat_view(name: str, t: torch.Tensor) -> torch.Tensor:
    """``t`` as [rows, last] without copying: a ValueError naming ``name`` where the leading dimensions
    cannot be merged into one stride."""
    if t.dim() == 2:
        return t
    try:
        return t.view(-1, t.shape[-1])
    except RuntimeError:
        raise ValueError(f"{name}: its leading dimensions must flatten without a copy, got {describe(t)}") from None


def _cuda_preq_code(M: int, N: int, K: int) -> int:
    """The :data:`FP8_CUDA_CONFIG` code for M x N x K with its Q digit set (x arrives as codes)."""
    code = _cuda_config(M, N, K)
    return code if (code // _CUDA_PREQ) % 10 == 1 else code + _CUDA_PREQ


def _cuda_tma_q_ok(code: int, xq: torch.Tensor, x_scales: torch.Tensor, weight_scale_inv: Optional[torch.Tensor],
                   check_pointers: bool = True) -> bool:
    """:func:`_cuda_tma_ok` for given codes: a T = 1 code's tensor maps also need the x scale rows
    contiguous 16-byte multiples at a 16-byte aligned address (row-major scales; column-major ones go to
    Triton). True for any other code."""
    if not _cuda_tma_ok(code, xq, weight_scale_inv, check_pointers):
        return False
    if (code // _CUDA_TMA) % 10 != 1:
        return True
    M = x_scales.shape[0]
    return (x_scales.stride(1) == 1 and (M == 1 or x_scales.stride(0) % 4 == 0)
            and (not check_pointers or x_scales.data_ptr() % 16 == 0))


def _scaled_mm_q_ok(xq: torch.Tensor, x_scales: torch.Tensor, weight: torch.Tensor, block_size, weight_scale_inv) -> bool:
    """cuBLAS blockwise on given codes: its shape rules (see the module docstring), M % 4 == 0 (no pad
    rows can be added without a copy) and scales already outer-dim-major (strides (1, M))."""
    M = xq.shape[0]
    return (_scaled_mm_block_ok(xq, weight, block_size, weight_scale_inv) and M % 4 == 0
            and (x_scales.stride(0) == 1 and (x_scales.shape[1] == 1 or x_scales.stride(1) == M)))


def fp8_block_quantized_backend(
    xq: torch.Tensor,
    x_scales: torch.Tensor,
    weight: torch.Tensor,
    block_size: tuple[int, int] = (128, 128),
    weight_scale_inv: Optional[torch.Tensor] = None,
) -> str:
    """Backend that ``fp8_block_linear_quantized`` picks when ``backend`` is None:
    ``QLINEAR_FP8_BLOCK_BACKEND`` if set, else "reference" off CUDA, else "cuda" where
    :func:`fp8_block_backend` would take it for the same M x N x K (the decode kernel on the given codes,
    the quantizer launch skipped), else "scaled_mm" where :data:`FP8_BLOCK_DISPATCH` names it and cuBLAS
    takes the codes as they are (M % 4 == 0, column-major scales), else "triton"."""
    env = env_backend("QLINEAR_FP8_BLOCK_BACKEND", _BLOCK_BACKENDS)
    if env is not None:
        return env
    if xq.device.type != "cuda":
        return "reference"
    N, K = weight.shape
    q2, s2 = _flat_view("xq", xq), _flat_view("x_scales", x_scales)
    M = q2.shape[0]
    check_pointers = not torch.compiler.is_compiling()
    if (not _cuda_ext_failed() and M <= _cuda_max_m(N, K) and _cuda_rows_ok(q2, weight, block_size, check_pointers)
            and _cuda_tma_q_ok(_cuda_preq_code(M, N, K), q2, s2, weight_scale_inv, check_pointers)):
        return "cuda"
    if _scaled_mm_q_ok(q2, s2, weight, block_size, weight_scale_inv) and _table_backend(M, N, K) == "scaled_mm":
        return "scaled_mm"
    return "triton"


@define_op("qlinear::fp8_block_linear_quantized", mutates_args=())
def _block_linear_q_op(
    xq: torch.Tensor,
    x_scales: torch.Tensor,
    weight: torch.Tensor,
    weight_scale_inv: torch.Tensor,
    block_n: int,
    block_k: int,
    bias: Optional[torch.Tensor],
    out_dtype: torch.dtype,
    backend: str,
) -> torch.Tensor:
    block = (block_n, block_k)
    if backend == "reference":
        return _ref.fp8_block_gemm_ref(xq, x_scales, weight, weight_scale_inv, block, out_dtype, bias)
    M, N, K = xq.shape[0], weight.shape[0], xq.shape[1]
    if backend == "cuda":
        ops = _cuda_ops() if out_dtype in (torch.float16, torch.bfloat16) else None
        ws = _cuda_workspace(xq.device) if ops is not None else None
        code = _cuda_preq_code(M, N, K)
        if ws is not None and ops.fp8_block_gemv_supported(xq, weight, weight_scale_inv, ws, code, x_scales) == 0:
            from qlinear.kernels import _pdl  # function-local: imports triton

            pdl = M <= _pdl.PDL_MAX_M and _pdl.pdl_enabled(xq.device)
            return ops.fp8_block_gemv_preq(xq, x_scales, weight, weight_scale_inv, bias, ws, out_dtype, code, bool(pdl))
        backend = "triton"  # the kernel does not take these operands: the Triton GEMM does
    if backend == "triton":
        return _kernels().fp8_block_gemm(xq, x_scales, weight, weight_scale_inv, block, out_dtype, bias)
    return _scaled_mm_blockwise(xq, x_scales, weight, weight_scale_inv, out_dtype, bias, M)


@_block_linear_q_op.register_fake
def _(xq, x_scales, weight, weight_scale_inv, block_n, block_k, bias, out_dtype, backend):
    return torch.empty((xq.shape[0], weight.shape[0]), dtype=out_dtype, device=xq.device)


def fp8_block_linear_quantized(
    xq: torch.Tensor,
    x_scales: torch.Tensor,
    weight: torch.Tensor,
    weight_scale_inv: torch.Tensor,
    block_size: tuple[int, int] = (128, 128),
    bias: Optional[torch.Tensor] = None,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    backend: Optional[str] = None,
) -> torch.Tensor:
    """``y = deq(xq) @ W.T + bias`` for activations quantized beforehand, e.g. by
    :func:`rms_norm_quant_fp8` fused into the norm before the layer, or by :func:`per_token_group_quant_fp8`:
    :func:`fp8_block_linear` without its quantization launch.

    ``xq`` e4m3 [..., K] with ``stride(-1) == 1`` (2-D rows may be strided); ``x_scales`` fp32 [...,
    cdiv(K, bk)] per token and group of ``bk`` columns, ``deq(xq)[m, k] = xq[m, k] * x_scales[m, k // bk]``,
    any strides (row-major, or the column-major layout of ``column_major_scales=True``); ``weight``,
    ``weight_scale_inv``, ``block_size = (bn, bk)`` and ``bias`` ([N] in ``out_dtype``) as in
    :func:`fp8_block_linear`. Returns ``out_dtype`` (fp16 / bf16 / fp32) [..., N]. With codes and scales
    from :func:`per_token_group_quant_fp8` the result is :func:`fp8_block_linear`'s on the same backend.

    Backends as :func:`fp8_block_linear`'s; :func:`fp8_block_quantized_backend` tells which one None picks.
    "cuda" falls back to "triton" where its kernel does not take the operands (fp32 output, alignment, a
    TMA-ring code with scale rows its tensor maps cannot describe). "scaled_mm" takes the codes as they
    are, so it needs M % 4 == 0 and column-major scales (strides (1, M)). Nothing is copied: leading
    dimensions that cannot be flattened into a view are an error.
    """
    if not isinstance(xq, torch.Tensor) or xq.dtype != FP8_E4M3:
        raise TypeError(f"xq: expected dtype {FP8_E4M3}, got {describe(xq) if isinstance(xq, torch.Tensor) else type(xq).__name__}")
    if xq.dim() < 1 or xq.shape[-1] == 0 or xq.stride(-1) != 1:
        raise ValueError(f"xq: expected [..., K] with K > 0 and stride(-1) == 1, got {describe(xq)}")
    K = xq.shape[-1]
    N, bn, bk = _check_block_weight(weight, weight_scale_inv, K, block_size)
    expected = (*xq.shape[:-1], cdiv(K, bk))
    if not isinstance(x_scales, torch.Tensor) or x_scales.dtype != torch.float32 or tuple(x_scales.shape) != expected:
        got = describe(x_scales) if isinstance(x_scales, torch.Tensor) else type(x_scales).__name__
        raise ValueError(f"x_scales: expected float32 {expected} (one per token and group of {bk}), got {got}")
    if out_dtype not in _ACT_DTYPES:
        raise TypeError(f"out_dtype: expected one of {_ACT_DTYPES}, got {out_dtype}")
    _check_bias(bias, N, out_dtype)
    for name, t in (("x_scales", x_scales), ("weight", weight), ("weight_scale_inv", weight_scale_inv)):
        if t.device != xq.device:
            raise ValueError(f"{name}: expected on {xq.device} like xq, got {t.device}")
    q2, s2 = _flat_view("xq", xq), _flat_view("x_scales", x_scales)
    be = backend if backend is not None else fp8_block_quantized_backend(q2, s2, weight, (bn, bk), weight_scale_inv)
    _check_block_backend(be, block_size, bk, "xq", xq, ("cuda", "scaled_mm"))
    if be == "scaled_mm" and not _scaled_mm_q_ok(q2, s2, weight, (bn, bk), weight_scale_inv):
        raise ValueError(
            "backend 'scaled_mm' on given codes needs Hopper, CUDA >= 12.9, block_size (128, 128), N and K multiples "
            "of 16, cdiv(K, 128) % 4 == 0, contiguous weight_scale_inv, M % 4 == 0 and column-major x_scales "
            f"(strides (1, M)); got xq {describe(q2)}, x_scales {describe(s2)}, weight {describe(weight)}"
        )
    out = _block_linear_q_op(q2, s2, weight, weight_scale_inv, bn, bk, bias, out_dtype, be)
    return out if xq.dim() == 2 else out.reshape(*xq.shape[:-1], N)


# --------------------------------------------------------------------------------------------
# per-tensor / per-channel FP8 weights
# --------------------------------------------------------------------------------------------


def fp8_scaled_backend(x: torch.Tensor, weight: torch.Tensor) -> str:
    """Backend ``fp8_scaled_linear`` picks when ``backend`` is None: ``QLINEAR_FP8_SCALED_BACKEND``
    if set, else "scaled_mm" on CUDA GPUs with fp8 tensor cores (sm_89+) when N and K are
    multiples of 16, else "reference"."""
    env = env_backend("QLINEAR_FP8_SCALED_BACKEND", _SCALED_BACKENDS)
    if env is not None:
        return env
    if x.device.type != "cuda":
        return "reference"
    cap = cuda_capability(x.device.index or 0)
    N, K = weight.shape
    if cap is None or cap < (8, 9) or N % 16 or K % 16:
        return "reference"
    return "scaled_mm"


@define_op("qlinear::fp8_scaled_linear", mutates_args=())
def _scaled_linear_op(
    x: torch.Tensor,
    weight: torch.Tensor,
    weight_scale: torch.Tensor,
    input_scale: Optional[torch.Tensor],
    bias: Optional[torch.Tensor],
    backend: str,
) -> torch.Tensor:
    if backend == "reference":
        return _ref.fp8_scaled_linear_ref(x, weight, weight_scale, input_scale, bias)
    M = x.shape[0]
    N = weight.shape[0]
    per_tensor_w = weight_scale.numel() == 1
    if input_scale is not None:
        # Static per-tensor activation scale: a few elementwise kernels, no reduction needed.
        q = torch.clamp(x.float() / input_scale.reshape(()), -FP8_E4M3_MAX, FP8_E4M3_MAX).to(FP8_E4M3)
        if per_tensor_w:
            scale_a, scale_b = input_scale.reshape(()), weight_scale.reshape(())
        else:
            scale_a = input_scale.reshape(1, 1).expand(M, 1).contiguous()
            scale_b = weight_scale.reshape(1, N)
    else:
        q, scale_a = _kernels().per_token_group_quant_fp8(x, x.shape[1], scale_eps=_ref.FP8_SCALE_EPS)
        scale_b = weight_scale.reshape(1, 1).expand(1, N).contiguous() if per_tensor_w else weight_scale.reshape(1, N)
    fp32_out = x.dtype == torch.float32
    out = torch._scaled_mm(
        q, weight.t(), scale_a=scale_a, scale_b=scale_b, bias=None if fp32_out else bias, out_dtype=x.dtype
    )
    if fp32_out and bias is not None:
        out = out + bias  # _scaled_mm rejects a bias with fp32 output
    return out


@_scaled_linear_op.register_fake
def _(x, weight, weight_scale, input_scale, bias, backend):
    return torch.empty((x.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)


def fp8_scaled_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    weight_scale: torch.Tensor,
    input_scale: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    *,
    backend: Optional[str] = None,
) -> torch.Tensor:
    """``y = x @ W.T + bias`` with an e4m3 ``weight`` [N, K] (``stride(1) == 1``) scaled per tensor
    (``weight_scale`` fp32, one element) or per output channel (fp32 [N] or [N, 1], contiguous):
    ``W[n, k] = weight[n, k] * weight_scale[n]``.

    Activations: static per-tensor when ``input_scale`` (fp32, one element) is given,
    ``q = e4m3(clamp(x / input_scale))``; otherwise dynamic per token (:func:`per_token_quant_fp8`).
    ``x`` [..., K] bf16 / fp16 / fp32 with ``stride(-1) == 1``; ``bias`` [N] in ``x.dtype``.
    Returns ``x.dtype`` [..., N]. Backends: "scaled_mm" (tensor-wise or row-wise
    ``torch._scaled_mm``), "reference"; :func:`fp8_scaled_backend` tells which one None picks.
    A merged layer whose shards have different per-tensor scales passes them as per-channel
    scales (exact).
    """
    _check_act("x", x)
    K = x.shape[-1]
    _check_fp8_weight(weight, K)
    N = weight.shape[0]
    if weight_scale.dtype != torch.float32 or weight_scale.numel() not in (1, N) or not weight_scale.is_contiguous():
        raise ValueError(f"weight_scale: expected contiguous float32 with 1 or {N} elements, got {describe(weight_scale)}")
    if input_scale is not None and (input_scale.dtype != torch.float32 or input_scale.numel() != 1):
        raise ValueError(f"input_scale: expected one float32 element, got {describe(input_scale)}")
    _check_bias(bias, N, x.dtype)
    be = backend if backend is not None else fp8_scaled_backend(x, weight)
    if be not in _SCALED_BACKENDS:
        raise ValueError(f"backend: expected one of {_SCALED_BACKENDS} or None, got {be!r}")
    out = _scaled_linear_op(_flat(x), weight, weight_scale, input_scale, bias, be)
    return out if x.dim() == 2 else out.reshape(*x.shape[:-1], N)


# --------------------------------------------------------------------------------------------
# fused RMSNorm -> FP8 quantization
# --------------------------------------------------------------------------------------------


# weight dtypes the CUDA kernels read (converted to fp32 in the kernel)
_CUDA_NORM_WEIGHT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


# rms_norm_quant_fp8's auto dispatch on CUDA: Triton for M <= the bound of the first row whose K limit
# holds ((K limit or None, max M)), the CUDA extension above it. H200, session 29 runs 10-11
# (benchmarks/results/session29/run10, run11: probe_norm_quant_decode.py, bf16, no residual, alternated
# graph replays, us, cuda / triton):
#   K = 1536:  M = 1 2.63 / 1.74, 16 2.78 / 1.79, 64 3.02 / 2.03, 256 3.10 / 2.38, 1024 3.48 / 4.17
#   K = 7168:  M = 1 14.99 / 2.81, 16 17.35 / 2.91, 64 17.35 / 2.99, 256 17.79 / 4.37, 1024 18.19 / 12.89
#   K = 16384: M = 1 102.54 / 4.06, 16 106.79 / 4.20
# The CUDA kernels were tuned on many rows (session 2: 32768 rows of 1536); past the measured bounds they
# stay the default. The fused-add variant follows the same table (not measured separately).
# Session 30 runs 5-6 (benchmarks/results/session30/run5, run6, same method): rows longer than 4096 now
# take a block-per-row CUDA kernel (csrc/norm_quant.cuh nq_cta_kernel) that lets the next kernel launch at
# its start (PDL):
#   K = 7168:  M = 1 3.30 / 2.65, 16 3.35 / 2.73, 64 3.59 / 2.99, 256 4.34 / 4.38, 1024 10.68 / 12.95
#   K = 16384: M = 1 5.66 / 4.05, 16 5.85 / 4.19, 256 9.37 / 7.08, 1024 35.76 / 26.80
# Alone it is slower at decode M, but followed by the FP8 block GEMM on its codes (bench_fp8_prequant.py,
# 2112x7168, cold weights) the chain is faster: M = 1 8.86 vs 9.87 with Triton's, M = 16 10.02 vs 11.24
# (rms_norm + the GEMM quantizing x itself: 7.89 / 10.09). Up to K = 8192 (the MLA norms, 7168) CUDA at
# every M where that kernel takes the operands (_norm_quant_cta_ok; elsewhere the launcher's two-pass
# kernel would run: Triton); rows of 2049 .. 4096 (the launcher's warp-per-row register kernel, not measured
# at decode M) and longer than 8192 keep Triton up to 1024 rows (their chain not measured).
NORM_QUANT_TRITON_MAX_M: tuple = ((2048, 256), (4096, 1024), (8192, 0), (None, 1024))
# Ahead of that table: Triton's kernel launched with PDL and its trigger right after its own wait ("early"),
# for (K above, K up to, M up to). H200, session 31 run 3 (benchmarks/results/session31/run3/nq_chain.log,
# bench_fp8_prequant.py, 2112x7168, same method, us; chain = norm-quant + the FP8 GEMM on its codes):
#   M = 1:  chain triton-early 7.68, triton-first 8.18, CUDA 8.86, Triton without PDL 9.88 (rms_norm + the
#           GEMM quantizing x itself 7.85); alone 2.38 / 2.32 / 3.48 / 2.84
#   M = 16: chain triton-early 11.78, triton-first 11.30, CUDA 10.02, Triton 11.23
# Run 4 (benchmarks/results/session31/run4, same method; M = 1 already through this table): chain triton-early
# vs CUDA at M = 1 / 2 / 4 / 8: 7.70 / 8.33 / 9.81 / 10.34 vs 8.86 / 8.97 / 8.91 / 9.38      -> M <= 2
# (one program per row: with one or two rows the GEMM's CTAs take the other SMs at once). rms_norm + the GEMM
# quantizing x itself stays ahead of both chains from M = 2 on (8.00 / 8.13 / 8.14 at M = 2 / 4 / 8).
NORM_QUANT_TRITON_EARLY: tuple = ((4096, 8192, 2),)


def _norm_quant_triton_max_m(K: int) -> int:
    for k_max, m_max in NORM_QUANT_TRITON_MAX_M:
        if k_max is None or K <= k_max:
            return m_max
    return 0


def _norm_quant_cta_ok(x: torch.Tensor, weight: torch.Tensor, residual: Optional[torch.Tensor],
                       group_size: int) -> bool:
    """Whether the CUDA launcher runs its block-per-row kernel on these operands (csrc/norm_quant_launch.cu,
    nq_cta_kernel's conditions): 16-bit x [M, K] with K % 8 == 0 and K <= 16384, a group of 8 * 2^i <= 256
    columns, and x rows, residual rows and the weight 16-byte aligned. Elsewhere that launcher's kernels for
    these row lengths are the slow two-pass and generic ones."""
    def rows16(t: torch.Tensor) -> bool:
        return t.data_ptr() % 16 == 0 and (t.shape[0] <= 1 or t.stride(0) * t.element_size() % 16 == 0)

    K = x.shape[-1]
    lanes = group_size // 8
    return (x.dtype in (torch.bfloat16, torch.float16) and K % 8 == 0 and K <= 16384 and group_size % 8 == 0
            and 0 < lanes <= 32 and lanes & (lanes - 1) == 0 and rows16(x) and weight.data_ptr() % 16 == 0
            and (residual is None or rows16(residual)))


def _norm_quant_gpu_default(weight: torch.Tensor, M: Optional[int] = None, x: Optional[torch.Tensor] = None,
                            residual: Optional[torch.Tensor] = None, group_size: int = 128) -> str:
    """"triton-early" (Triton with PDL, trigger early; internal, not a user-facing backend) where
    :data:`NORM_QUANT_TRITON_EARLY` holds; "triton" for M <= :data:`NORM_QUANT_TRITON_MAX_M`'s bound at
    K = ``weight.numel()`` (M None: not checked), and where that bound is 0 (the rows the CUDA
    block-per-row kernel was measured on) for an ``x`` that kernel does not take
    (:func:`_norm_quant_cta_ok`); else "cuda" when the CUDA extension loads and reads this weight dtype,
    else "triton"."""
    K = weight.numel()
    if M is not None and any(lo < K <= hi and M <= m_max for lo, hi, m_max in NORM_QUANT_TRITON_EARLY):
        return _TRITON_EARLY
    if weight.dtype not in _CUDA_NORM_WEIGHT_DTYPES:
        return "triton"
    bound = _norm_quant_triton_max_m(K)
    if M is not None and M <= bound:
        return "triton"
    if bound == 0 and x is not None and not _norm_quant_cta_ok(x, weight, residual, group_size):
        return "triton"
    # Function-local import (the one allowed kind): keeps the extension loader, and with it
    # torch.utils.cpp_extension, off the `import qlinear.ops` path.
    from qlinear.kernels import cuda_ext

    return "cuda" if cuda_ext.ops_or_none("rms_norm_quant_fp8 uses Triton", stacklevel=4) is not None else "triton"


def _norm_quant_cuda(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    group_size: int,
    column_major_scales: bool,
    residual: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The "cuda" backend: allocates the outputs and runs ``torch.ops.qlinear_C.rms_norm_quant_fp8``
    (16-byte vector kernel where sizes and alignment allow, else an element-wise one)."""
    from qlinear.kernels import cuda_ext

    M, K = x.shape
    q = torch.empty((M, K), dtype=FP8_E4M3, device=x.device)
    s = empty_group_scales(M, cdiv(K, group_size), column_major_scales, x.device)
    if M:
        cuda_ext.load().rms_norm_quant_fp8(q, s, x, residual, weight, eps, _ref.FP8_SCALE_EPS, group_size)
    return q, s


@define_op("qlinear::rms_norm_quant_fp8", mutates_args=())
def _norm_quant_op(
    x: torch.Tensor, weight: torch.Tensor, eps: float, group_size: int, column_major_scales: bool, backend: str
) -> tuple[torch.Tensor, torch.Tensor]:
    if backend == "reference":
        q, s = _ref.rms_norm_quant_fp8_ref(x, weight, eps, group_size)
        return q, _as_layout(s, column_major_scales)
    if backend == "cuda":
        return _norm_quant_cuda(x, weight, eps, group_size, column_major_scales)
    return _kernels().rms_norm_quant_fp8(
        x, weight, eps, group_size, column_major_scales=column_major_scales, scale_eps=_ref.FP8_SCALE_EPS,
        pdl_trigger="early" if backend == _TRITON_EARLY else None,
    )


@_norm_quant_op.register_fake
def _(x, weight, eps, group_size, column_major_scales, backend):
    M, K = x.shape
    q = torch.empty((M, K), dtype=FP8_E4M3, device=x.device)
    return q, empty_group_scales(M, cdiv(K, group_size), column_major_scales, x.device)


@define_op("qlinear::fused_add_rms_norm_quant_fp8", mutates_args=("residual",))
def _add_norm_quant_op(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    group_size: int,
    column_major_scales: bool,
    backend: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    if backend == "reference":
        q, s = _ref.rms_norm_quant_fp8_ref(x, weight, eps, group_size, residual=residual)
        return q, _as_layout(s, column_major_scales)
    if backend == "cuda":
        return _norm_quant_cuda(x, weight, eps, group_size, column_major_scales, residual=residual)
    return _kernels().rms_norm_quant_fp8(
        x,
        weight,
        eps,
        group_size,
        residual=residual,
        column_major_scales=column_major_scales,
        scale_eps=_ref.FP8_SCALE_EPS,
        pdl_trigger="early" if backend == _TRITON_EARLY else None,
    )


@_add_norm_quant_op.register_fake
def _(x, residual, weight, eps, group_size, column_major_scales, backend):
    M, K = x.shape
    q = torch.empty((M, K), dtype=FP8_E4M3, device=x.device)
    return q, empty_group_scales(M, cdiv(K, group_size), column_major_scales, x.device)


def rms_norm_quant_fp8(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    group_size: int = 128,
    *,
    residual: Optional[torch.Tensor] = None,
    column_major_scales: bool = False,
    backend: Optional[str] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm of each row written directly as e4m3 with per-token-group scales.

    ``x`` [M, K] bf16 / fp16 / fp32 with ``stride(1) == 1`` (row stride free: e.g. a column slice
    of a fused projection output); ``weight`` [K]. With ``residual`` (same shape and dtype,
    ``stride(1) == 1``): ``residual <- dtype(x + residual)`` in place and the new residual is
    normalized. In fp32: ``y = h * rsqrt(mean(h^2) + eps) * weight``, then the quantization of
    :func:`per_token_group_quant_fp8` applied to ``y`` (no rounding to ``x.dtype`` in between).
    Returns ``q`` e4m3 [M, K] and fp32 ``scales`` [M, cdiv(K, group_size)] (strides ``(1, M)``
    with ``column_major_scales``). Backends: "cuda" (the CUDA extension; bf16 / fp16 / fp32
    weight; any group size and alignment, 16-byte vector kernel where they allow), "triton",
    "reference". None: ``QLINEAR_RMS_NORM_QUANT_BACKEND``, else "reference" off CUDA, else "triton" for
    few rows (:data:`NORM_QUANT_TRITON_MAX_M`: up to 256 rows of K <= 2048, none of 4096 < K <= 8192 where the
    CUDA block-per-row kernel takes x, 1024 of other rows, where it measured faster; one or two rows of
    4096 < K <= 8192 with PDL and an early trigger, :data:`NORM_QUANT_TRITON_EARLY`), else "cuda" when the
    extension loads, else "triton".
    """
    _check_act("x", x)
    if x.dim() != 2:
        raise ValueError(f"x: expected [M, K], got {describe(x)}")
    M, K = x.shape
    if weight.shape != (K,) or not weight.is_floating_point() or weight.stride(0) != 1:
        raise ValueError(f"weight: expected a floating-point [{K}] with stride 1, got {describe(weight)}")
    if backend is None and env_backend("QLINEAR_RMS_NORM_QUANT_BACKEND", _NORM_BACKENDS) is None and x.is_cuda:
        be = _norm_quant_gpu_default(weight, M, x, residual, group_size)
    else:
        be = _resolve(backend, "QLINEAR_RMS_NORM_QUANT_BACKEND", _NORM_BACKENDS, x.device, "triton")
    if be == "cuda":
        if weight.dtype not in _CUDA_NORM_WEIGHT_DTYPES:
            raise TypeError(f"weight: backend 'cuda' reads {_CUDA_NORM_WEIGHT_DTYPES}, got {describe(weight)}")
        if not x.is_cuda:
            raise ValueError(f"backend 'cuda' needs CUDA tensors, got x on {x.device}; use backend='reference'")
    _check_group(group_size, be, K)
    if residual is None:
        return _norm_quant_op(x, weight, float(eps), group_size, column_major_scales, be)
    if residual.shape != x.shape or residual.dtype != x.dtype or residual.stride(1) != 1:
        raise ValueError(f"residual: expected shape {tuple(x.shape)} dtype {x.dtype} with stride(1) == 1, got {describe(residual)}")
    return _add_norm_quant_op(
        x, residual, weight, float(eps), group_size, column_major_scales, be
    )

