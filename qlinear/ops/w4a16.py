"""Weight-only integer linear (W4A16 / W8A16): the packed layout, its packer and the GEMM op.

Format code (GPTQ, AWQ, compressed-tensors pack-quantized) decodes a checkpoint into the
*canonical* form and calls :func:`pack_w4a16`; layers then call :func:`w4a16_linear`.

Canonical form, for a logical weight ``W [N, K]``::

    W[n, k] = (q[n, k] - zeros[n, grp(n, k)]) * scales[n, grp(n, k)]

* ``q`` integer ``[N, K]`` (uint8 / int16 / int32 / int64), unsigned values ``0 .. 2**bits - 1``;
* ``zeros`` integer ``[N, G]`` in the same domain, or None (symmetric: ``2**(bits - 1)``);
* ``scales`` float ``[N, G]`` (any float dtype; its values are kept exactly);
* ``group_size`` g with K = G * g, or -1 / K for per-channel (G = 1);
* ``g_idx`` None (``grp = k // g``) or act-order: a list of ``(row_start, row_end, g_idx[K])``
  covering rows 0..N in order; each range (one shard of a merged layer) has its own ``g_idx``,
  and every group must hold exactly g columns.

The packed layout (``W4A16Weights``) is documented in ``qlinear.reference.w4a16``, whose
``dequantize_w4a16`` is its reference decoder. In short: int32 words packed along K in 16-word
superblocks whose bit-field i is 16 contiguous columns (so a kernel turns one 16-byte load into
fields that meet contiguous activations), ``scales`` / ``zeros`` transposed to ``[G, N]`` so a
tile of rows reads them coalesced, and for act-order one column permutation per row range
(columns sorted by group, so groups become contiguous). The GEMM gathers ``x`` through the
permutations once (``x[:, perm]``, one small kernel, ``[M, S*K]``) and a single launch then serves
the whole merged layer: its N-tiles never straddle a shard and each tile reads its shard's slice.

Backends: ``"cuda"`` (``csrc/w4a16_gemv.cuh``: tensor-core decode kernels for M <= 16 per launch, more
rows as blocks of 16, 4-bit without act-order, one launch per block: a cp.async ring kernel, or round 1's
register kernel for groups < 128 / N % 4 != 0; on sm_90 the TMA ring kernel of ``csrc/w4a16_tma.cuh`` for
long rows and, from M = 5, for few rows, see :data:`_CUDA_RING_AUTO`; on sm_90 for short rows at M = 9 .. 16
the x-staged kernel of ``csrc/w4a16_xs.cuh`` (its warps split the rows, x copied once per CTA into shared memory), see
:data:`_CUDA_XS_AUTO`; auto-chosen for M <= :data:`_CUDA_MAX_M`
(:data:`_CUDA_MAX_M_TALL` when N >= 8 K), or up to :data:`_CUDA_BLOCKS_MAX_M` for the shape classes listed
there, where :func:`cuda_supported` holds; act-order and 8-bit
weights take the Triton path), ``"cuda_gemm"``
(``csrc/w4a16_gemm.cuh``: an mma.sync GEMM for M > 16 with x staged in shared memory for the CTA's
warps, the weight dequantized and scaled in registers; auto-chosen for M up to :data:`_CUDA_GEMM_MAX_M`
where :func:`cuda_gemm_supported` holds and the shape class is listed there), ``"cuda_wgmma"``
(``csrc/w4a16_wgmma.cuh``: a Hopper wgmma GEMM, the weight dequantized in registers as the MMA's A
operand and x fed by TMA; sm_90 with an sm_90a build; auto-chosen for the M ranges of
:data:`_CUDA_WGMMA_M`, less those of :data:`_CUDA_WGMMA_GAP` unless :func:`_wgmma_paired_config` applies,
where :func:`cuda_wgmma_supported` holds),
``"triton"``
(``qlinear.kernels.w4a16_triton``: a CUDA-core split-K GEMV for M <= 4
and a tensor-core split-K kernel for small and medium M), ``"triton_wg"`` (the same module's "wg"
kernel: the dequantized tile as the register operand of one wgmma chain per tile, x from shared memory,
launch from :func:`qlinear.kernels.w4a16_triton.wg_config`; auto-chosen for M = 65 .. 128, and up to
256 when N >= 8 K), ``"dequant_cublas"`` (fused dequantize into
a bf16/fp16 buffer, then cuBLAS; for large M) and ``"reference"`` (fp32, any device). Choice:
``backend=`` argument, then ``QLINEAR_W4A16_BACKEND``, then :data:`_M_THRESHOLDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from qlinear._utils import define_op, describe, env_backend, round_up
from qlinear.reference.w4a16 import SUPERBLOCK_WORDS, superblock_cols, w4a16_linear_ref

__all__ = [
    "W4A16Weights",
    "pack_w4a16",
    "w4a16_linear",
    "w4a16_backend",
    "W4A16_BACKENDS",
    "cuda_supported",
    "cuda_gemv",
    "cuda_gemm_supported",
    "cuda_gemm",
    "cuda_wgmma_supported",
    "cuda_wgmma",
]

W4A16_BACKENDS = ("cuda", "cuda_gemm", "cuda_wgmma", "triton", "triton_wg", "dequant_cublas", "reference")
_ENV_VAR = "QLINEAR_W4A16_BACKEND"

# Auto dispatch by M (rows of x) on CUDA: the first row whose bound is >= M wins; a row's third
# entry, when not None, is the backend for tall-skinny layers (N >= 8 K, e.g. 24576x1536).
# H200 run 1 (notes/gpu_run1/bench_w4a16.log, us; bf16 F.linear in parentheses), shapes
# 2112x7168 / 24576x1536 / 7168x16384:
#   M = 1    triton gemv 9.77 / 16.6 / 49.5 (12.6 / 21.2 / 58.1).
#   M = 16   triton mma 13.7 / 22.2 / 68.2 (12.8 / 20.6 / 63.6); dequant_cublas would pay the
#            ~12 / 35 / 111 us dequantize on top of bf16: triton.
#   M = 128  dequant_cublas 25.1 / 59.1 / 179.2, best triton mma 31.5 / 45.7 / 176.9,
#            bf16 13.4 / 23.8 / 68.3: dequant_cublas except tall-skinny (mma 45.7 < 59.1); the
#            faster v2 dequantize (written after run 1) only widens dequant_cublas' lead.
#   M = 4096 dequant_cublas 192 / 485 / 1434 vs triton mma 412 / 878 / 2678: dequant_cublas.
# Session 2 (benchmarks/results/session2/bench_w4a16_mma.json) confirmed M = 64 on triton: mma_sb
# 17.5 / 23.5 / 93.6 vs dequant_cublas 27.9 / 59.4 / 177.6.
# Session 4 (benchmarks/results/session4/w4a16wg_r2.log, cold weights, us; wg = the best swept
# "wg" config, with "triton_wg" at its default wg_config in brackets; vs = this table before the
# change; bf16 in parentheses), shapes as above:
#   M = 64   wg 18.2 / 23.5 / 104.5 [18.3 / 35.6 / 106.4] vs triton 17.1 / 23.7 / 94.9
#            (13.1 / 21.6 / 62.4): triton.
#   M = 128  wg 26.8 / 39.6 / 123.9 [27.2 / 40.2 / 124.7] vs dequant_cublas 27.4, triton 45.7,
#            dequant_cublas 181.6 (14.1 / 24.1 / 69.3): wg everywhere (default config: 0.99x /
#            0.88x / 0.69x of the old choice).
#   M = 256  wg 34.9 / 64.2 / 229.5 [35.7 / 66.4 / 229.8] vs dequant_cublas 33.6, triton 79.3,
#            dequant_cublas 225.0: wg on tall-skinny layers only.
#   M = 1024 wg 92.3 / 241.5 / 740.5 [93.6 / 250.5 / 740.4] vs dequant_cublas 62.6 / 152.3 / 456.9:
#            dequant_cublas.
# Still 1.65-1.9x bf16 at M = 128: the wg kernel reaches 140-245 TFLOP/s, bf16 cuBLAS 275-434.
_M_THRESHOLDS: tuple[tuple[int, str, Optional[str]], ...] = (
    (64, "triton", None),  # decode .. small batches: weights read once, dequantized in registers
    (128, "triton_wg", None),  # register-A wgmma chain
    (256, "dequant_cublas", "triton_wg"),
    (1 << 62, "dequant_cublas", None),  # large M: cuBLAS at full tensor-core speed, +1 dequantize pass
)

# The CUDA tensor-core decode kernel ("cuda") takes M <= _CUDA_MAX_M in auto dispatch, ahead of
# _M_THRESHOLDS, where cuda_supported() holds; tall-skinny layers (N >= 8 K) use _CUDA_MAX_M_TALL.
# H200 round 1 (register kernel, benchmarks/results/session3/w4a16_cuda_round1.txt, best config,
# us, cuda / triton / tinygemm): 2112x7168 M=1 7.95 / 10.48 / 7.21, M=8 10.11 / 12.44 / 12.02,
# M=16 14.79 / 12.93; 7168x16384 M=1 46.96 / 50.17 / 33.29, M=8 47.40 / 61.05, M=16 53.1 / 60.7;
# 24576x1536 M=1 22.10 / 16.39 / 14.34 (loses), M=8 19.62 / 21.43: cuda up to M = 8, not on
# tall-skinny layers. Round 2 (the cp.async ring kernel, the auto default now) is measured by
# benchmarks/gpu_w4a16gemv.sh, which prints the values to set here. The kernel takes M <= 16.
# Round 3 (the register kernel rebuilt for instruction count, benchmarks/results/w4a16_cuda.json at
# 65a09fb; 'cuda auto' / Triton / tinygemm, us, weights rotated past L2): M=1 6.32 / 10.63 / 7.61,
# 11.68 / 16.52 / 14.60, 34.52 / 51.52 / 34.19; M=4 7.42 / 12.59, 15.17 / 21.01, 32.22 / 63.19;
# M=16 12.05 / 13.15, 19.02 / 20.96, 48.13 / 63.88 (2112x7168, 24576x1536, 7168x16384): cuda wins
# every measured case up to M = 16, tall-skinny layers included.
_CUDA_MAX_M = 16
_CUDA_MAX_M_TALL = 16
# The decode kernels take at most _CUDA_BLOCK_M rows per launch (two token tiles of 8); "cuda" runs more rows
# as blocks of that many, one launch each, into one output. Auto dispatch sends _CUDA_MAX_M < M <=
# _CUDA_BLOCKS_MAX_M[shape class] there (ahead of the GEMMs), for the classes measured to gain.
# Session 33 run 5 (benchmarks/results/session33/run5, probe_w4a16_chunks.py: sym-fp16 layers, cold weights,
# alternated replays, us; blocks / the mma.sync GEMM ("cuda_gemm", the dispatch before) / Triton [bf16]):
#   many (7168x16384) M = 17 / 24 / 32: 42.24 / 42.34 / 45.51 vs 53.09 / 54.61 / 56.02 / 72.89-74.18
#        [60.45 / 61.09 / 61.74]: the weights are read twice, but each block runs at its decode kernel's
#        rate (257434: 22.65 us at M = 16, 18.82 at M = 1)                                  -> "many": 32
#   few (2112x7168) M = 17 / 24 / 32: 13.10 / 15.22 / 12.40 vs Triton (the dispatch) 11.45 / 11.68 / 12.14
#        [13.77 / 13.52 / 13.63]                                                             -> not listed
#   (short rows not measured: its M = 17 .. 32 stay Triton / the wgmma GEMM.)
_CUDA_BLOCK_M = 16
_CUDA_BLOCKS_MAX_M: dict[str, int] = {"many": 32}
# The CUDA GEMM (csrc/w4a16_gemm.cuh: x, weights, scales and zeros staged in a shared-memory ring for
# the CTA's warps, the weight dequantized and scaled in registers, mma.sync) takes
# _CUDA_MAX_M < M <= _CUDA_GEMM_MAX_M[shape class] in auto dispatch where cuda_gemm_supported() holds
# (classes as _CUDA_RING_AUTO's; absent = never). H200, session 8 run 8
# (benchmarks/results/session8/run8, probe_w4a16_gemm.py, cold weights, us, its automatic config vs
# the table below; bf16 ~62): many (7168x16384) M = 17 / 32 70.00 / 73.60 vs 81.53 / 82.58, M = 64
# 102.3 (best config) vs 94.1 -> up to 32 (run 10, _CUDA_GEMM_AUTO's config: 63.06 at M = 32).
# few (2112x7168) M = 17 19.1 vs 13.4 and short (24576x1536) M = 17 21.9 vs 21.4: never. At M >= 64
# it lost everywhere (2112x7168 M = 128: 40.6 vs 27.0): 4 or 8 warps per SM, latency-bound (Nsight
# Compute, run 9: 6-12 % occupancy, 70-79 % of cycles with no eligible warp).
# Session 12 made its K-split reduction split-major (the V loads of a split issued together). Runs 9
# and 10 (benchmarks/results/session12/run9, run10: the same probe back to back on one machine, the
# change against its parent; us): many M = 17 auto (8, 32, 4, 4) 53.04 vs 59.74, M = 32 56.15 vs 62.32
# [bf16 61.8], M = 64 (8, 64, 4, 4) 86.44 vs 112.95 against the dispatch's triton 94.24 [bf16 62.2]
# -> up to 64 (M = 33 .. 63 not measured: the 64-token tile's work does not shrink with M).
# Session 14 runs 6 and 7 (benchmarks/results/session14/run6, run7: probe_w4a16_gemm.py --family both,
# same method, us): the wgmma GEMM's 64-token tile beats this GEMM's 64-token row from M = 33 on:
# many M = 40 / 48 / 64: wgmma auto 59.02 / 59.20 / 59.54 vs (8, 64, 4, 4) 79.74 / 81.61 / 86.61
# [bf16 64.11 / 64.18 / 62.98]; at M = 32 this GEMM stays ahead (56.77 vs 58.98) -> up to 32, and
# _CUDA_WGMMA_M's many range starts at 33.
# Session 21 run 7 (benchmarks/results/session21/run7, same probe, sym-fp16 layers, x rotated, us): at
# M = 16 neither split-K GEMM comes near the register decode kernel the dispatch runs there: best
# 12.34 (wgmma 64 tokens) / 20.51 (this GEMM, W8 T32 S2) / 52.22 (this GEMM, auto) against 9.27 / 12.62
# / 33.76 on 2112x7168 / 24576x1536 / 7168x16384 -> no entry below 17 rows.
# Session 33 run 5 (at _CUDA_BLOCKS_MAX_M): the decode kernels in blocks of 16 rows beat this GEMM on many at
# M = 17 .. 32 (42.2-45.5 vs 53.1-56.0 us) and come first in auto dispatch; the GEMM stays as an explicit
# backend ("cuda_gemm") with no auto range.
_CUDA_GEMM_MAX_M: dict[str, int] = {}
# Its launch config (warps = 16-row tiles per CTA, tokens per CTA, K splits, ring stages) for calls
# without one: the first (max_m, config) row of the shape class's entry with M <= max_m, else
# _CUDA_GEMM_CONFIG; zeros = the launcher's choice
# (csrc/w4a16_gemm_launch.cu w4_gemm_resolve). Session 8 run 10 (benchmarks/results/session8/run10,
# probe_w4a16_gemm.py --splits 0 2 4 8, us): many M = 32 (8, 32, 4, 4) 63.06 vs the launcher's choice
# (8 warps, 32 tokens, 2 splits, 6 stages) 73.97, (8, 32, 4, 6) 64.78, (8, 32, 8, 4) 65.44; bf16 61.59.
# Only M = 32 was measured with splits; M = 17 uses the same 32-token tile. (Session 12's row for
# M = 33 .. 64, (8, 64, 4, 4), went with the bound change of session 14.)
# The Hopper wgmma GEMM (csrc/w4a16_wgmma.cuh: the dequantized weight as wgmma's register operand, x
# through TMA) takes lo <= M <= hi of its shape class's entry in auto dispatch, ahead of _M_THRESHOLDS,
# where cuda_wgmma_supported() holds (absent class = never). H200, session 11 run 8
# (benchmarks/results/session11/run8, probe_w4a16_gemm.py --family wgmma, cold weights, us, the
# launcher's automatic config vs the committed dispatch before it, bf16 F.linear in brackets):
#   few   (2112x7168)   M = 128 21.3 vs triton_wg 26.8 [14.0]; M = 512 44.2 vs dequant_cublas 35.4;
#                       M = 1024 74.1 vs 55.5                                      -> 65 .. 128
#   short (24576x1536)  M = 128 34.4 vs 38.2 [24.3]; M = 512 77.0 vs 87.6 [56.1]; M = 1024 150.8 vs
#                       138.8 [105.9]                                              -> 65 .. 512
#   many  (7168x16384)  M = 128 70.6 vs 122.7 [69.4]; M = 512 190.2 vs 265.2 [158.5]; M = 1024 376.5
#                       with one K split (the launcher's choice since; its choice in run 8, 4 splits,
#                       412.5; run 9: 395.8 unsplit) vs 441.8 [335.2]              -> 65 .. 1024
# Session 11 measured neither M = 64 (triton then) nor M = 256 with this kernel; the bounds
# interpolated between measured points. Past the upper bound dequantize + cuBLAS stays (its M = 4096
# meets 1.15x bf16).
# Session 14 runs 6 and 7 (above at _CUDA_GEMM_MAX_M; us, its automatic config vs the dispatch then):
#   many  M = 40 / 48 / 64: 59.02 / 59.20 / 59.54 vs the mma.sync GEMM 79.83 / 81.61 / 86.71 -> 33 .. 1024
#   few   M = 40 / 64: 16.35 / 16.50 vs triton 15.95 / 16.77 (its 64-token tile with 4 stages 15.40 /
#         15.66: a few % either way, left as it was)
#   short M = 40 / 64: 27.00 / 27.82 vs triton 25.14 / 23.45 -> unchanged
#   M = 128 with 64-token tiles or fixed K splits: no gain over the automatic config on any shape.
# Session 19 (benchmarks/results/session19/run7, probe_w4a16_gemm.py, same method; the kernel now sums a
# K split spread over the tile's CTAs, stores through shared memory in 16-byte vectors and launches
# with PDL; us, bf16 F.linear in brackets):
#   few   M = 33 / 48 / 64: (64 tokens, auto splits, 4 stages) 13.12 / 13.07 / 13.05, the automatic
#         8 stages 14.31 / 13.99 / 13.94, vs triton 15.69 / 16.12 / 17.02 [14.32 / 14.33 / 14.06];
#         M = 256: automatic 22.30 vs dequant_cublas 28.92 [16.58]; M = 512: 34.87 vs 34.91 [23.48]
#                                                                                    -> 33 .. 256
# Session 23 (benchmarks/results/session23/run3, same probe, sym-fp16 layers, x rotated; the kernel can
# now take 64 weight rows per CTA, its two warpgroups each half of every superblock's k-steps: 2112
# rows are 33 tiles, so M = 1024 at 256 tokens is one wave of 132 CTAs; us, bf16 F.linear in brackets):
#   few   M = 256 / 512 / 1024: 64 rows, 256 tokens, automatic splits 19.30 / 30.84 / 50.97 vs the
#         dispatch (wgmma 128 rows / dequant_cublas / dequant_cublas) 21.51 / 35.70 / 56.25
#         [16.82 / 23.88 / 43.27]; M = 128: 64 rows 14.75 vs 128 rows 14.60 [14.31]  -> 33 .. 1024
#   short M = 1024: 128 rows (automatic) 128.55 vs dequant_cublas 138.79 [106.59] (run 2: 127.00 vs
#         137.88); 64 rows lose on short rows (M = 512 / 1024: 80.70 / 158.81 vs 65.53 / 128.55:
#         half as many rows per x tile re-read)                                    -> 65 .. 1024
# Session 32 runs 1 and 6 (benchmarks/results/session32, same probe; short rows, sym-fp16 in run 6, asym-bf16
# in run 1; us, bf16 F.linear in brackets): the wgmma GEMM's table row for M <= 256 (192 rows, 128 tokens, 4
# stages) at M = 33 / 40 / 48 / 64: 19.89 / 19.12 / 18.87 / 18.63 vs triton (the dispatch) 22.38 / 22.77 /
# 23.53 / 23.42 [20.64 / 21.09 / 21.21 / 21.55]; M = 17 / 24: 20.73 / 20.66 vs triton 19.54 / 19.44
#                                                                               -> short 33 .. 1024
_CUDA_WGMMA_M: dict[str, tuple[int, int]] = {"few": (33, 1024), "short": (33, 1024), "many": (33, 1024)}
# M ranges inside _CUDA_WGMMA_M that take the _M_THRESHOLDS backend instead (dequantize + cuBLAS there). Session 38
# run 5 (benchmarks/results/session38/run5, probe_w4a16_gemm.py --dequant, sym-fp16, x rotated, us; the wgmma
# dispatch (64-row CTAs, 256 tokens, unsplit from M = 513: 99 / 132 CTAs) / its best other config / dequant_cublas
# [bf16]) on 2112x7168:
#   M = 520: 96.44 / 47.42 (128 rows, 2 splits) / 38.75 [26.69]    M = 600: 77.69 / 47.23 / 38.62 [26.56]
#   M = 700: 51.10 / 50.20 / 42.69 [29.74]    M = 768: 51.14 / 51.37 / 44.99 [31.74]
#   M = 900: 65.45 / 54.83 (PDL off) / 50.55 [37.58]    M = 1024: 54.40 / 54.38 / 60.59 [47.18]
# Run 6 (same probe; the GEMM as in run 5): M = 960 / 992 / 1000 57.01 / 56.49 / 58.32 vs dequant_cublas 58.73 /
# 60.27 / 58.42. Run 7, after the wgmma GEMM's last token tile stopped reading x boxes past M (csrc/w4a16_wgmma.cuh
# tok_own), the 64-row row still loses here: M = 520 / 600 / 768 / 900 53.51 / 53.05 / 47.92 / 54.78 vs
# dequant_cublas 38.27 / 39.12 / 44.39 / 51.31 [26.37 / 26.78 / 31.79 / 38.01]. The upper bound interpolates:
# dequant_cublas grows from 51.3 (M = 900) to 58.7 us (960), the GEMM takes ~55 between (M = 901 .. 959 not
# measured).
_CUDA_WGMMA_GAP: dict[str, tuple[int, int]] = {"few": (513, 935)}
# Its launch config per shape class, rows (max_m, (tokens per CTA, K splits, stages)) as
# _CUDA_GEMM_AUTO's (0 = the launcher's choice, csrc/w4a16_wgmma_launch.cu w4_wgmma_resolve: its
# choice is session 11 run 8's best config within noise in the cases above, checked on the host by
# tests/test_w4a16_wgmma_config_host.py). few up to M = 64: 4 stages instead of the launcher's 8
# (session 19 run 7 above); few from M = 129 on: 64 rows per CTA, 256 tokens, 3 stages (session 23
# above; a fifth field is the rows per CTA).
# Session 23 run 8 (benchmarks/results/session23/run8, same probe and method; us, bf16 in brackets):
# 192-row CTAs (three warpgroups of 64 rows, 128 tokens, 4 stages; 24576 rows are 128 tiles, one
# wave at M <= 128):
#   short M = 128 / 256: 20.07 / 38.97 vs the automatic 128 rows 28.37 / 42.24 [24.32 / 30.24];
#         M = 512 / 1024: 77.03 / 150.95 vs 65.89 / 129.87                         -> up to 256
#   many  M = 128: 61.69 vs 66.14 [69.58]; M = 256: 130.37 vs 98.59                 -> 65 .. 128
#   few   M = 128 / 256: 15.94 / 21.32 vs 14.58 / 19.20                            -> unchanged
# Session 31 runs 1-2 (benchmarks/results/session31, same probe and method, us): the producer warpgroup
# (sixth field 1, csrc/w4a16_wgmma.cuh kProd) on the automatic 128 rows x 256 tokens, without -> with:
#   short M = 512 / 1024: 72.07 -> 70.33 / 141.10 -> 137.59 (M = 256: the 192-row row above, 40.32, stays)
#   many  M = 256 / 512 / 1024: 98.99 -> 97.45 / 200.44 -> 194.99 / 430.36 -> 415.70  -> 129 .. 1024
# Session 34 (benchmarks/results/session34, same probe, x rotated; us, bf16 F.linear in brackets): two ways to
# run 2112x7168 at M = 1024 on 128-row CTAs (which move half the x bytes into shared memory per product of the
# 64-row ones) without leaving half the SMs idle; both lost and are not compiled (patches in notes/):
#   stream-K, 132 CTAs over all 68 tiles x 56 superblocks (run 3): M = 256 / 512 / 768 / 1024 40.01 / 42.25 /
#         50.67 / 64.87 vs the few row above 19.25 / 31.28 / 47.02 / 54.94 [17.34 / 23.88 / 31.72 / 47.24]. Run 5's
#         per-CTA stamps at M = 1024: 1.44 us per superblock in the loop (the 64-row CTAs: 1.83 per the same
#         products), but each 128 x 256 fp32 partial costs ~3.3 us to write and the owner's sums and staged
#         store ~7.7 more, so the last CTAs end at 55.8 us;
#   152-token CTAs (17 x 7 = 119 CTAs, one wave; run 4): few M = 960 / 1024 59.51 / 61.48 vs 56.77 / 55.38
#         [46.12 / 47.45]; many 432.47 / 412.79 vs the many row 398.96 / 395.69: narrower wgmmas lose more than
#         the fuller wave gains (as session 31's 88-token ones did).
# Session 34 runs 7-8: unsplit tiles now go out through a TMA bulk tensor store (csrc/w4a16_wgmma.cuh
# wg_store_tile_tma; the threads' store took 2.4-3.4 us per CTA in run 6). bench_linear M = 1024, us (x bf16):
# 2112x7168 49.31 (1.155, was 1.169), 24576x1536 116.20 (1.108, was 1.170), 7168x16384 332.51 (1.028, was 1.035);
# the configs above are unchanged.
# Session 38 runs 1-4 (benchmarks/results/session38, same probe, sym-fp16, x rotated; us): x multicast over pairs of
# the few row's 64-row CTAs at M = 1024 (66 clusters of two; each CTA copies half of every stage's x into both,
# a stage refilled once both CTAs released it) lost in every form: 57.94 at best (relaxed cross-CTA arrivals, a
# producer warpgroup) against 52.68 for the row [bf16 44.82]; releasing arrivals cost a MEMBAR.ALL.GPU per warp and
# superblock (77.47). Not compiled (notes/s38_x_multicast.patch).
# Session 39 run 6 (benchmarks/results/session39/run6, probe_w4a16_gemm.py --rotate-x, 2112x7168, us): the 64-row
# CTAs' warpgroups on alternate superblocks (sixth field 2, csrc/w4a16_wgmma.cuh kAlt), 128 tokens, 4 splits in
# pairs, against the few row at M <= 128 then (symmetric: the same tiles with the k-steps split, 4 stages;
# asymmetric: the launcher's 128 x 128 tiles, 7 spread splits) [bf16]:
#   sym-fp16  M = 100 / 128: 6 stages 13.88 / 13.27, 4 stages 14.47 / 14.05, spread (reduce 2) 14.30 / 14.58 vs
#             15.15 / 14.73 [15.19 / 14.46]
#   asym-bf16 M = 100 / 128: 6 stages 14.01 / 13.34, 4 stages 14.61 / 14.19 vs 14.79 / 14.71 [15.30 / 14.47]
#   bench_linear --format w4a16 (GPTQ sym, the row set to 6 stages): M = 128 13.21 vs bf16 14.65 (was 14.51-14.68)
# -> one row for both layer kinds (the symmetric override below is gone).
# Session 40 runs 1, 2, 5 (benchmarks/results/session40, same probe, 2112x7168 M = 1024, us, sym / asym): three other
# schedules of the few row's 64-row CTAs at 256 tokens lost, each against the row in the same run, and are not
# compiled (notes/s40_*.patch):
#   - a stage ring per warpgroup, 3 stages each: 57.25 / 60.42 against 54.25 / 55.20;
#   - stages of half the tokens, each with its own m64n128 wgmma group: 70.52 / 68.88 against 54.56 / 52.78, and
#     16-25 % slower on the 128-row rows too;
#   - one warpgroup over all 8 k-steps: 53.80 / 58.44 against 50.93 / 56.04.
# Session 41 (benchmarks/results/session41): where the few row's 64-row CTAs lose at M = 1024 (2112x7168).
#   - Not memory. Run 1 (csrc/probe/ingress_probe.cu: the same TMA boxes, stages and grid, no arithmetic): the ring
#     alone takes 27.9 us (18.4 TB/s out of L2, 71 bytes per SM clock); with a clock standing in for ideal tensor
#     time (1024 cycles per superblock) 30.6 us. The kernel takes 50.2-51.4 in the same run.
#   - Run 3, Nsight Compute against the paired 128-row CTAs on 2048x7168 (the same products per CTA): ideal tensor
#     cycles are 66 % of the SMs' active cycles against 76 %; 13 % against 9 % of the warps' stall samples sit on
#     the `full` mbarrier waits.
#   - Run 4: one `full` mbarrier per x atom (warpgroup 0 starts once its atom and the rows are in) lost, 60.61 /
#     51.89 against 58.43 / 50.39 us (sym / asym; bf16 48.93 / 43.67 in the same passes); not compiled
#     (notes/s41_split_barriers.patch).
#   - Run 5: mode 2 (alternate superblocks, 8 k-steps each) at 256 tokens in 3 stages passed between the warpgroups
#     (code 21323; correct, 255 registers) lost by 45 %: 79.57 / 78.94 against 55.08 / 52.54 us at M = 1024, 25.39 /
#     25.47 against 19.62 / 19.42 at M = 256. A warpgroup's next stage is only requested once the other warpgroup
#     has released its last one (notes/s41_alt_three_stages.patch).
#   - Run 2 (benchmarks/probe_clocks.py, back-to-back replays): at the 700 W cap bf16 F.linear runs at ~1.53 GHz
#     and this row at ~1.65 GHz, 58.0 against 51.9 us (1.12); bench_linear's short bursts read 1.167.
_CUDA_WGMMA_AUTO: dict[str, tuple[tuple[int, tuple[int, ...]], ...]] = {
    "few": ((64, (64, 0, 4)), (128, (128, 4, 6, 3, 64, 2)), (1024, (256, 0, 3, 0, 64))),
    "short": ((256, (128, 0, 4, 0, 192)), (1024, (256, 0, 3, 0, 128, 1))),
    "many": ((64, (0, 0, 0)), (128, (128, 0, 4, 0, 192)), (1024, (256, 0, 3, 0, 128, 1))),
}
# Symmetric layers (no zero points: GPTQ sym, compressed-tensors symmetric) take these configs instead of
# the _CUDA_WGMMA_AUTO row of their shape class with the same max_m. Session 35
# (benchmarks/results/session35, us; the K split of a few-row tile summed in pairs, reduce 3: 64-row CTAs x 4
# splits in clusters of two, 132 CTAs on 2112x7168, against the common row, 128 x 128 tiles with 7 spread
# splits, 119 CTAs):
#   run 4, bench_linear --format w4a16 (GPTQ sym), two builds side by side, two passes: M = 128 14.63 / 14.63
#         vs 14.75 / 14.76 [bf16 14.55 / 14.53]; M = 100 14.82 / 14.81 vs 14.83 / 14.83 [15.39 / 15.41];
#         probe_w4a16_gemm.py --layer sym-fp16, M = 128 14.68 vs 14.89 [14.35], M = 100 15.01 vs 14.90 [15.09]
#   run 3, probe_w4a16_gemm.py, asym-bf16 (zero points): M = 128 15.04 vs 14.71 [14.33], M = 100 15.36 vs
#         14.76 [15.02]: asymmetric layers keep the common row. M = 65 .. 99 not measured (the bound
#         interpolates).
# Runs 1-2's per-CTA stamps (notes/s35_wg_trace.patch: a stamping build and its probe_wg_trace.py) put the 7
# spread splits' epilogue at 5.7 us after a 7.2 us main loop: 2.4 storing the fp32 partials, 1.2 waiting for the
# tile's other CTAs, 1.7 summing; the 64-row CTAs loop 8.4 us over their 14 superblocks.
# Session 37 run 6 (benchmarks/results/session37/run6, probe_w4a16_gemm.py --rotate-x, sym-fp16, us): the same
# tiles with 3 stages, one A buffer and at most 128 registers per thread, so that two CTAs fit an SM and the next
# launch's CTAs stream beside this one's (as the TMA ring's early trigger does at M = 9 .. 16): M = 100 / 128
# 15.81 / 15.72 vs this row 14.92 / 14.60 [bf16 15.03 / 14.37]. Waiting for each superblock's wgmmas before the
# next dequantize costs more than the overlap gains; not compiled (notes/s37_wgmma_two_per_sm.patch).
# Session 39 run 6 (above _CUDA_WGMMA_AUTO): the common few row at M <= 128 now sums its K split in pairs for both
# layer kinds, on warpgroups that take alternate superblocks, and beats this override (128, 4, 4, 3, 64) on both:
# no override left.
_CUDA_WGMMA_AUTO_SYM: dict[str, dict[int, tuple[int, ...]]] = {}
# Where a shape class's _CUDA_WGMMA_AUTO row (or, inside _CUDA_WGMMA_GAP, dequantize + cuBLAS) would run 64-row
# CTAs unsplit in nearly one wave, (min_m, max_m, config) runs the same number of CTAs of the same products as
# 128-row x 256-token CTAs over two K splits summed in pairs; only for N % 128 == 0 (_wgmma_paired_config says
# when). Session 39 runs 1-4 (benchmarks/results/session39, probe_w4a16_gemm.py --rotate-x, sym-fp16, us; paired
# vs 64-row CTAs [bf16]): in grids of 132 CTAs, 2816x7168 M = 768 52.60 vs 58.94 (dequantize + cuBLAS, the
# dispatch there: 62.23) [43.56], 1408x7168 M = 1536 48.36 vs 53.36 [40.29], 4224x7168 M = 512 51.60 vs 58.38
# [41.97]; 2048x7168 M = 1024 (128 CTAs) 49.77 / 52.98 / 45.42 vs 55.50 / 59.20 / 49.06 [41.77 / 44.36 / 40.06];
# 1920x7168 M = 1024 (120) 50.23 vs 56.09 [42.04]. N = 128 R + 64 (2112) would leave a half-empty 128-row tile:
# run 4 gave its last 64 rows to 64-row CTAs over the whole K beside the paired ones (132 CTAs on 2112x7168 at
# M = 1024), 54.56 / 53.43 us vs the 64-row grid's 53.91 / 52.91 (sym-fp16 / asym-bf16): those CTAs take as long
# as in the 64-row grid. Not compiled (notes/s39_mixed_grid.patch).
# Run 5 (same probe; paired (the dispatch now) / 64-row / dequantize + cuBLAS [bf16], us):
#   2816x7168 M = 520 / 600 / 768: 49.46 / 55.47 / 50.01 [30.20], 45.02 / 50.53 / 50.88 [34.17],
#             49.23 / 54.98 / 60.34 [41.08]
#   2560x7168 M = 520 / 600 / 768: 48.85 / 54.76 / 47.42 [29.64], 47.80 / 54.11 / 50.87 [33.39],
#             47.58 / 54.09 / 57.37 [40.18]
#   asym-bf16: 2048x7168 M = 800 / 1024: 45.71 / 49.71 / 59.57 [45.23], 44.94 / 54.03 / 55.49 [40.06]
#              1920x7168 M = 800 / 1024: 48.44 / 52.64 / 50.29 [33.53], 48.75 / 52.67 / 54.02 [40.79]
# The lower bound: dequantize + cuBLAS wins on 2560x7168 at M = 520 and grows ~0.043 us per row while the paired
# grid's time stays (3 token tiles): they cross near M = 545 (2816x7168 ties at 520).
_CUDA_WGMMA_PAIRED: dict[str, tuple[int, int, tuple[int, ...]]] = {"few": (545, 1024, (256, 2, 3, 3, 128))}
# The paired grid needs this share of the SMs from the 64-row grid it replaces (one CTA each): with fewer
# CTAs the 64-row row splits K to fill the GPU, which two fixed splits would not.
_CUDA_WGMMA_PAIRED_MIN_WAVE = 0.875


# Where a shape class's _CUDA_WGMMA_AUTO row runs (not the gap) and N % 192 == 0, (min_m, max_m, config) runs 192-row x
# 176-token CTAs over two K splits summed in pairs where that grid (N / 192 x M / 176 x 2 CTAs) fills between
# _CUDA_WGMMA_PAIRED_MIN_WAVE and all of the SMs: 2112x7168 at M = 881 .. 1056 is 11 x 6 x 2 = 132 CTAs, the 64-row
# row's 33 x 4, with 1.03x the products per CTA but 2.9x fewer x bytes through shared memory (the 64-row CTAs' ring
# and wgmma operand reads together ask ~128 bytes per SM clock, shared memory's width; these ~85). Their 88
# accumulators per thread leave no room for two superblocks' A fragments (ptxas serialized the wgmmas), so sixth
# field 4 double-buffers A over half superblocks (3: one buffer, the group waited for before the next dequantize).
# Session 45 run 1 (benchmarks/results/session45/run1, probe_w4a16_gemm.py --rotate-x, 2112x7168, us, sym-fp16 /
# asym-bf16; the few row (256, 0, 3, 0, 64) [bf16]):
#   M = 1024: (176, 2, 4, 3, 192, 4) 54.36 / 56.17, (.., 3, 3, 192, 4) 56.28 / 58.06, (.., 4, 3, 192, 3) 58.40 / 59.53,
#             (.., 3, 3, 192, 3) 58.43 / 59.29 vs the row 56.51 / 56.57 [47.27 / 49.51]
#   M = 768:  (176, 2, 4, 3, 192, 4) 49.82 / 50.24 vs the row 52.01 / 51.18; the dispatch there (the gap's
#             dequantize + cuBLAS) 44.66 / 45.25 [32.58 / 32.59]: the gap stays.
# Run 2 (bench_linear --ms 1024, this table emptied / as committed, alternated; us [bf16]): 2112x7168 GPTQ sym 50.5 /
# 48.3 [43.5 / 43.6] and 50.4 / 48.3 [43.4 / 43.5], with zero points 50.9 / 48.7 [43.5 / 43.6]; run 3's acceptance
# file: 48.3 [43.5], 1.110x bf16 (target 1.15; session 41's file 1.167 with the 64-row row). Run 4 (the probe as in
# run 1, the dispatch = this config there): M = 936 / 976 / 1024 54.83 / 53.63 / 53.99 (sym) and 53.92 / 53.47 / 54.63
# (asym) vs the few row 58.05 / 56.58 / 56.13 and 55.87 / 55.27 / 55.63, dequantize + cuBLAS 54.41 / 60.63 / 60.63 and
# 54.20 / 60.89 / 61.82 [bf16 40.55 / 46.98 / 46.98, 40.19 / 46.95 / 47.98]: at the gap's edge the two tie.
# Run 5 (same probe, inside the gap, sym / asym): 192-row CTAs x 2 splits in pairs lose to or tie dequantize + cuBLAS
# except where cuBLAS itself is slow: 128 tokens M = 600 / 768 42.38 / 45.45 and 42.89 / 46.23 vs 39.20 / 45.52 and
# 39.81 / 46.33; 176 tokens M = 800 / 900 49.88 / 54.59 and 49.95 / 52.97 vs 54.12 / 51.39 and 54.18 / 52.63 [bf16
# M = 800 44.87, against 31.51 at 768 and 37.54 at 900]. The gap stays as it is.
_CUDA_WGMMA_WIDE: dict[str, tuple[int, int, tuple[int, ...]]] = {"few": (129, 1024, (176, 2, 4, 3, 192, 4))}


def _fills_one_wave(x: torch.Tensor, ctas: int) -> bool:
    """Whether a grid of ``ctas`` one-per-SM CTAs fills between :data:`_CUDA_WGMMA_PAIRED_MIN_WAVE` and all of the
    SMs of x's GPU."""
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    return _CUDA_WGMMA_PAIRED_MIN_WAVE * sms <= ctas <= sms


def _wgmma_wide_config(x: torch.Tensor, packed: W4A16Weights) -> tuple[int, ...] | None:
    """:data:`_CUDA_WGMMA_WIDE`'s config (tokens, splits, .., rows = 192, ..) where N % rows == 0, M is in its class's
    range and in the rows the wgmma GEMM takes (:func:`_wgmma_takes`), and its grid (N / rows x M / tokens x splits
    CTAs) fills one wave (:func:`_fills_one_wave`); else None."""
    cls = _cuda_shape_class(packed.n, packed.k)
    row = _CUDA_WGMMA_WIDE.get(cls)
    m = x.shape[0]
    if row is None:
        return None
    lo, hi, cfg = row
    tokens, splits, rows = cfg[0], cfg[1], cfg[4]
    if packed.n % rows != 0 or not lo <= m <= hi or not _wgmma_takes(cls, m):
        return None
    return cfg if _fills_one_wave(x, packed.n // rows * -(-m // tokens) * splits) else None


def _wgmma_paired_config(x: torch.Tensor, packed: W4A16Weights) -> tuple[int, ...] | None:
    """:data:`_CUDA_WGMMA_PAIRED`'s config where N % 128 == 0, M is in its class's range and the 64-row grid
    (N / 64 x M / 256 CTAs) fills between :data:`_CUDA_WGMMA_PAIRED_MIN_WAVE` and all of the GPU's SMs; else
    None."""
    row = _CUDA_WGMMA_PAIRED.get(_cuda_shape_class(packed.n, packed.k))
    m = x.shape[0]
    if row is None or packed.n % 128 != 0 or not row[0] <= m <= row[1]:
        return None
    return row[2] if _fills_one_wave(x, packed.n // 64 * -(-m // 256)) else None


_CUDA_GEMM_CONFIG: tuple[int, int, int, int] = (0, 0, 0, 0)
_CUDA_GEMM_AUTO: dict[str, tuple[tuple[int, tuple[int, ...]], ...]] = {
    "many": ((32, (8, 32, 4, 4)),),
}
# Register-kernel launch config (row tiles per CTA, superblocks per chunk, warps per CTA); 0 = the
# launcher's heuristic (csrc/w4a16_gemv_launch.cu w4_gemv_resolve); used when _CUDA_RING = -1.
_CUDA_CONFIG: tuple[int, int, int] = (0, 0, 0)
# Ring kernel shape code WR*1000 + WK*100 + S*10 + ST (w4a16_gemv.cuh kRingNT1 / kRingNT2), 0 = the
# launcher's choice (ring where it applies: groups >= 128 or per channel, N % 4 == 0), -1 = round
# 1's register kernel; 10000 + the same digits = the bulk ring kernel (sm_90 cp.async.bulk on
# mbarriers, w4a16_gemv.cuh kBulkNT1 / kBulkNT2; N % 16 == 0, K % 128 == 0, 16-byte aligned x /
# scales / zeros).
_CUDA_RING = 0
# Per-class kernels for automatic calls (_CUDA_RING == 0, no config), ahead of the launcher's own
# choice: {(shape class, tiles): code}. Class "short" (K <= 2048: few superblocks per row, e.g.
# 24576x1536), "few" (N <= 3072: about one 16-row tile per SM, e.g. 2112x7168) or "many"
# (otherwise, e.g. 7168x16384). tiles: 1 = M <= 8, 2 = 9 <= M <= 16, 0 = M == 1 only and 4 = M <= 4
# (looked up in the order 0, 4, then 1: _cuda_table_entry). code: a ring code (< 10000 cp.async ring, >= 10000 bulk ring), -1 = the register
# kernel, 0 / absent = the launcher's choice; a ring / bulk code is used only where that kernel
# applies (_cuda_ring_ok / _cuda_bulk_ok), else the launcher decides.
# Session 6 run 2 (benchmarks/results/session6/run2/w4ring, H200, cold weights, alternated replays,
# us; "launcher" = the launcher's choice, which was the dispatch before this table):
#   few  M=1: register 6.32 (launcher, = register) vs bulk 11824 7.46        -> ('few', 0): -1
#   few  M=4 / 8: bulk 11824 6.51 / 6.78 vs register 7.09 / 8.32            -> ('few', 1): 11824
#   few  M=16: bulk 11814 10.42 vs register 11.71                           -> ('few', 2): 11814
#     (run 8: the register kernel with R1 U1 W8 pipe, _CUDA_REG_AUTO, 10.05 vs 10.31: now -1)
#   short M=1: ring 4143 11.05 (launcher) vs 4124 11.93, register 15.75     -> ('short', 0): 4143
#   short M=4 / 8: ring 4124 12.18 / 12.50 vs 4143 (launcher) 15.23 / 15.68 -> ('short', 1): 4124
#   short M=16: register 18.58 vs ring 4124 22.03, 2224 20.16              -> ('short', 2): -1
#   many M=1 / 4 / 8 / 16: register 31.44 / 32.09 / 32.72 / 47.76 vs best bulk 32.59 (11824) /
#     43.38 / 47.73 (11814) / 56.30 (12224)                                 -> ('many', 1|2): -1
#   (11824 at M = 16 was the launch failure: 339 KB of shared memory; it is no longer compiled for
#   M > 8.) Re-measured by benchmarks/gpu_w4ring.sh (its AUTO lines: this table vs the launcher).
# Session 10 run 3 (benchmarks/results/session10/run3, bench_w4reg.py, same method): the register
# kernel with chunks dealt round-robin over the warps (pipe 2, _CUDA_REG_AUTO) beats the rings on
# short rows: M = 1 / 4 / 8 R4 U1 W4 pipe 2 10.10 / 10.38 / 10.68 vs 4143 11.16, 4124 12.01 / 12.32
# -> ('short', 0|1): -1. ('few', 1) stays 11824: 6.57 / 7.06 at M = 4 / 8 vs R1 U2 W16 pipe 2 fold
# 6.64 and R1 U2 W14 pipe 2 7.81.
# Session 17 run 7 (benchmarks/results/session17/run7, bench_w4reg.py, same method; the register
# kernel now loads its first chunk before griddepcontrol.wait): few M=4 R1 U2 W16 pipe 2 5.28 (sym-fp16)
# / fold 5.12 (asym-bf16) vs 11824 6.29 / 6.25 -> ('few', 4): -1; M=8 stays 11824 (6.41 vs 6.69).
# Session 22 run 8 (benchmarks/results/session22/run8, bench_w4tma.py: sym-fp16 layer, bf16 x, cold weights,
# alternated replays, us; the TMA ring kernel csrc/w4a16_tma.cuh, codes F R KS ST CW, against this table
# before the entries below, "auto" = the register kernel there, and bf16 F.linear):
#   many M=1: 32844 (fold) 19.63, 22844 19.88 vs auto 23.34 [bf16 58.80]      -> ('many', 0): 32844
#   many M=4: 32844 20.01, 22844 20.16 vs 24.06 [60.05]                        -> ('many', 4): 32844
#   many M=8: 22464 21.56 vs 25.22 [60.64] (KS 8 codes 28-29: at 8 x rows their 132 KB ring fits one
#            CTA per SM, so 224 CTAs run in two waves; 22464's 99 KB fits two)         -> ('many', 1)
#   many M=16: 24444 29.13, 34444 29.50 vs 33.91 [63.46]                       -> ('many', 2): 24444
# Weights alone stream at 15.2 us (code 82844: consumers only hand stages back); the rest is the
# consumers' dequantize + mma. On few (2112x7168: 66 CTAs of 32 rows) and short rows (24576x1536: 12
# superblocks, one stage or two) it lost everywhere (run 2: few M=1 5.83 vs 4.62, short M=1 10.39 vs
# 8.00), so those classes keep their kernels. A TMA code where the kernel does not apply (fp32 scales,
# misaligned operands) falls back to the register kernel with its _CUDA_REG_AUTO config.
# Session 23 run 1 (benchmarks/results/session23/run1, bench_w4tma.py, same method) at M = 8 and 16 on
# the few / short classes: few M=8 21844 5.68 vs auto (bulk ring 11824) 6.99 [bf16 13.27]
# -> ('few', 1): 21844 (M = 5 / 6 / 7 / 8 in run 7: 4.82 / 5.13 / 5.34 / 5.62 vs 11824 6.46 / 6.69 /
# 6.67 / 6.85); few M=16 22444 10.61 vs 9.18, short M=8 / 16 12.92 / 17.60 vs 8.94 / 12.50: unchanged.
# Session 24 runs 2 and 3 (benchmarks/results/session24, bench_w4tma.py, same method), one 16-row tile
# per CTA (132 CTAs on 2112 rows) at two token tiles: few M=16 21848 (eight consumer warps) 8.32 vs auto
# (the register kernel) 9.11 [bf16 13.64]; 21844 (four) 9.61 / 9.44, M=12 8.77 vs 8.16. Nsight Compute of
# 21844 at M=16: 0.18 instructions issued per scheduler per cycle, 82 % of cycles with no eligible warp,
# L2 20 %, DRAM 14 %: each scheduler's one consumer warp waits out its own dependencies, so twice the
# warps per SM run faster. Run 4, M = 9 / 10 / 12 / 14 / 16: 21848 7.19 / 7.17 / 7.52 / 7.86 / 8.25 vs
# the register kernel 7.10 / 7.73 / 7.78 / 8.44 / 9.10 (M = 9 within 1.3 %)  -> ('few', 2): 21848
# Lost and removed (session 24 runs 6, 7 and 9): x multicast over CTA pairs (M = 16 9.37 vs 8.35; 7168x16384
# 30.79 vs 29.38) and a token split, two one-tile CTAs per row tile (M = 16 8.37 vs 8.33, M = 9 8.55 vs 7.17).
# Session 24 run 10 (same method): the k-step split (F = 7: pairs of consumer warps, each taking 4 of a
# superblock's 8 k-steps) on many M=16: 74444 (four row tiles, 8 consumer warps) 27.64 vs 24444 29.08
# [bf16 63.70] -> ('many', 2): 74444; on few M=16 71848 (16 warps) 8.48 vs 21848 8.33: unchanged.
# Session 25 runs 1 and 2 (benchmarks/results/session25/run1, run2: bench_w4tma.py, same method): the
# pair split (F = 5: a cluster of two CTAs per 32-row tile, each half of K, summed over distributed
# shared memory; 6 = with the k-step split as well) puts all 132 SMs on the 66 row tiles of 2112x7168:
#   few M=1: 52444 4.65 vs auto (the register kernel) 4.64 [bf16 13.00]                -> ('few', 0): -1
#   few M=4: 52444 4.87 vs 5.26 (21844 4.94) [13.25]                                  -> ('few', 4): 52444
#   few M=8: 52444 5.06 / 5.06 vs auto (21844) 5.85 / 5.73 [13.20 / 13.04]            -> ('few', 1): 52444
#   few M=9 / 12 / 16: 62434 6.34 / 6.47 / 6.98 (run 2: M = 16 7.09) vs auto (21848) 7.09 / 7.59 / 8.29
#            (8.32) [13.21 / 13.31 / 13.34]                                          -> ('few', 2): 62434
# Nsight Compute at M = 16 (run 1): 21848 issued 0.25 instructions per scheduler per cycle with 75 % of
# cycles without an eligible warp, L2 22.5 %, DRAM 16.8 %; 62444 0.30, 70 %, 26.5 %.
# Session 26 runs 3-4 (benchmarks/results/session26, same method): x in TMA's 128-byte swizzle (code
# 124444 = 24444 with swizzled x; csrc/w4a16_tma.cuh kTmaXHalf) on many M=16: 24444 swizzled 26.39 vs
# 74444 swizzled 28.43 (run 4), unswizzled 74444 27.61 (run 3) [bf16 63.46]    -> ('many', 2): 124444;
# run 5 (only 124444 swizzled): M = 9 / 16 124444 26.35 / 26.32 vs 74444 26.77 / 27.46, 24444 26.99 /
# 28.92 [62.51 / 63.66]. On few rows swizzled x gained nothing (62434 M = 16 7.02 vs 7.05): unchanged.
# Session 30 run 1 (benchmarks/results/session30/run1, same method): swizzled x from one 3-D box per
# superblock (codes 2xxxxx, csrc/w4a16_tma.cuh tma_x3d) instead of two:
#   few M=9 / 12 / 16: 262434 6.20 / 6.33 / 6.36 vs 62434 (auto) 6.25 / 6.51 / 6.97 [bf16 13.24 / 13.38 / 13.37]
#   many M=9 / 16: 224444 25.62 / 25.87 vs 124444 (auto) 26.33 / 26.27 [62.55 / 63.58]
#                                                              -> ('few', 2): 262434, ('many', 2): 224444
# Session 33 run 1 (benchmarks/results/session33/run1, same method): the pair split of 112-row tiles
# (257434: 64 clusters of two CTAs, each half of K; csrc/w4a16_tma.cuh tma_row_block):
#   many M=9 / 12 / 16: 257434 22.85 / 22.85 / 22.65 vs 224444 (auto) 25.85 / 25.94 / 25.64 [bf16 62.34 /
#            62.97 / 63.37]; asym-bf16 M = 16 22.89 vs 25.94                              -> ('many', 2): 257434
# Run 3 (benchmarks/results/session33/run3, same method), the same code at one token tile:
#   many M=1 / 4 / 5 / 8: 257434 18.82 / 19.20 / 19.18 / 19.28 vs auto (32844 / 32844 / 22464 / 22464) 19.79 /
#            20.31 / 21.24 / 21.68 [bf16 64.24 / 65.04 / 65.25 / 65.72]; asym-bf16 M = 1 / 8 18.84 / 19.47 vs
#            20.02 / 22.22                                             -> ('many', 0 | 4 | 1): 257434
# Session 30 run 7 (benchmarks/results/session30/run7, same method): the same at one token tile:
#   few M=2 / 4 / 8: 252444 4.69 / 4.70 / 4.74 vs 52444 (auto) 4.71 / 4.87 / 5.11 [bf16 13.17 / 13.04 / 13.05]
#                                                                     -> ('few', 4), ('few', 1): 252444
#   many M=1 / 4 / 8: 232844 26.25 / 26.65 / 26.43, 222464 22.77 / 22.82 / 22.52 vs 32844 19.91 / 20.48 and
#   22464 21.66 at M = 8 [bf16 60.24 / 61.25 / 61.90]: unchanged
# Session 37 run 3 (benchmarks/results/session37/run3, same method): the PDL trigger before the main loop at
# two token tiles as well (seventh code digit E = 1; 262434 triggers after its main loop):
#   few M=9 / 12 / 16: 1262434 5.57 / 5.64 / 5.64 vs 262434 (auto) 6.27 / 6.30 / 6.36 [bf16 13.34 / 13.32 /
#            13.38]; asym-bf16 M = 9 / 16 5.67 / 5.76 vs 6.50 / 6.46                    -> ('few', 2): 1262434
#   many M=9 / 16: 1257434 22.99 / 22.98 vs 257434 22.90 / 22.92: unchanged
_CUDA_RING_AUTO: dict[tuple[str, int], int] = {
    ("few", 0): -1, ("few", 4): 252444, ("few", 1): 252444, ("few", 2): 1262434,
    ("short", 0): -1, ("short", 1): -1, ("short", 2): -1,
    ("many", 0): 257434, ("many", 4): 257434, ("many", 1): 257434, ("many", 2): 257434,
}

# Register-kernel configs (row tiles per CTA, superblocks per chunk, warps, pipe) for automatic
# calls that _CUDA_RING_AUTO sends to the register kernel (-1). Keys (shape class, tiles) as there;
# absent =
# _CUDA_CONFIG (the launcher's heuristic). Only for groups of >= 128 or per channel (smaller groups
# have their own fixed tile). Set from benchmarks/bench_w4reg.py (gpu_w4reg.sh).
# H200, session 6 run 8 (benchmarks/results/session6/run8/w4reg: cold weights, alternated replays,
# each timed replay after an untimed one of the same graph; us vs the launcher's config "reg auto"
# and the table before this entry "auto", same round):
#   many M=1 / 2 / 4: R1 U2 W4 25.28 / 25.57 / 27.91 vs reg auto 31.04 / 31.01 / 31.30
#   many M=8: R1 U2 W4 34.56 vs reg auto 31.93 (R2 U2 W4 31.51, within 2 %): launcher's config
#   many M=16: R2 U1 W4 pipe 41.30 vs reg auto 46.80, R2 U1 W4 (run 6's entry) 43.84
#   few M=16: R1 U1 W8 pipe 10.05 vs bulk ring 11814 10.31 (the ring table's entry before), reg auto 11.46
#   short M=16: R2 U1 W2 14.14 vs R2 U1 W4 (run 6's entry) 15.99, reg auto 18.31
#   few M=1: R1 U2 W16 6.18 vs reg auto 6.21; short M=1: ring 4143 10.95 stays (best register 12.16)
# A 5th element is the zero-point fold (csrc/w4a16_gemv.cuh FOLD: 1 = x sums by an all-ones mma, the
# (magic + q) fragments unshifted; 0 / absent = off). Session 7 run 3
# (benchmarks/results/session7/run3/w4fold, same method as run 8; us, fold 1 vs fold 0 at the same
# config, the committed dispatch "auto" in brackets):
#   few M=1 (R1 U2 W16): 5.91 vs 6.27 [6.27]        -> ('few', 0): fold 1
#   short M=16 (R2 U1 W2): 13.33 vs 14.27 [14.30]   -> ('short', 2): fold 1
#   many M=4 (R1 U2 W4): 26.32 vs 27.95 [27.99]     -> ('many', 4): fold 1
#   many M=1: 25.31 vs 25.30 (tie: that case is not issue-bound), many M=16: 42.34 vs 41.89, few
#   M=16: 10.66 vs 10.31: fold off. Fold 2 (the zero term as a second mma per plane, removed since)
#   won nowhere but short M=1 / 4, where ring 4143 is faster still.
# Session 7 runs 8 and 9 (benchmarks/results/session7/run8, run9: w4reg, same method): the new R4 U1
# at two token tiles (code 4120) on many M=16: R4 U1 W8 36.21 / 36.33 vs R2 U1 W4 pipe (the entry
# before) 41.29 / 41.70 -> ('many', 2): (4, 1, 8, 0); four row tiles share every x fragment, whose
# re-reads from L2 outweigh the weights at M = 9..16. On 2112x7168 (33 CTAs) it is slower: 15.79.
# Session 10 runs 2 and 3 (benchmarks/results/session10/run2, run3: bench_w4reg.py, same method; us,
# the new entry vs the committed dispatch "auto" in the same round): pipe 2 (chunks of U superblocks
# dealt round-robin over the warps, so a CTA's warps read neighbouring pieces of each row) wins on
# the few- and short-row classes and at M > 4 on many rows, not at M <= 4 there (R1 U2 W4 pipe 2
# 25.69 vs pipe 0 25.11):
#   few M=1: R1 U2 W16 pipe 2 fold 5.45 / 5.48 vs 5.97 / 6.04 (pipe 0 fold)      -> ('few', 0)
#   short M=1 / 4 / 8: R4 U1 W4 pipe 2 10.10 / 10.38 / 10.68 vs rings 11.16 / 12.01 / 12.32
#     (run 2 M=1: 10.00 vs 10.96)                                                -> ('short', 0|1)
#   short M=16: R2 U1 W2 pipe 2 13.96 vs 19.32 (R2 U1 W2 fold; pipe 0 no fold 14.93) -> ('short', 2)
#   many M=8: R2 U2 W6 pipe 2 30.21 vs the launcher's config 32.18                 -> ('many', 1)
#   many M=16: R4 U1 W8 pipe 2 36.71 vs 38.77 (pipe 0)                           -> ('many', 2)
# The fold entries were measured on asymmetric layers (session 7 run 3 above). On symmetric layers
# (GPTQ sym: fp16 scales, no zero points; bench_w4reg.py --layer sym-fp16, session 15 run 1 and
# session 16 runs 1-2, benchmarks/results/session15/run1, session16/run1, run2; us, fold 1 vs 0 at
# the same config) the fold loses or ties: many M=2 (R1 U2 W4) 25.27 vs 23.93, M=4 26.02 / 26.22 vs
# 25.58 / 25.23, M=1 25.14 / 25.18 vs 24.19 / 24.18; few M=1 (R1 U2 W16 pipe 2) 5.46 vs 5.42
# -> _cuda_auto_reg drops the fold where the layer has no zero points.
# Session 17 run 7 (benchmarks/results/session17/run7, same method, the kernel with its first chunk
# loaded before griddepcontrol.wait; us, best vs the table before, sym-fp16 / asym-bf16):
#   many M=4: R2 U2 W6 pipe 2 24.35 / 25.75 vs R1 U2 W4 (fold on asym) 25.54 / 25.92  -> ('many', 4)
#   few M=4: R1 U2 W16 pipe 2 5.28 / fold 5.12 vs ring 11824 6.29 / 6.25               -> ('few', 4)
#   few M=16 (sym): R1 U2 W8 9.28 vs R1 U1 W8 pipe 1 9.56                              -> ('few', 2)
#   every other class and M: the entries above stay best or within 1 %.
# Session 17 run 12 (benchmarks/results/session17/run12, asym-bf16, M = 1 / 4 / 8 / 16, the code with
# both PDL changes): every entry best or within 1 % except short M=16, R2 U1 W2 pipe 2 fold 12.70 vs
# 13.42 without the fold -> ('short', 2) takes the fold (a symmetric layer still runs it without).
_CUDA_REG_AUTO: dict[tuple[str, int], tuple[int, ...]] = {
    ("many", 0): (1, 2, 4, 0), ("many", 4): (2, 2, 6, 2), ("many", 1): (2, 2, 6, 2), ("many", 2): (4, 1, 8, 2),
    ("few", 0): (1, 2, 16, 2, 1), ("few", 4): (1, 2, 16, 2, 1), ("few", 2): (1, 2, 8, 0),
    ("short", 0): (4, 1, 4, 2), ("short", 1): (4, 1, 4, 2), ("short", 2): (2, 1, 2, 2, 1),
}

# The x-staged kernel (pipe 3, csrc/w4a16_xs.cuh: the warps split the rows, x copied once per CTA into
# shared memory) for automatic calls where it applies (_cuda_xs_ok), ahead of _CUDA_REG_AUTO (which is
# then its fallback). Keys as _CUDA_REG_AUTO's; values (row tiles per warp, superblocks per chunk,
# warps, 3[, fold]).
# Session 32 run 3 (benchmarks/results/session32/run3, bench_w4reg.py --xs: cold weights, alternated
# replays, us; "auto" = the register kernel's entry R2 U1 W2 pipe 2, fold on asymmetric layers):
#   short M=9 / 12 / 16 (sym-fp16): R1 U2 W12 10.30 / 10.40 / 10.58 vs auto 11.44 / 11.76 / 12.50 [bf16 20.89 /
#     20.95 / 21.03]; W6 (two CTAs per SM) 11.67 at M = 16, R1 U1 W12 11.93, R2 U1 W8 13.70
#   short M=16 (asym-bf16): R1 U2 W12 without the fold 10.79 vs auto 12.65 (the fold lost at every config)
#                                                                               -> ('short', 2): (1, 2, 12, 3)
_CUDA_XS_AUTO: dict[tuple[str, int], tuple[int, ...]] = {("short", 2): (1, 2, 12, 3)}

_SCALE_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@dataclass
class W4A16Weights:
    """qlinear's packed weight-only layer (see the module docstring and ``qlinear.reference.w4a16``).

    Tensors (all on one device):
      qweight   int32 ``[N, Kp * bits // 32]`` superblock-packed fields, Kp = K rounded up to
                ``superblock_cols(bits)``.
      scales    ``[G, N]`` bf16 / fp16 / fp32 (exact copy of the canonical scales).
      zeros     uint8 ``[G, N]`` or None (symmetric).
      perm      int32 ``[S, K]`` per-shard column order (act-order) or None.
      row_bounds int32 ``[S + 1]``: shard s owns rows ``row_bounds[s]:row_bounds[s+1]``.
    Ints: ``bits`` (4 or 8), ``group_size`` (g; K for per-channel), ``n``, ``k``; ``shard_rows`` is
    ``row_bounds`` as a host tuple (kernels need it to size the grid without a device sync).
    """

    qweight: torch.Tensor
    scales: torch.Tensor
    zeros: Optional[torch.Tensor]
    perm: Optional[torch.Tensor]
    row_bounds: torch.Tensor
    bits: int
    group_size: int
    n: int
    k: int
    shard_rows: tuple[int, ...]

    @property
    def num_groups(self) -> int:
        return self.scales.shape[0]

    @property
    def num_shards(self) -> int:
        return len(self.shard_rows) - 1

    @property
    def device(self) -> torch.device:
        return self.qweight.device

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every tensor (plus an int64 ``meta`` = [bits, group_size, n, k]) for buffer registration."""
        out = {"qweight": self.qweight, "scales": self.scales, "row_bounds": self.row_bounds}
        if self.zeros is not None:
            out["zeros"] = self.zeros
        if self.perm is not None:
            out["perm"] = self.perm
        out["meta"] = torch.tensor(
            [self.bits, self.group_size, self.n, self.k], dtype=torch.int64, device=self.qweight.device
        )
        return out

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor]) -> "W4A16Weights":
        """Inverse of :meth:`tensors` (reads ``meta`` and ``row_bounds`` to the host once)."""
        bits, group_size, n, k = (int(v) for v in tensors["meta"].tolist())
        bounds = tuple(int(v) for v in tensors["row_bounds"].tolist())
        return cls(
            qweight=tensors["qweight"],
            scales=tensors["scales"],
            zeros=tensors.get("zeros"),
            perm=tensors.get("perm"),
            row_bounds=tensors["row_bounds"],
            bits=bits,
            group_size=group_size,
            n=n,
            k=k,
            shard_rows=bounds,
        )


def _check_int(name: str, t: torch.Tensor, shape: tuple[int, ...], bits: int) -> None:
    if t.dtype.is_floating_point or t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name}: expected an integer tensor, got {describe(t)}")
    if tuple(t.shape) != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {describe(t)}")
    if t.numel() and (int(t.min()) < 0 or int(t.max()) > (1 << bits) - 1):
        raise ValueError(
            f"{name}: values must lie in [0, {(1 << bits) - 1}] for bits={bits}, "
            f"got [{int(t.min())}, {int(t.max())}]"
        )


def _narrow_scales(scales: torch.Tensor, scale_dtype: torch.dtype | None) -> torch.Tensor:
    """Scales in the narrowest float dtype holding every value exactly (or ``scale_dtype``)."""
    if scale_dtype is not None:
        back = scales.to(scale_dtype).to(scales.dtype)
        if not torch.equal(back, scales):
            raise ValueError(f"scale_dtype={scale_dtype} cannot hold the scales exactly ({describe(scales)})")
        return scales.to(scale_dtype)
    if scales.dtype in (torch.bfloat16, torch.float16):
        return scales
    for dt in (torch.bfloat16, torch.float16):
        narrow = scales.to(dt)
        if torch.equal(narrow.to(scales.dtype), scales):
            return narrow
    return scales.to(torch.float32)


def _act_order_perms(
    g_idx: Sequence[tuple[int, int, torch.Tensor]], n: int, k: int, num_groups: int, group_size: int
) -> tuple[list[int], list[torch.Tensor]] | None:
    """Row bounds and per-shard permutations, or None when every range is the identity order."""
    bounds = [0]
    perms: list[torch.Tensor] = []
    for i, rng in enumerate(g_idx):
        r0, r1, gi = rng
        if r0 != bounds[-1] or r1 <= r0:
            raise ValueError(f"g_idx[{i}]: row range ({r0}, {r1}) must start at {bounds[-1]} and be non-empty")
        if tuple(gi.shape) != (k,) or gi.dtype.is_floating_point:
            raise ValueError(f"g_idx[{i}]: expected an integer tensor of shape ({k},), got {describe(gi)}")
        gi = gi.to(torch.int64)
        counts = torch.bincount(gi.clamp(0, num_groups - 1), minlength=num_groups)
        if int(gi.min()) < 0 or int(gi.max()) >= num_groups or not bool((counts == group_size).all()):
            raise ValueError(
                f"g_idx[{i}]: every group in [0, {num_groups}) must hold exactly group_size={group_size} "
                f"columns (got values in [{int(gi.min())}, {int(gi.max())}], counts {counts.tolist()[:8]}...)"
            )
        # Stable sort keeps the original column order inside a group (GPTQ's quantization order
        # does not matter: any order that makes groups contiguous is exact).
        perm = torch.sort(gi, stable=True).indices
        if perms and torch.equal(perm, perms[-1]):
            bounds[-1] = r1  # same order as the previous shard: merge, fewer shards per launch
        else:
            perms.append(perm)
            bounds.append(r1)
    if bounds[-1] != n:
        raise ValueError(f"g_idx: row ranges end at {bounds[-1]}, expected N={n}")
    identity = torch.arange(k, device=perms[0].device)
    if all(torch.equal(p, identity) for p in perms):
        return None
    return bounds, perms


def pack_w4a16(
    q: torch.Tensor,
    zeros: torch.Tensor | None,
    scales: torch.Tensor,
    group_size: int,
    *,
    bits: int = 4,
    g_idx: Sequence[tuple[int, int, torch.Tensor]] | None = None,
    device: torch.device | str | None = None,
    scale_dtype: torch.dtype | None = None,
) -> W4A16Weights:
    """Repack the canonical form (module docstring) into :class:`W4A16Weights` on ``device``.

    ``bits`` is 4 or 8. Scales keep their values exactly: fp32 scales that fit bf16 or fp16
    losslessly are stored narrow (fewer bytes per decode step); ``scale_dtype`` forces a dtype and
    raises if that would round. Host syncs happen here (range checks), never in the GEMM.
    """
    if bits not in (4, 8):
        raise ValueError(f"bits: expected 4 or 8, got {bits}")
    if q.dim() != 2:
        raise ValueError(f"q: expected [N, K], got {describe(q)}")
    n, k = q.shape
    if group_size in (-1, k):
        group_size, num_groups = k, 1
    elif group_size <= 0 or k % group_size:
        raise ValueError(f"group_size: expected -1, K={k} or a divisor of K, got {group_size}")
    else:
        num_groups = k // group_size
    if not scales.dtype.is_floating_point or tuple(scales.shape) != (n, num_groups):
        raise ValueError(f"scales: expected float [{n}, {num_groups}], got {describe(scales)}")
    _check_int("q", q, (n, k), bits)
    if zeros is not None:
        _check_int("zeros", zeros, (n, num_groups), bits)
    device = torch.device(device) if device is not None else q.device

    q = q.to(device=device, dtype=torch.int64)
    bounds, perms = [0, n], None
    if g_idx is not None:
        found = _act_order_perms(
            [(r0, r1, gi.to(device)) for r0, r1, gi in g_idx], n, k, num_groups, group_size
        )
        if found is not None:
            bounds, perms = found
            q = torch.cat([q[r0:r1, perms[s]] for s, (r0, r1) in enumerate(zip(bounds[:-1], bounds[1:]))])

    # Superblock packing: field i of word j of superblock sb <- column sb*SB + i*16 + j.
    fields = 32 // bits
    sb_cols = superblock_cols(bits)
    kp = round_up(k, sb_cols)
    q = F.pad(q, (0, kp - k))
    q = q.view(n, kp // sb_cols, fields, SUPERBLOCK_WORDS)
    shifts = (torch.arange(fields, device=device) * bits).view(1, 1, fields, 1)
    words = (q << shifts).sum(dim=2)  # disjoint bit fields: the sum is a bitwise or
    words = torch.where(words >= (1 << 31), words - (1 << 32), words).to(torch.int32)
    qweight = words.reshape(n, kp // fields).contiguous()

    scales_t = _narrow_scales(scales.to(device), scale_dtype).t().contiguous()
    zeros_t = None if zeros is None else zeros.to(device=device, dtype=torch.uint8).t().contiguous()
    perm_t = None if perms is None else torch.stack(perms).to(torch.int32).contiguous()
    return W4A16Weights(
        qweight=qweight,
        scales=scales_t,
        zeros=zeros_t,
        perm=perm_t,
        row_bounds=torch.tensor(bounds, dtype=torch.int32, device=device),
        bits=bits,
        group_size=group_size,
        n=n,
        k=k,
        shard_rows=tuple(bounds),
    )


# --------------------------------------------------------------------------------------------
# backend choice
# --------------------------------------------------------------------------------------------


def triton_supported(packed: W4A16Weights) -> bool:
    """Layouts the Triton / dequant kernels take: group size a multiple of 16 (planes of 16 columns)."""
    return packed.num_groups == 1 or packed.group_size % 16 == 0


def cuda_supported(x: torch.Tensor, packed: W4A16Weights, *, check_pointers: bool = True) -> bool:
    """Cases the CUDA tensor-core decode kernel takes (shapes, dtypes, strides, alignment).

    4-bit, no act-order permutation, x fp16 / bf16 on CUDA with M >= 1 rows (more than
    :data:`_CUDA_BLOCK_M` run as blocks of that many rows, one launch each, into one output), K a multiple
    of 4, group size per channel, a multiple of 128, or 16 / 32 / 64; x's pointer 8-byte aligned
    and its row stride a multiple of 4 elements. Everything else takes the Triton path.
    ``check_pointers=False`` leaves out the two pointer checks (torch.compile cannot trace a
    data pointer; the op re-checks them at run time and takes the Triton kernel if they fail).
    """
    if x.device.type != "cuda" or x.dtype not in (torch.float16, torch.bfloat16):
        return False
    if packed.bits != 4 or packed.perm is not None or packed.k % 4 or x.shape[-1] != packed.k:
        return False
    m = x.numel() // max(x.shape[-1], 1)
    if m < 1:
        return False
    g = packed.group_size
    if packed.num_groups > 1 and not (g % 128 == 0 or g in (16, 32, 64)):
        return False
    if (m > 1 and x.dim() >= 2 and x.stride(-2) % 4) or packed.qweight.stride(0) % 4:
        return False
    return not check_pointers or _cuda_pointers_ok(x, packed)


def _cuda_pointers_ok(x: torch.Tensor, packed: W4A16Weights) -> bool:
    return x.data_ptr() % 8 == 0 and packed.qweight.data_ptr() % 16 == 0


def cuda_gemm_supported(x: torch.Tensor, packed: W4A16Weights, *, check_pointers: bool = True) -> bool:
    """Cases the CUDA W4A16 GEMM (``csrc/w4a16_gemm.cuh``) takes: 4-bit, no act-order permutation,
    x fp16 / bf16 on CUDA with M >= 1 rows, K a multiple of 8, N a multiple of 4, groups per channel
    or a multiple of 128, x's rows a multiple of 8 elements apart, x / qweight 16-byte aligned
    and scales / zeros 4-byte aligned (``check_pointers`` as in :func:`cuda_supported`)."""
    if x.device.type != "cuda" or x.dtype not in (torch.float16, torch.bfloat16):
        return False
    if packed.bits != 4 or packed.perm is not None or packed.k % 8 or x.shape[-1] != packed.k:
        return False
    if not _grouped_128(packed):
        return False
    m = x.numel() // max(x.shape[-1], 1)
    if m < 1 or (m > 1 and x.dim() >= 2 and x.stride(-2) % 8) or packed.qweight.stride(0) % 4 or packed.n % 4:
        return False
    return not check_pointers or _cuda_gemm_pointers_ok(x, packed)


def _cuda_gemm_pointers_ok(x: torch.Tensor, packed: W4A16Weights) -> bool:
    zeros_ok = packed.zeros is None or packed.zeros.data_ptr() % 4 == 0
    return (x.data_ptr() % 16 == 0 and packed.qweight.data_ptr() % 16 == 0
            and packed.scales.data_ptr() % 4 == 0 and zeros_ok)


def cuda_wgmma_supported(x: torch.Tensor, packed: W4A16Weights, *, check_pointers: bool = True) -> bool:
    """Cases the Hopper wgmma W4A16 GEMM (``csrc/w4a16_wgmma.cuh``) takes: those of
    :func:`cuda_gemm_supported`, on a GPU that runs the extension's sm_90a device code (an sm_90
    GPU and a build for sm_90a; asked once per device, never during a graph capture or a trace)."""
    return cuda_gemm_supported(x, packed, check_pointers=check_pointers) and _wgmma_built(x.device)


_WGMMA_BUILT: dict[int, bool] = {}


def _wgmma_built(device: torch.device) -> bool:
    dev = device.index if device.index is not None else torch.cuda.current_device()
    if dev not in _WGMMA_BUILT:
        if torch.cuda.get_device_capability(dev) != (9, 0):
            _WGMMA_BUILT[dev] = False
        elif torch.compiler.is_compiling() or torch.cuda.is_current_stream_capturing():
            return False  # the query copies from the device: not now, and not remembered
        else:
            ops = _cuda_ext_ops()
            if ops is None:
                return False
            with torch.cuda.device(dev):
                _WGMMA_BUILT[dev] = bool(ops.w4a16_wgmma_built())
    return _WGMMA_BUILT[dev]


# The support test of each CUDA backend (a forced or requested backend is checked against it).
_CUDA_SUPPORT = {"cuda": cuda_supported, "cuda_gemm": cuda_gemm_supported, "cuda_wgmma": cuda_wgmma_supported}


def w4a16_backend(x: torch.Tensor, packed: W4A16Weights) -> str:
    """Backend that :func:`w4a16_linear` would choose for ``x`` with ``backend=None``.

    ``$QLINEAR_W4A16_BACKEND=cuda`` applies where :func:`cuda_supported` holds (other cases take
    the automatic choice). Auto picks ``"cuda"`` for M <= :data:`_CUDA_MAX_M` when supported and
    the extension has not failed to load (a load failure falls back to ``"triton"`` with a warning), and up to
    :data:`_CUDA_BLOCKS_MAX_M` rows (blocks of 16) for the shape classes listed there.
    """
    forced = env_backend(_ENV_VAR, W4A16_BACKENDS)
    if forced in _CUDA_SUPPORT and not _CUDA_SUPPORT[forced](x, packed):
        forced = None
    if forced is not None:
        return forced
    if x.device.type != "cuda" or x.dtype not in (torch.float16, torch.bfloat16) or not triton_supported(packed):
        return "reference"
    m = x.numel() // max(x.shape[-1], 1)
    tall = packed.n >= 8 * packed.k
    traced = torch.compiler.is_compiling()
    cls = _cuda_shape_class(packed.n, packed.k)
    cuda_max_m = max(_CUDA_MAX_M_TALL if tall else _CUDA_MAX_M, _CUDA_BLOCKS_MAX_M.get(cls, 0))
    if m <= cuda_max_m and not _cuda_ext_failed() and cuda_supported(x, packed, check_pointers=not traced):
        return "cuda"
    gemm_max_m = _CUDA_GEMM_MAX_M.get(cls, 0)
    if (_CUDA_MAX_M < m <= gemm_max_m and not _cuda_ext_failed()
            and cuda_gemm_supported(x, packed, check_pointers=not traced)):
        return "cuda_gemm"
    if ((_wgmma_takes(cls, m) or _wgmma_paired_config(x, packed) is not None) and not _cuda_ext_failed()
            and cuda_wgmma_supported(x, packed, check_pointers=not traced)):
        return "cuda_wgmma"
    return _table_backend(m, tall)


def _wgmma_takes(cls: str, m: int) -> bool:
    """Whether auto dispatch sends M rows of shape class ``cls`` to the wgmma GEMM (where it applies): inside
    :data:`_CUDA_WGMMA_M`'s range and outside :data:`_CUDA_WGMMA_GAP`'s."""
    wg_lo, wg_hi = _CUDA_WGMMA_M.get(cls, (1, 0))
    gap_lo, gap_hi = _CUDA_WGMMA_GAP.get(cls, (1, 0))
    return wg_lo <= m <= wg_hi and not gap_lo <= m <= gap_hi


def _table_backend(m: int, tall: bool) -> str:
    """The :data:`_M_THRESHOLDS` backend for M rows (``tall``: N >= 8 K)."""
    for bound, name, tall_name in _M_THRESHOLDS:
        if m <= bound:
            return tall_name if tall and tall_name is not None else name
    return _M_THRESHOLDS[-1][1]


def _check_x(x: torch.Tensor, packed: W4A16Weights, bias: torch.Tensor | None, backend: str) -> torch.Tensor:
    if x.dim() < 1 or x.shape[-1] != packed.k:
        raise ValueError(f"x: expected [..., K={packed.k}], got {describe(x)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x: expected a float tensor, got {describe(x)}")
    if backend != "reference" and x.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"x: backend {backend!r} takes float16 / bfloat16, got {describe(x)}")
    if x.numel() and x.stride(-1) != 1:
        raise ValueError(f"x: expected stride(-1) == 1, got {describe(x)}")
    if bias is not None and (tuple(bias.shape) != (packed.n,) or not bias.dtype.is_floating_point):
        raise ValueError(f"bias: expected float [{packed.n}], got {describe(bias)}")
    try:
        x2 = x.view(-1, packed.k)
    except RuntimeError as err:
        raise ValueError(f"x: leading dims must flatten without a copy, got {describe(x)}") from err
    if x2.shape[0] > 1 and x2.stride(0) < packed.k and backend != "reference":
        raise ValueError(f"x: rows overlap, got {describe(x)}")
    return x2


def w4a16_linear(
    x: torch.Tensor,
    packed: W4A16Weights,
    bias: torch.Tensor | None = None,
    *,
    backend: str | None = None,
) -> torch.Tensor:
    """``y = x @ W.T + bias`` with W the dequantized packed weight; fp32 accumulation.

    ``x`` ``[..., K]`` bf16 / fp16 (fp32 on the reference backend), ``stride(-1) == 1`` and
    leading dims that flatten to ``[M, K]`` without a copy (any row stride). ``bias`` ``[N]`` or
    None. Returns a new ``[..., N]`` tensor of ``x.dtype``. ``backend`` in :data:`W4A16_BACKENDS`
    or None (auto, see :func:`w4a16_backend`).
    """
    if backend is None:
        backend = w4a16_backend(x, packed)
    elif backend not in W4A16_BACKENDS:
        raise ValueError(f"backend: expected one of {W4A16_BACKENDS} or None, got {backend!r}")
    elif backend in _CUDA_SUPPORT and not _CUDA_SUPPORT[backend](x, packed):
        raise ValueError(
            f"backend {backend!r}: case not supported (x {describe(x)}, bits={packed.bits}, group_size="
            f"{packed.group_size}, K={packed.k}, act-order={packed.perm is not None}); "
            f"see {_CUDA_SUPPORT[backend].__name__}()"
        )
    x2 = _check_x(x, packed, bias, backend)
    y = _w4a16_mm(
        x2,
        packed.qweight,
        packed.scales,
        packed.zeros,
        packed.perm,
        packed.row_bounds,
        bias,
        packed.bits,
        packed.group_size,
        packed.n,
        packed.k,
        list(packed.shard_rows),
        backend,
    )
    return y.view(*x.shape[:-1], packed.n)


# --------------------------------------------------------------------------------------------
# custom op (one op, every backend: torch.compile sees an opaque node with a fake)
# --------------------------------------------------------------------------------------------


@define_op("qlinear::w4a16_mm", mutates_args=())
def _w4a16_mm(
    x: torch.Tensor,
    qweight: torch.Tensor,
    scales: torch.Tensor,
    zeros: Optional[torch.Tensor],
    perm: Optional[torch.Tensor],
    row_bounds: torch.Tensor,
    bias: Optional[torch.Tensor],
    bits: int,
    group_size: int,
    n: int,
    k: int,
    shard_rows: list[int],
    backend: str,
) -> torch.Tensor:
    """``[M, K] x packed [N, K] -> [M, N]`` in ``x.dtype``; see :func:`w4a16_linear`."""
    packed = W4A16Weights(qweight, scales, zeros, perm, row_bounds, bits, group_size, n, k, tuple(shard_rows))
    if backend == "reference":
        return w4a16_linear_ref(x, packed, bias)
    # Function-local import (the one allowed kind): keeps triton off `import qlinear.ops`.
    from qlinear.kernels import w4a16_triton

    if backend == "cuda":
        # pointers were not checked when a compiled graph chose this backend (cuda_supported)
        y = _cuda_gemv(x, packed, bias) if _cuda_pointers_ok(x, packed) else None
        if y is not None:
            return y
        backend = "triton"  # extension unavailable, or a misaligned pointer
    if backend in ("cuda_gemm", "cuda_wgmma"):
        run = _cuda_gemm if backend == "cuda_gemm" else _cuda_wgmma
        y = run(x, packed, bias) if _cuda_gemm_pointers_ok(x, packed) else None
        if y is not None:
            return y
        backend = _table_backend(x.shape[0], n >= 8 * k)  # extension unavailable, or a misaligned pointer
    if backend == "triton":
        return w4a16_triton.w4a16_gemm(x, packed, bias)
    if backend == "triton_wg":
        return w4a16_triton.w4a16_gemm(x, packed, bias, w4a16_triton.wg_config(x.shape[0]))
    if backend == "dequant_cublas":
        return w4a16_triton.w4a16_dequant_gemm(x, packed, bias)
    raise ValueError(f"backend: expected one of {W4A16_BACKENDS}, got {backend!r}")


def _cuda_ext_ops():
    """``torch.ops.qlinear_C`` or None (a load failure is warned about once and remembered; then
    "cuda" falls back to triton)."""
    # Function-local import (the one allowed kind): keeps the extension loader off `import qlinear.ops`.
    from qlinear.kernels import cuda_ext

    return cuda_ext.ops_or_none("W4A16 decode uses the Triton path", stacklevel=4)


def _cuda_ext_failed() -> bool:
    from qlinear.kernels import cuda_ext

    return cuda_ext.failed()


def cuda_gemv(
    x: torch.Tensor,
    packed: W4A16Weights,
    bias: torch.Tensor | None = None,
    config: tuple[int, ...] | None = None,
    pdl: bool | None = None,
    ring: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """The CUDA tensor-core decode kernel on ``x [M, K]`` (:func:`cuda_supported`; more than
    :data:`_CUDA_BLOCK_M` rows run as blocks of that many, one launch each, each block with the automatic
    ring / config of its own M unless ``ring`` / ``config`` are given):
    ``[M, N]`` in x's dtype (written into ``out`` when given: ``[M, N]``, x's dtype and device,
    ``stride(1) == 1``, any row stride, e.g. a block of rows of a larger output; the extension checks it),
    or None when the extension is unavailable.

    ``ring``: the cp.async ring kernel's shape code (see :data:`_CUDA_RING`; 0 = automatic, -1 =
    the register kernel, >= 10000 = the bulk ring kernel, >= 20000 = the TMA ring kernel,
    ``csrc/w4a16_tma.cuh``, 100000 + its code = the same with swizzled x in two boxes per superblock
    (M > 8 only), 200000 + its code = swizzled x in one 3-D box, 1000000 + any of these = the PDL trigger
    before the main loop at M > 8 too); None = -1 when
    ``config`` is given, else
    :data:`_CUDA_RING` (then :data:`_CUDA_RING_AUTO` when that is 0). An explicit 0 is the
    launcher's own choice. ``config`` =
    the register kernel's (row tiles per CTA, superblocks per chunk, warps per CTA[, pipe: 0 = a
    contiguous K slice per warp, 1 = the same with double-buffered chunks, 2 = chunks dealt
    round-robin over the warps[, fold]]; ``w4a16_reg_configs()`` lists the compiled ones), 0 = automatic
    (default :data:`_CUDA_CONFIG`); ``pdl`` None follows ``qlinear.kernels._pdl`` (on for M <= PDL_MAX_M).
    ``fold`` (default 0 = off, 1 = on; other values are refused): the register kernel's zero-point
    fold (``csrc/w4a16_gemv.cuh`` FOLD: per-token x sums from an all-ones mma), compiled for the
    codes of ``w4a16_reg_fold_configs()`` only (groups of >= 128 or per channel).
    """
    return _cuda_gemv(x, packed, bias, config, pdl, ring, out)


def _cuda_gemv(x, packed, bias, config=None, pdl=None, ring=None, out=None):
    ops = _cuda_ext_ops()
    if ops is None:
        return None
    m = x.shape[0]
    if out is None:
        out = torch.empty((m, packed.n), dtype=x.dtype, device=x.device)
    if m > _CUDA_BLOCK_M:
        # blocks of rows, each with the kernel and config its own M gets (the weights are read once per block)
        for lo in range(0, m, _CUDA_BLOCK_M):
            hi = min(lo + _CUDA_BLOCK_M, m)
            _cuda_gemv_block(ops, x[lo:hi], packed, bias, config, pdl, ring, out[lo:hi])
        return out
    if m == 0:
        return out
    _cuda_gemv_block(ops, x, packed, bias, config, pdl, ring, out)
    return out


def _cuda_gemv_block(ops, x, packed, bias, config, pdl, ring, out):
    m = x.shape[0]
    if pdl is None:
        from qlinear.kernels import _pdl  # function-local: imports triton

        pdl = m <= _pdl.PDL_MAX_M and _pdl.pdl_enabled(x.device)
    if ring is None:
        ring = -1 if config is not None else _CUDA_RING
        if ring == 0 and config is None and _CUDA_RING_AUTO:
            ring = _cuda_auto_ring(x, packed)
            if ring == -1:
                config = _cuda_auto_reg(x, packed)
    cfg = tuple(config if config is not None else _CUDA_CONFIG)
    if len(cfg) not in (3, 4, 5):
        raise ValueError(f"config: expected (row_tiles, chunk, warps[, pipe[, fold]]), got {config!r}")
    r, u, w = cfg[:3]
    pipe = cfg[3] if len(cfg) >= 4 else 0
    fold = cfg[4] if len(cfg) == 5 else 0
    ops.w4a16_gemv(
        out, x, packed.qweight, packed.scales, packed.zeros, bias, packed.group_size, r, u, w, int(pdl), int(ring),
        int(pipe), int(fold),
    )


def cuda_gemm(
    x: torch.Tensor,
    packed: W4A16Weights,
    bias: torch.Tensor | None = None,
    config: tuple[int, int, int, int] | None = None,
) -> torch.Tensor | None:
    """The CUDA W4A16 GEMM on ``x [M, K]`` (:func:`cuda_gemm_supported`): ``[M, N]`` in x's dtype,
    or None when the extension is unavailable. ``config`` = (warps, tokens, splits, stages), zeros
    for the launcher's choice (default: the row of the shape class's :data:`_CUDA_GEMM_AUTO` entry
    for M, else :data:`_CUDA_GEMM_CONFIG`; ``w4a16_gemm_configs()`` lists the compiled (warps,
    tokens / 8, stages)). A K split sums fp32 partials in a workspace from the caching allocator,
    counted by ``qlinear.kernels._splitk.locks`` (one launch, graph-capturable).
    """
    if config is not None and (len(tuple(config)) != 4 or any(int(v) < 0 for v in config)):
        raise ValueError(f"config: expected (warps, tokens, splits, stages) of ints >= 0, got {config!r}")
    return _cuda_gemm(x, packed, bias, config)


def _cuda_gemm(x, packed, bias, config=None):
    return _run_gemm("w4a16_gemm", x, packed, bias, config, _CUDA_GEMM_AUTO, _CUDA_GEMM_CONFIG)


def _run_gemm(op_name, x, packed, bias, config, auto, default, extra=(), auto_sym=None):
    """One of the extension's split-K GEMM ops (``w4a16_gemm`` / ``w4a16_wgmma``) on ``x [M, K]``:
    ``config`` (None: the first (max_m, config) row of the shape class's ``auto`` entry with M <=
    max_m, else ``default``; for a layer without zero points, ``auto_sym``'s config for that class and
    max_m where it has one; a shorter one padded with zeros to ``default``'s length) then ``extra``
    passed as the op's trailing ints, the split-K counters from ``qlinear.kernels._splitk.locks``; None
    without the extension."""
    ops = _cuda_ext_ops()
    if ops is None:
        return None
    from qlinear.kernels._splitk import locks  # function-local: imports triton

    out = torch.empty((x.shape[0], packed.n), dtype=x.dtype, device=x.device)
    if x.shape[0] == 0:
        return out
    if config is None:
        cls = _cuda_shape_class(packed.n, packed.k)
        max_m, config = next(((mm, cfg) for mm, cfg in auto.get(cls, ()) if x.shape[0] <= mm), (None, default))
        if packed.zeros is None and auto_sym:
            config = auto_sym.get(cls, {}).get(max_m, config)
    config = tuple(int(v) for v in config)
    config += (0,) * (len(default) - len(config))
    getattr(ops, op_name)(out, x, packed.qweight, packed.scales, packed.zeros, bias, packed.group_size,
                          locks(x.device), *config, *(int(v) for v in extra))
    return out


def cuda_wgmma(
    x: torch.Tensor,
    packed: W4A16Weights,
    bias: torch.Tensor | None = None,
    config: tuple[int, ...] | None = None,
    pdl: bool | None = None,
) -> torch.Tensor | None:
    """The Hopper wgmma W4A16 GEMM on ``x [M, K]`` (:func:`cuda_wgmma_supported`): ``[M, N]`` in x's dtype, or None
    when the extension is unavailable. ``config`` = (tokens per CTA, K splits, stages[, reduce[, rows[,
    producer]]]), zeros for the launcher's choice (default: :func:`_wgmma_paired_config`'s or
    :func:`_wgmma_wide_config`'s where one applies, else
    the row of the shape class's :data:`_CUDA_WGMMA_AUTO` entry for M (:data:`_CUDA_WGMMA_AUTO_SYM`'s override of
    that row for a layer without zero points), else all automatic; ``w4a16_wgmma_configs()`` lists the compiled P *
    10000 + H * 1000 + (tokens / 8) * 10 + stages, H = 0 / 1 / 2 for 128 / 64 / 192 rows, P = 1 with a producer
    warpgroup). K splits as :func:`cuda_gemm`'s; ``reduce`` says who sums a split's partials: 1 the last CTA of a
    tile to arrive, 2 all of the tile's CTAs, a share each (launched cooperative, so only where the grid fits on the
    GPU at once), 0 = 2 where it fits. Both sum in split order: the same bits. 3: in pairs (an even number of
    splits, no producer warpgroup): clusters of two CTAs sum their partials through distributed shared memory, then
    the pair sums are added in pair order (other bits, as deterministic). ``rows``: weight rows per CTA, 128 (0:
    each warpgroup 64 of them), 64 (both warpgroups the same rows and tokens, each half of every superblock's
    k-steps) or 192 (three warpgroups of 64 rows). ``producer``: 1 adds a producer warpgroup that issues the
    shared-memory stage fills (compiled for 128 rows x 256 tokens, 3 stages only: code 10323); 2, with 64 rows x 128
    tokens and 4 or 6 stages (codes 21164, 21166), makes the two warpgroups take alternate superblocks, all k-steps
    each, instead of halves of every superblock; 3 / 4, with 192 rows x 176 tokens and 3 or 4 stages (codes 32223,
    32224, 42223, 42224; 176 tokens are compiled only so), one buffer of A fragments / A double-buffered over half
    superblocks. ``pdl``: launch with
    programmatic dependent launch (None: ``qlinear.kernels._pdl.pdl_enabled``).
    """
    if config is not None and (len(tuple(config)) not in (3, 4, 5, 6) or any(int(v) < 0 for v in config)):
        raise ValueError(
            f"config: expected (tokens, splits, stages[, reduce[, rows[, producer]]]) of ints >= 0, got {config!r}")
    return _cuda_wgmma(x, packed, bias, config, pdl)


def _cuda_wgmma(x, packed, bias, config=None, pdl=None):
    if pdl is None:
        from qlinear.kernels import _pdl  # function-local: imports triton

        pdl = _pdl.pdl_enabled(x.device)
    if config is None:
        config = _wgmma_paired_config(x, packed) or _wgmma_wide_config(x, packed)
    return _run_gemm("w4a16_wgmma", x, packed, bias, config, _CUDA_WGMMA_AUTO, (0, 0, 0, 0, 0, 0), (int(pdl),),
                     _CUDA_WGMMA_AUTO_SYM)


def _cuda_shape_class(n: int, k: int) -> str:
    """The shape class of :data:`_CUDA_RING_AUTO`: "short" (K <= 2048), "few" (N <= 3072), "many"."""
    return "short" if k <= 2048 else ("few" if n <= 3072 else "many")


_SM90: dict[int, bool] = {}


def _grouped_128(packed: W4A16Weights) -> bool:
    """Groups of a multiple of 128 columns, or per channel: one group per superblock or more."""
    return packed.num_groups == 1 or packed.group_size % 128 == 0


def _cuda_bulk_ok(x: torch.Tensor, packed: W4A16Weights) -> bool:
    """Whether the bulk ring kernel applies (csrc/w4a16_gemv_launch.cu bulk_ok): :func:`_cuda_aligned16`
    and K % 128 == 0."""
    return x.shape[1] % 128 == 0 and _cuda_aligned16(x, packed)


def _cuda_tma_ok(x: torch.Tensor, packed: W4A16Weights) -> bool:
    """Whether the TMA ring kernel applies (csrc/w4a16_gemv_launch.cu tma_ok): :func:`_cuda_aligned16`
    and 16-bit scales (any K: its x boxes land columns past K as zeros)."""
    return packed.scales.dtype != torch.float32 and _cuda_aligned16(x, packed)


def _sm90(x: torch.Tensor) -> bool:
    """Whether x's (CUDA) device is sm_90 or newer, read once per device."""
    dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
    if dev not in _SM90:
        _SM90[dev] = torch.cuda.get_device_capability(dev)[0] >= 9
    return _SM90[dev]


def _x_rows_aligned16(x: torch.Tensor) -> bool:
    """x's rows 16-byte aligned: the pointer, and the row stride (% 8 elements) unless one row."""
    return x.data_ptr() % 16 == 0 and (x.shape[0] <= 1 or x.stride(0) % 8 == 0)


def _cuda_aligned16(x: torch.Tensor, packed: W4A16Weights) -> bool:
    """The copy-engine kernels' common conditions (csrc/w4a16_gemv_launch.cu aligned16): sm_90+, groups
    of >= 128 or per channel, N % 16 == 0, x / scales / zeros 16-byte aligned, x row stride % 8 == 0."""
    zeros = packed.zeros
    return (_sm90(x) and _grouped_128(packed) and packed.n % 16 == 0 and _x_rows_aligned16(x)
            and packed.scales.data_ptr() % 16 == 0 and (zeros is None or zeros.data_ptr() % 16 == 0))


# csrc/w4a16_xs.cuh: kXsBars copy chunks of 256 columns; the opt-in shared memory of an sm_90 CTA
_XS_MAX_K = 8192
_SM90_SMEM_OPTIN = 227 * 1024


def _cuda_xs_ok(x: torch.Tensor, packed: W4A16Weights) -> bool:
    """Whether the x-staged kernel applies (csrc/w4a16_gemv_launch.cu xs_ok and its shared-memory
    check): sm_90+, groups of >= 128 or per channel, K % 8 == 0 and K <= 8192, x 16-byte aligned with
    row stride % 8 == 0, and M x rows of ``xs_pitch(K)`` bytes (+ the barriers) within 227 KB."""
    if not x.is_cuda:
        return False
    m, k = x.shape
    pitch = (2 * k + 127) // 128 * 128 + 32
    return (_sm90(x) and _grouped_128(packed) and k % 8 == 0 and k <= _XS_MAX_K and _x_rows_aligned16(x)
            and 256 + m * pitch <= _SM90_SMEM_OPTIN)


def _cuda_ring_ok(packed: W4A16Weights) -> bool:
    """Whether the cp.async ring kernel applies (csrc/w4a16_gemv_launch.cu ring_ok): groups of >= 128
    or per channel, N % 4 == 0, 4-byte aligned scales / zeros."""
    zeros = packed.zeros
    return (_grouped_128(packed) and packed.n % 4 == 0 and packed.scales.data_ptr() % 4 == 0
            and (zeros is None or zeros.data_ptr() % 4 == 0))


def _cuda_table_entry(table: dict, x: torch.Tensor, packed: W4A16Weights):
    """The entry of a per-class dispatch table (:data:`_CUDA_RING_AUTO`, :data:`_CUDA_REG_AUTO`) for
    this call, or None: keys (shape class, tiles) looked up in the order tiles 0 (M == 1), 4
    (M <= 4), then 1 (M <= 8) or 2 (M 9..16)."""
    m = x.shape[0]
    cls = _cuda_shape_class(packed.n, x.shape[1])
    keys = ([(cls, 0)] if m == 1 else []) + ([(cls, 4)] if m <= 4 else []) + [(cls, 1 if m <= 8 else 2)]
    return next((table[key] for key in keys if key in table), None)


def _cuda_auto_ring(x: torch.Tensor, packed: W4A16Weights) -> int:
    """:data:`_CUDA_RING_AUTO`'s code for this call (-1 = the register kernel), or 0 (the
    launcher's choice). A TMA ring code the call cannot take gives the register kernel."""
    code = _cuda_table_entry(_CUDA_RING_AUTO, x, packed) or 0
    if code >= 20000:
        return code if _cuda_tma_ok(x, packed) else -1
    if code >= 10000:
        return code if _cuda_bulk_ok(x, packed) else 0
    if code > 0:
        return code if _cuda_ring_ok(packed) else 0
    return code


def _cuda_auto_reg(x: torch.Tensor, packed: W4A16Weights) -> tuple[int, ...] | None:
    """:data:`_CUDA_XS_AUTO`'s config for this call where the x-staged kernel applies
    (:func:`_cuda_xs_ok`), else :data:`_CUDA_REG_AUTO`'s register config, or None (the launcher's
    heuristic). An entry's zero-point fold (5th element) applies to layers with zero points only; a
    symmetric layer gets the same config without it (:data:`_CUDA_REG_AUTO`'s session-16 note)."""
    cfg = None
    if _grouped_128(packed):
        cfg = _cuda_table_entry(_CUDA_XS_AUTO, x, packed)
        if cfg is None or not _cuda_xs_ok(x, packed):
            cfg = _cuda_table_entry(_CUDA_REG_AUTO, x, packed)
    if cfg is not None and packed.zeros is None and len(cfg) > 4 and cfg[4]:
        return tuple(cfg[:4])
    return cfg


@_w4a16_mm.register_fake
def _w4a16_mm_fake(x, qweight, scales, zeros, perm, row_bounds, bias, bits, group_size, n, k, shard_rows, backend):
    return x.new_empty((x.shape[0], n))
