"""Triton kernels for weight-only integer GEMMs (W4A16 / W8A16) on qlinear's packed layout.

Layout (see ``qlinear.reference.w4a16``): int32 words in 16-word superblocks per row; bit-field i
of the 16 words is 16 contiguous columns (a "plane"). A kernel loads ``[BLOCK_N, 16]`` words of
a superblock with 16-byte vector loads and turns them into 32 // bits planes with one shift and
one mask each; every plane lines up with a contiguous 16-element slice of ``x``, so there is no
interleave / reshape / layout shuffle between the load and the math.

Integer -> float: ``(q | 0x4B000000)`` read as fp32 is exactly ``2^23 + q`` (q < 2^23 sits in
the mantissa), so ``bitcast(q | MAGIC) - (2^23 + zero)`` is the exact ``q - zero`` for one
LOP3 + one FADD, instead of a quarter-rate I2F conversion per element.

Kernels:
* ``_w4a16_gemv_kernel``: CUDA cores, one row of ``x`` per program (rows on grid axis 0 so the
  programs that share a weight tile run together and the repeats come from L2); per plane group
  ``sum((q - z) * x)`` then one multiply by the group's scale. For M = 1 (and tried at M <= 4).
* ``_w4a16_mma_kernel``: tensor cores, computed transposed (``acc[BLOCK_N, BLOCK_M] =
  Wdeq @ x^T``) so the dequantized tile is the register operand (Hopper wgmma takes only its
  left operand from registers) and ``x`` streams through shared memory; grouped tile order for
  L2 reuse at large M.
* ``_w4a16_mma_sb_kernel`` ("mma_sb"): tensor cores with one ``tl.dot`` of K = a whole
  superblock: the words are loaded ``[BLOCK_N, 1, 16]`` and broadcast against the field shifts,
  so each thread expands its own 16-byte vector into ``[rows, FIELDS, 4]`` fields that reshape to
  packed column order. When a group covers whole superblocks the scale multiplies the fp32
  product (``acc += s[n] * dot(q - z, x)``) and, for 4-bit bf16 / any fp16, ``q - z`` is formed
  in 16 bits: ``bits(0x4300 | q)`` is bf16 ``128 + q`` (fp16: ``0x6400 | q`` = ``1024 + q``), and
  one packed HADD2 subtracts ``magic + z`` exactly. sm_90 SASS per superblock at BLOCK_N=64,
  BLOCK_M=16, 4 warps (Triton 3.6, 64 weights per thread): 348 instructions vs 538 for "mma".
* ``_w4a16_wg_kernel`` ("wg", backend "triton_wg"): the mma_sb tile expansion, but the group
  scale goes on the weight (``(q - z) * s`` in 16 bits where that is exact-then-one-rounding) and
  one fp32 accumulator chains through every dot. Offline sm_90 compiles (Triton 3.6 and 3.9,
  ``benchmarks/w4a16wg_asm.py``): wgmma with the A operand from registers, weight words and x
  tiles loaded by cp.async (num_stages deep), wgmma waits of depth 7 across loop iterations, so
  the next superblock's dequantization overlaps the running MMAs (Triton 3.6; with
  ``sb_per_iter`` 2 the waits drop to 0). 174 registers at BLOCK_N=64, BLOCK_M=128, 4 warps.
* ``_w4a16_dequant_kernel`` / ``_w4a16_dequant_v2_kernel``: write the dequantized weight (packed
  column order) in x's dtype for the dequantize + cuBLAS path (v2: whole superblock rows,
  16-byte stores).

Split-K without extra launches: each split stores its fp32 partial tile to a workspace, then
bumps a per-tile counter (acq_rel); the split that sees ``SPLIT_K - 1`` sums the partials in a
fixed order (deterministic), adds bias, stores, and resets the counter to 0. The counters live in
a per-(device, stream) buffer zeroed once, so the launch is CUDA-graph capturable (no host sync,
no memset). Act-order: ``x`` is gathered once through the per-shard permutations (``[M, S*K]``);
N-tiles are laid out shard by shard (a tile never straddles a shard) and each reads its slice.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from qlinear._utils import cdiv, describe
from qlinear.kernels import _pdl
from qlinear.kernels._pdl import launch_options, pdl_prologue, pdl_trigger
from qlinear.kernels._splitk import LOCK_SLOTS, locks, splitk_sum
from qlinear.kernels._tiles import grouped_tile

__all__ = [
    "W4A16Config",
    "default_config",
    "wg_config",
    "resolve_config",
    "w4a16_gemm",
    "w4a16_dequantize",
    "w4a16_dequant_gemm",
]

_MAGIC = 0x4B000000  # fp32 bits of 2^23
_MAGIC_F = 8388608.0
_SB_WORDS = 16


@dataclass(frozen=True)
class W4A16Config:
    """Launch parameters. ``kernel`` "gemv" (decode, block_m must be 1), "mma" (tensor cores,
    one K=16 dot per plane, block_m >= 16), "mma_sb" (tensor cores, one dot per superblock) or
    "wg" (one dot per superblock chained through one accumulator: Hopper wgmma; see
    :func:`wg_config`).

    ``sb_per_iter`` superblocks (16 words per row each: 128 columns at 4 bits, 64 at 8 bits) per
    loop iteration; ``split_k`` 0 = auto (enough programs for ~2 waves over the SMs).
    """

    kernel: str
    block_n: int
    block_m: int = 1
    sb_per_iter: int = 1
    split_k: int = 0
    num_warps: int = 4
    num_stages: int = 2
    group_m: int = 8
    scale_after: bool = True  # "mma_sb" only: group scale on the fp32 product (see its kernel)


# Per-M defaults: the first row whose bound is >= M wins. split_k 0 (auto) resolves to the split
# the sweeps found best: 8 / 4 / 1 for 2112x7168 / 7168x16384 / 24576x1536 at block_n 64.
#   M = 1 gemv, H200 run 2 (benchmarks/results/bench_w4a16_decode.json, us; bf16 cuBLAS in
#     brackets): 2112x7168 10.04 [12.26] · 24576x1536 16.58 [21.39] · 7168x16384 50.13 [58.93].
#   M = 2 .. 64 mma_sb, session-2 sweep (benchmarks/results/session2/bench_w4a16_mma.json, best
#     per shape, us; bf16 / the old "mma" default in brackets):
#     M=16  12.79 [13.19 / ~13.7] · 20.09 [21.25 / ~22] · 61.70 [64.22 / ~68]
#     M=32  14.13 [13.35]         · 21.79 [21.46]       · 80.16 with "mma" bn64 bm64 [65.05]
#     M=64  17.46 [13.98]         · 23.45 [22.28]       · 93.60 [63.61]
#   M = 65 .. 256: the old "mma" bn128 bm128 row: at M = 128 it gave 44.0 us on 24576x1536 (mma_sb
#     77-89 us there); mma_sb bn128 bm128 sk8 w8 won on 7168x16384 (157.7 vs ~176 us) but lost on
#     the other shapes, and one row serves every shape. Past M = 64 the ops dispatch sends the
#     non-tall shapes to dequantize + cuBLAS anyway.
# A "wide" decode kernel tried after run 1 did not compile under Triton 3.6 (removed).
_DEFAULT_CONFIGS: tuple[tuple[int, W4A16Config], ...] = (
    (1, W4A16Config("gemv", block_n=64, block_m=1, sb_per_iter=2, split_k=0, num_warps=8, num_stages=2)),
    (16, W4A16Config("mma_sb", block_n=64, block_m=16, sb_per_iter=1, split_k=0, num_warps=4, num_stages=4)),
    (32, W4A16Config("mma_sb", block_n=64, block_m=32, sb_per_iter=1, split_k=0, num_warps=4, num_stages=4)),
    (64, W4A16Config("mma_sb", block_n=64, block_m=64, sb_per_iter=1, split_k=0, num_warps=4, num_stages=3)),
    (256, W4A16Config("mma", block_n=128, block_m=128, sb_per_iter=1, split_k=1, num_warps=8, num_stages=3)),
    (1 << 62, W4A16Config("mma", block_n=128, block_m=128, sb_per_iter=1, split_k=1, num_warps=8, num_stages=3)),
)


# "wg" kernel (backend "triton_wg" in qlinear.ops.w4a16): per-M defaults, same lookup rule;
# split_k 0 = auto (~2 waves over the SMs). benchmarks/gpu_w4a16wg.sh sweeps block_n 64/128,
# block_m 64/128, sb_per_iter 1/2, stages 3/4, warps 4/8, split-K at M = 64 .. 1024. Session 4
# (benchmarks/results/session4/w4a16wg_r2.log, cold weights, us, "triton_wg (wg_config)" vs the
# best swept point; 2112x7168 / 24576x1536 / 7168x16384): M = 128, where auto dispatch uses it,
# 27.2 / 40.2 / 124.7 vs 26.8 / 39.6 / 123.9; M = 256 (tall-skinny layers) 66.4 vs 64.2 on
# 24576x1536. At M = 64 the bm64 row is 35.6 vs 23.5 on 24576x1536 (best: no split, 3 stages),
# but auto dispatch keeps "triton" there.
_WG_CONFIGS: tuple[tuple[int, W4A16Config], ...] = (
    (64, W4A16Config("wg", block_n=64, block_m=64, sb_per_iter=1, split_k=0, num_warps=4, num_stages=4)),
    (1 << 62, W4A16Config("wg", block_n=64, block_m=128, sb_per_iter=1, split_k=0, num_warps=4, num_stages=3)),
)


def wg_config(m: int) -> W4A16Config:
    """Default "wg" launch for M rows (:data:`_WG_CONFIGS`)."""
    for bound, cfg in _WG_CONFIGS:
        if m <= bound:
            return cfg
    return _WG_CONFIGS[-1][1]


def default_config(m: int) -> W4A16Config:
    for bound, cfg in _DEFAULT_CONFIGS:
        if m <= bound:
            return cfg
    return _DEFAULT_CONFIGS[-1][1]


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # TRITON_INTERPRET on CPU: small, so tests exercise split-K
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


_LOCK_SLOTS = LOCK_SLOTS
_locks = locks


# --------------------------------------------------------------------------------------------
# device helpers
# --------------------------------------------------------------------------------------------


@triton.jit
def _tile_rows(pid_n, Bounds_ptr, N, BLOCK_N: tl.constexpr, NUM_SHARDS: tl.constexpr):
    """``(offs_n [BLOCK_N], n_mask, shard)`` of N-tile ``pid_n``: its rows, which of them exist
    (a tile ends at its shard's last row), and its shard; tiles are laid out shard by shard."""
    if NUM_SHARDS == 1:
        row0 = pid_n * BLOCK_N
        row_end = N
        sid = 0
    else:
        row0 = pid_n * 0
        row_end = pid_n * 0
        sid = pid_n * 0
        first = pid_n * 0
        for s in tl.static_range(NUM_SHARDS):
            lo = tl.load(Bounds_ptr + s)
            hi = tl.load(Bounds_ptr + s + 1)
            ntiles = tl.cdiv(hi - lo, BLOCK_N)
            inside = (pid_n >= first) & (pid_n < first + ntiles)
            row0 = tl.where(inside, lo + (pid_n - first) * BLOCK_N, row0)
            row_end = tl.where(inside, hi, row_end)
            sid = tl.where(inside, s, sid)
            first += ntiles
    offs_n = row0 + tl.arange(0, BLOCK_N)
    return offs_n, offs_n < row_end, sid


@triton.jit
def _group_params(S_ptr, Z_ptr, kg, offs_n, n_mask, N, G,
                  BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, HAS_ZEROS: tl.constexpr):
    """fp32 scale ``[BLOCK_N]`` and ``2^23 + zero`` for the group holding packed column ``kg``."""
    if GROUP_SIZE == 0:
        grp = kg * 0
    else:
        # min(): columns of the padded tail map to the last group (their x is 0 anyway).
        grp = tl.minimum(kg // GROUP_SIZE, G - 1)
    s = tl.load(S_ptr + grp * N + offs_n, mask=n_mask, other=0.0).to(tl.float32)
    if HAS_ZEROS:
        c = tl.load(Z_ptr + grp * N + offs_n, mask=n_mask, other=0).to(tl.float32) + 8388608.0
    else:
        c = tl.full(s.shape, 8388608.0 + (1 << (BITS - 1)), tl.float32)
    return s, c


@triton.jit
def _plane(w, i: tl.constexpr, BITS: tl.constexpr):
    """fp32 ``2^23 + q`` of bit-field ``i`` of the words ``w`` (exact)."""
    q = (w >> (i * BITS)) & ((1 << BITS) - 1)
    return (q | 0x4B000000).to(tl.float32, bitcast=True)


@triton.jit
def _split_bounds(num_sb, pid_k, SB_PER_ITER: tl.constexpr, SPLIT_K: tl.constexpr):
    iters = tl.cdiv(num_sb, SB_PER_ITER)
    per_split = tl.cdiv(iters, SPLIT_K)
    it0 = pid_k * per_split
    it1 = tl.minimum(it0 + per_split, iters)
    return it0, it1


@triton.jit
def _finish_tile(acc, offs_n, n_mask, offs_m, m_mask, tile_id, pid_k, M, N,
                 Out_ptr, Out_row_stride, Bias_ptr, WS_ptr, Lock_ptr,
                 HAS_BIAS: tl.constexpr, SPLIT_K: tl.constexpr):
    """Store ``acc[BLOCK_N, BLOCK_M]`` (+ bias) as ``Out[m, n]``, reducing split-K partials first."""
    mask = n_mask[:, None] & m_mask[None, :]
    out_ptrs = Out_ptr + offs_m[None, :].to(tl.int64) * Out_row_stride + offs_n[:, None]
    if SPLIT_K == 1:
        if HAS_BIAS:
            acc += tl.load(Bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[:, None]
        tl.store(out_ptrs, acc.to(Out_ptr.dtype.element_ty), mask=mask)
    else:
        ws_ptrs = WS_ptr + offs_m[None, :].to(tl.int64) * N + offs_n[:, None]
        total, last = splitk_sum(acc, ws_ptrs, M * N, mask, Lock_ptr + tile_id, pid_k, SPLIT_K)
        if last:
            if HAS_BIAS:
                total += tl.load(Bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[:, None]
            tl.store(out_ptrs, total.to(Out_ptr.dtype.element_ty), mask=mask)


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------


@triton.jit
def _w4a16_gemv_kernel(
    Out_ptr, X_ptr, QW_ptr, S_ptr, Z_ptr, Bias_ptr, WS_ptr, Lock_ptr, Bounds_ptr,
    M, N, K, G, num_sb,
    X_row_stride, X_shard_stride, Out_row_stride, QW_row_stride,
    BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, PPG: tl.constexpr,
    HAS_ZEROS: tl.constexpr, HAS_BIAS: tl.constexpr, NUM_SHARDS: tl.constexpr,
    BLOCK_N: tl.constexpr, SB_PER_ITER: tl.constexpr, SPLIT_K: tl.constexpr, USE_PDL: tl.constexpr, PDL_EARLY: tl.constexpr,
):
    """``Out[m, n] = sum_k x[m, k] * W[n, k]`` for one row m per program, CUDA-core FMA.

    Grid (M, n_tiles, SPLIT_K). ``PPG`` planes share one group (gcd(g, superblock) / 16).
    """
    FIELDS: tl.constexpr = 32 // BITS
    SB: tl.constexpr = 16 * FIELDS
    pdl_prologue(USE_PDL, PDL_EARLY)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    offs_n, n_mask, sid = _tile_rows(pid_n, Bounds_ptr, N, BLOCK_N, NUM_SHARDS)
    offs_j = tl.arange(0, 16)
    qw_rows = QW_ptr + offs_n[:, None].to(tl.int64) * QW_row_stride + offs_j[None, :]
    x_row = X_ptr + pid_m.to(tl.int64) * X_row_stride + sid * X_shard_stride
    it0, it1 = _split_bounds(num_sb, pid_k, SB_PER_ITER, SPLIT_K)

    acc = tl.zeros([BLOCK_N, 16], dtype=tl.float32)
    for it in range(it0, it1):
        for u in tl.static_range(SB_PER_ITER):
            sb = it * SB_PER_ITER + u
            w = tl.load(qw_rows + sb * 16, mask=n_mask[:, None] & (sb * 16 + offs_j < num_sb * 16)[None, :], other=0)
            for pg in tl.static_range(FIELDS // PPG):
                kg = sb * SB + pg * PPG * 16
                s, c = _group_params(S_ptr, Z_ptr, kg, offs_n, n_mask, N, G, BITS, GROUP_SIZE, HAS_ZEROS)
                part = tl.zeros([BLOCK_N, 16], dtype=tl.float32)
                for pi in tl.static_range(PPG):
                    kk = kg + pi * 16 + offs_j
                    xv = tl.load(x_row + kk, mask=kk < K, other=0.0).to(tl.float32)
                    part += (_plane(w, pg * PPG + pi, BITS) - c[:, None]) * xv[None, :]
                acc += part * s[:, None]

    pdl_trigger(USE_PDL, PDL_EARLY)
    row = tl.sum(acc, axis=1)
    offs_m = pid_m + tl.arange(0, 1)
    tile_id = pid_m * tl.num_programs(1) + pid_n
    _finish_tile(row[:, None], offs_n, n_mask, offs_m, offs_m < M, tile_id, pid_k, M, N,
                 Out_ptr, Out_row_stride, Bias_ptr, WS_ptr, Lock_ptr, HAS_BIAS, SPLIT_K)


@triton.jit
def _w4a16_mma_kernel(
    Out_ptr, X_ptr, QW_ptr, S_ptr, Z_ptr, Bias_ptr, WS_ptr, Lock_ptr, Bounds_ptr,
    M, N, K, G, num_sb, n_tiles,
    X_row_stride, X_shard_stride, Out_row_stride, QW_row_stride,
    BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, PPG: tl.constexpr,
    HAS_ZEROS: tl.constexpr, HAS_BIAS: tl.constexpr, NUM_SHARDS: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, SB_PER_ITER: tl.constexpr,
    SPLIT_K: tl.constexpr, GROUP_M: tl.constexpr, USE_PDL: tl.constexpr, PDL_EARLY: tl.constexpr,
):
    """``Out^T[n, m] = sum_k Wdeq[n, k] * x[m, k]`` on tensor cores; grid (m_tiles * n_tiles, SPLIT_K).

    Each plane (16 columns) is dequantized to x's dtype as ``(q - z) * s`` and fed to a K=16
    ``tl.dot`` accumulating in fp32.
    """
    FIELDS: tl.constexpr = 32 // BITS
    SB: tl.constexpr = 16 * FIELDS
    pdl_prologue(USE_PDL, PDL_EARLY)
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m, pid_n = grouped_tile(pid, tl.cdiv(M, BLOCK_M), n_tiles, GROUP_M)

    offs_n, n_mask, sid = _tile_rows(pid_n, Bounds_ptr, N, BLOCK_N, NUM_SHARDS)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < M
    offs_j = tl.arange(0, 16)
    qw_rows = QW_ptr + offs_n[:, None].to(tl.int64) * QW_row_stride + offs_j[None, :]
    x_cols = X_ptr + offs_m[None, :].to(tl.int64) * X_row_stride + sid * X_shard_stride  # [1, BLOCK_M]
    it0, it1 = _split_bounds(num_sb, pid_k, SB_PER_ITER, SPLIT_K)
    x_dtype = X_ptr.dtype.element_ty

    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for it in range(it0, it1):
        for u in tl.static_range(SB_PER_ITER):
            sb = it * SB_PER_ITER + u
            w = tl.load(qw_rows + sb * 16, mask=n_mask[:, None] & (sb * 16 + offs_j < num_sb * 16)[None, :], other=0)
            for pg in tl.static_range(FIELDS // PPG):
                kg = sb * SB + pg * PPG * 16
                s, c = _group_params(S_ptr, Z_ptr, kg, offs_n, n_mask, N, G, BITS, GROUP_SIZE, HAS_ZEROS)
                for pi in tl.static_range(PPG):
                    kk = kg + pi * 16 + offs_j
                    xt = tl.load(x_cols + kk[:, None], mask=(kk < K)[:, None] & m_mask[None, :], other=0.0)
                    a = ((_plane(w, pg * PPG + pi, BITS) - c[:, None]) * s[:, None]).to(x_dtype)
                    acc = tl.dot(a, xt, acc)

    tile_id = pid_m * n_tiles + pid_n
    pdl_trigger(USE_PDL, PDL_EARLY)
    _finish_tile(acc, offs_n, n_mask, offs_m, m_mask, tile_id, pid_k, M, N,
                 Out_ptr, Out_row_stride, Bias_ptr, WS_ptr, Lock_ptr, HAS_BIAS, SPLIT_K)


@triton.jit
def _w4a16_mma_sb_kernel(
    Out_ptr, X_ptr, QW_ptr, S_ptr, Z_ptr, Bias_ptr, WS_ptr, Lock_ptr, Bounds_ptr,
    M, N, K, G, num_sb, n_tiles,
    X_row_stride, X_shard_stride, Out_row_stride, QW_row_stride,
    BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, HAS_ZEROS: tl.constexpr, HAS_BIAS: tl.constexpr,
    NUM_SHARDS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, SB_PER_ITER: tl.constexpr,
    SPLIT_K: tl.constexpr, GROUP_M: tl.constexpr, SCALE_AFTER: tl.constexpr, HALF_MAGIC: tl.constexpr,
    USE_PDL: tl.constexpr,
    PDL_EARLY: tl.constexpr,
):
    """``Out^T[n, m] = sum_k Wdeq[n, k] * x[m, k]`` on tensor cores, one ``tl.dot`` of K = one
    superblock (128 columns at 4 bits); grid (m_tiles * n_tiles, SPLIT_K).

    The ``[BLOCK_N, 16]`` words of a superblock expand to ``[BLOCK_N, FIELDS, 16]`` fields, which
    reshape to ``[BLOCK_N, SB]`` already in packed column order (column f*16 + j is field f of
    word j), so ``x`` is one contiguous ``[SB, BLOCK_M]`` tile per superblock.

    ``SCALE_AFTER`` (only when a group covers whole superblocks: per-channel or g % SB == 0):
    the tile is the exact integer ``q - z`` and the group scale multiplies the fp32 product,
    ``acc += s[n] * dot(q - z, x)`` (per-channel: once at the end), one multiply per output
    instead of one per weight element. Otherwise ``(q - z) * s`` per element, as in the
    plane kernel.
    """
    FIELDS: tl.constexpr = 32 // BITS
    SB: tl.constexpr = 16 * FIELDS
    pdl_prologue(USE_PDL, PDL_EARLY)
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m, pid_n = grouped_tile(pid, tl.cdiv(M, BLOCK_M), n_tiles, GROUP_M)

    offs_n, n_mask, sid = _tile_rows(pid_n, Bounds_ptr, N, BLOCK_N, NUM_SHARDS)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < M
    offs_j = tl.arange(0, 16)
    offs_f = tl.arange(0, FIELDS)
    offs_c = tl.arange(0, SB)
    shifts = (offs_f * BITS)[None, :, None]
    # [BLOCK_N, 1, 16]: loaded 3-D so that its layout (4 words per thread) carries through the
    # field broadcast; a thread then expands its own words, no data moves between threads.
    qw_rows = QW_ptr + offs_n[:, None, None].to(tl.int64) * QW_row_stride + offs_j[None, None, :]
    x_tile = X_ptr + offs_m[None, :].to(tl.int64) * X_row_stride + sid * X_shard_stride + offs_c[:, None]
    it0, it1 = _split_bounds(num_sb, pid_k, SB_PER_ITER, SPLIT_K)
    x_dtype = X_ptr.dtype.element_ty
    ONE_GROUP: tl.constexpr = (GROUP_SIZE == 0) or (GROUP_SIZE % SB == 0)

    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for it in range(it0, it1):
        for u in tl.static_range(SB_PER_ITER):
            sb = it * SB_PER_ITER + u
            w = tl.load(qw_rows + sb * 16, mask=n_mask[:, None, None] & (sb * 16 + offs_j < num_sb * 16)[None, None, :], other=0)
            xt = tl.load(x_tile + sb * SB, mask=(sb * SB + offs_c < K)[:, None] & m_mask[None, :], other=0.0)
            q = (w.to(tl.uint32, bitcast=True) >> shifts) & ((1 << BITS) - 1)
            # 2^23 + q, exact (see the module docstring)
            qf = (q | 0x4B000000).to(tl.float32, bitcast=True)
            if ONE_GROUP and SCALE_AFTER:
                s, c = _group_params(S_ptr, Z_ptr, sb * SB, offs_n, n_mask, N, G, BITS, GROUP_SIZE, HAS_ZEROS)
                if HALF_MAGIC:
                    # 16-bit magic: bf16 0x4300 | q is 128 + q, fp16 0x6400 | q is 1024 + q (exact
                    # for q < 128 / 1024); minus (magic + z) in x's dtype is the exact q - z.
                    if x_dtype == tl.bfloat16:
                        qh = (q | 0x4300).to(tl.uint16).to(tl.bfloat16, bitcast=True)
                        ch = (c - 8388608.0 + 128.0).to(tl.bfloat16)
                    else:
                        qh = (q | 0x6400).to(tl.uint16).to(tl.float16, bitcast=True)
                        ch = (c - 8388608.0 + 1024.0).to(tl.float16)
                    a = tl.reshape(qh - ch[:, None, None], [BLOCK_N, SB])
                else:
                    # q - z is a small integer: exact in fp16 / bf16
                    a = tl.reshape(qf - c[:, None, None], [BLOCK_N, SB]).to(x_dtype)
                if GROUP_SIZE == 0:
                    acc = tl.dot(a, xt, acc)
                else:
                    acc += tl.dot(a, xt) * s[:, None]
            else:
                if GROUP_SIZE == 0:
                    grp = offs_f * 0
                else:
                    grp = tl.minimum((sb * SB + offs_f * 16) // GROUP_SIZE, G - 1)
                sc_off = grp[None, :, None] * N + offs_n[:, None, None]  # [BLOCK_N, FIELDS, 1]
                s3 = tl.load(S_ptr + sc_off, mask=n_mask[:, None, None], other=0.0).to(tl.float32)
                if HAS_ZEROS:
                    c3 = tl.load(Z_ptr + sc_off, mask=n_mask[:, None, None], other=0).to(tl.float32) + 8388608.0
                else:
                    c3 = tl.full(s3.shape, 8388608.0 + (1 << (BITS - 1)), tl.float32)
                a = tl.reshape((qf - c3) * s3, [BLOCK_N, SB]).to(x_dtype)
                acc = tl.dot(a, xt, acc)
    if ONE_GROUP and SCALE_AFTER and GROUP_SIZE == 0:
        s_last, _c = _group_params(S_ptr, Z_ptr, 0, offs_n, n_mask, N, G, BITS, GROUP_SIZE, HAS_ZEROS)
        acc = acc * s_last[:, None]

    tile_id = pid_m * n_tiles + pid_n
    pdl_trigger(USE_PDL, PDL_EARLY)
    _finish_tile(acc, offs_n, n_mask, offs_m, m_mask, tile_id, pid_k, M, N,
                 Out_ptr, Out_row_stride, Bias_ptr, WS_ptr, Lock_ptr, HAS_BIAS, SPLIT_K)


@triton.jit
def _w4a16_wg_kernel(
    Out_ptr, X_ptr, QW_ptr, S_ptr, Z_ptr, Bias_ptr, WS_ptr, Lock_ptr, Bounds_ptr,
    M, N, K, G, num_sb, n_tiles,
    X_row_stride, X_shard_stride, Out_row_stride, QW_row_stride,
    BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, HAS_ZEROS: tl.constexpr, HAS_BIAS: tl.constexpr,
    NUM_SHARDS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, SB_PER_ITER: tl.constexpr,
    SPLIT_K: tl.constexpr, GROUP_M: tl.constexpr, HALF_DEQUANT: tl.constexpr,
    USE_PDL: tl.constexpr, PDL_EARLY: tl.constexpr,
):
    """``Out^T[n, m] = sum_k Wdeq[n, k] * x[m, k]`` with one fp32 accumulator chained through
    every ``tl.dot`` (Hopper: one async wgmma chain, A = the dequantized tile in registers, B =
    the ``[SB, BLOCK_M]`` x tile in shared memory); grid (m_tiles * n_tiles, SPLIT_K).

    Unlike "mma_sb" with its scale after the dot, the group scale is applied to the weight
    (``Wdeq = (q - z) * s``, rounded once to x's dtype, the same values the dequantize kernels
    write), so no fp32 work sits between two dots and the next superblock's dequantization
    overlaps the running wgmma. ``HALF_DEQUANT``: ``q - z`` and the product are formed in x's
    16-bit dtype (``bits(0x4300 | q)`` = bf16 ``128 + q``, ``0x6400 | q`` = fp16 ``1024 + q``;
    the subtraction is exact, and the product of a small integer and a 16-bit scale rounds once,
    exactly as the fp32 product rounded to 16 bits): only when the scales are stored in x's
    dtype and the biased integer is exact (4-bit bf16, fp16). Otherwise fp32 then one rounding.
    """
    FIELDS: tl.constexpr = 32 // BITS
    SB: tl.constexpr = 16 * FIELDS
    # a group covers whole superblocks: one scale (and zero) per row per superblock
    ONE_GROUP: tl.constexpr = (GROUP_SIZE == 0) or (GROUP_SIZE % SB == 0)
    pdl_prologue(USE_PDL, PDL_EARLY)
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m, pid_n = grouped_tile(pid, tl.cdiv(M, BLOCK_M), n_tiles, GROUP_M)

    offs_n, n_mask, sid = _tile_rows(pid_n, Bounds_ptr, N, BLOCK_N, NUM_SHARDS)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < M
    offs_j = tl.arange(0, 16)
    offs_f = tl.arange(0, FIELDS)
    offs_c = tl.arange(0, SB)
    shifts = (offs_f * BITS)[None, :, None]
    n3 = offs_n[:, None, None]
    n_mask3 = n_mask[:, None, None]
    # [BLOCK_N, 1, 16]: each thread keeps its 16-byte vector of words through the field
    # broadcast, so the expansion to [BLOCK_N, FIELDS, 16] moves no data between threads.
    qw_rows = QW_ptr + n3.to(tl.int64) * QW_row_stride + offs_j[None, None, :]
    x_tile = X_ptr + offs_m[None, :].to(tl.int64) * X_row_stride + sid * X_shard_stride + offs_c[:, None]
    it0, it1 = _split_bounds(num_sb, pid_k, SB_PER_ITER, SPLIT_K)
    x_dtype = X_ptr.dtype.element_ty

    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for it in range(it0, it1):
        for u in tl.static_range(SB_PER_ITER):
            sb = it * SB_PER_ITER + u
            w = tl.load(qw_rows + sb * 16, mask=n_mask3 & (sb * 16 + offs_j < num_sb * 16)[None, None, :], other=0)
            xt = tl.load(x_tile + sb * SB, mask=(sb * SB + offs_c < K)[:, None] & m_mask[None, :], other=0.0)
            q = (w.to(tl.uint32, bitcast=True) >> shifts) & ((1 << BITS) - 1)  # [BLOCK_N, FIELDS, 16]
            if ONE_GROUP:
                if GROUP_SIZE == 0:
                    grp = sb * 0
                else:
                    grp = tl.minimum((sb * SB) // GROUP_SIZE, G - 1)
                sc_off = grp * N + n3  # [BLOCK_N, 1, 1]
            else:
                # per field: min() sends the padded tail to the last group (its x is 0)
                grp = tl.minimum((sb * SB + offs_f * 16) // GROUP_SIZE, G - 1)
                sc_off = grp[None, :, None] * N + n3  # [BLOCK_N, FIELDS, 1]
            s = tl.load(S_ptr + sc_off, mask=n_mask3, other=0.0)
            if HAS_ZEROS:
                z = tl.load(Z_ptr + sc_off, mask=n_mask3, other=0).to(tl.int32)
            else:
                z = tl.full(s.shape, 1 << (BITS - 1), tl.int32)
            if HALF_DEQUANT:
                if x_dtype == tl.bfloat16:
                    qh = (q | 0x4300).to(tl.uint16).to(tl.bfloat16, bitcast=True)
                    zh = (z | 0x4300).to(tl.uint16).to(tl.bfloat16, bitcast=True)
                else:
                    qh = (q | 0x6400).to(tl.uint16).to(tl.float16, bitcast=True)
                    zh = (z | 0x6400).to(tl.uint16).to(tl.float16, bitcast=True)
                a = (qh - zh) * s.to(x_dtype)
            else:
                qf = (q | 0x4B000000).to(tl.float32, bitcast=True)
                zf = (z | 0x4B000000).to(tl.float32, bitcast=True)
                a = ((qf - zf) * s.to(tl.float32)).to(x_dtype)
            acc = tl.dot(tl.reshape(a, [BLOCK_N, SB]), xt, acc)

    tile_id = pid_m * n_tiles + pid_n
    pdl_trigger(USE_PDL, PDL_EARLY)
    _finish_tile(acc, offs_n, n_mask, offs_m, m_mask, tile_id, pid_k, M, N,
                 Out_ptr, Out_row_stride, Bias_ptr, WS_ptr, Lock_ptr, HAS_BIAS, SPLIT_K)


@triton.jit
def _w4a16_dequant_kernel(
    W_ptr, QW_ptr, S_ptr, Z_ptr, N, K, G, num_sb, W_row_stride, QW_row_stride, S_row_stride,
    BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, PPG: tl.constexpr, HAS_ZEROS: tl.constexpr,
    BLOCK_N: tl.constexpr, SB_PER_PROG: tl.constexpr,
):
    """``W[n, k] = (q - z) * s`` in W's dtype, packed column order; grid (n_tiles, sb_tiles).

    N x K is the block written (a row / column window of the layer: S_row_stride is the layer's N).
    """
    FIELDS: tl.constexpr = 32 // BITS
    SB: tl.constexpr = 16 * FIELDS
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    offs_j = tl.arange(0, 16)
    qw_rows = QW_ptr + offs_n[:, None].to(tl.int64) * QW_row_stride + offs_j[None, :]
    w_rows = W_ptr + offs_n[:, None].to(tl.int64) * W_row_stride
    for u in tl.static_range(SB_PER_PROG):
        sb = tl.program_id(1) * SB_PER_PROG + u
        w = tl.load(qw_rows + sb * 16, mask=n_mask[:, None] & (sb * 16 + offs_j < num_sb * 16)[None, :], other=0)
        for pg in tl.static_range(FIELDS // PPG):
            kg = sb * SB + pg * PPG * 16
            s, c = _group_params(S_ptr, Z_ptr, kg, offs_n, n_mask, S_row_stride, G, BITS, GROUP_SIZE, HAS_ZEROS)
            for pi in tl.static_range(PPG):
                kk = kg + pi * 16 + offs_j
                val = (_plane(w, pg * PPG + pi, BITS) - c[:, None]) * s[:, None]
                tl.store(w_rows + kk[None, :], val.to(W_ptr.dtype.element_ty), mask=n_mask[:, None] & (kk < K)[None, :])


@triton.jit
def _w4a16_dequant_v2_kernel(
    W_ptr, QW_ptr, S_ptr, Z_ptr, N, K, G, num_sb, W_row_stride, QW_row_stride, S_row_stride,
    BITS: tl.constexpr, GROUP_SIZE: tl.constexpr, HAS_ZEROS: tl.constexpr,
    BLOCK_N: tl.constexpr, SB_PER_PROG: tl.constexpr,
):
    """Same result as ``_w4a16_dequant_kernel``, written a whole superblock row at a time.

    The ``[BLOCK_N, FIELDS, 16]`` output tile of one superblock is ``SB * 2`` contiguous bytes
    per row (256 for 4-bit bf16), so stores are 16-byte vectors; each element takes its field
    with a per-element shift of the word broadcast along the field axis (words re-read from L1).
    """
    FIELDS: tl.constexpr = 32 // BITS
    SB: tl.constexpr = 16 * FIELDS
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n3 = offs_n[:, None, None]
    n_mask3 = n3 < N
    f3 = tl.arange(0, FIELDS)[None, :, None]
    j3 = tl.arange(0, 16)[None, None, :]
    qw_rows = QW_ptr + n3.to(tl.int64) * QW_row_stride + j3  # [BN, 1, 16]
    w_rows = W_ptr + n3.to(tl.int64) * W_row_stride
    for u in tl.static_range(SB_PER_PROG):
        sb = tl.program_id(1) * SB_PER_PROG + u
        w = tl.load(qw_rows + sb * 16, mask=n_mask3 & (sb * 16 + j3 < num_sb * 16), other=0)  # [BN, 1, 16]
        q = (w >> (f3 * BITS)) & ((1 << BITS) - 1)  # [BN, FIELDS, 16]
        kk = sb * SB + f3 * 16 + j3  # packed column
        if GROUP_SIZE == 0:
            grp = f3 * 0
        else:
            grp = tl.minimum((sb * SB + f3 * 16) // GROUP_SIZE, G - 1)  # [1, FIELDS, 1]
        s = tl.load(S_ptr + grp * S_row_stride + n3, mask=n_mask3, other=0.0).to(tl.float32)
        if HAS_ZEROS:
            c = tl.load(Z_ptr + grp * S_row_stride + n3, mask=n_mask3, other=0).to(tl.float32) + 8388608.0
        else:
            c = tl.full(s.shape, 8388608.0 + (1 << (BITS - 1)), tl.float32)
        val = ((q | 0x4B000000).to(tl.float32, bitcast=True) - c) * s
        tl.store(w_rows + kk, val.to(W_ptr.dtype.element_ty), mask=n_mask3 & (kk < K))


# --------------------------------------------------------------------------------------------
# launchers
# --------------------------------------------------------------------------------------------


def _layout_constexprs(packed) -> tuple[int, int]:
    """(GROUP_SIZE constexpr: 0 = per channel, PPG = planes per group)."""
    fields = 32 // packed.bits
    if packed.num_groups == 1:
        return 0, fields
    g = packed.group_size
    if g % 16:
        raise ValueError(f"packed.group_size: Triton kernels need a multiple of 16, got {g}")
    return g, min(fields, math.gcd(g, 16 * fields) // 16)


def _gathered_x(x: torch.Tensor, packed) -> tuple[torch.Tensor, int]:
    """x in packed column order: itself, or ``[M, S*K]`` through the act-order permutations."""
    if packed.perm is None:
        return x, 0
    # One gather for every shard; kernels read shard s at column offset s*K.
    return x.index_select(1, packed.perm.view(-1)), packed.k


def _n_tiles(packed, block_n: int) -> int:
    rows = packed.shard_rows
    return sum(cdiv(rows[s + 1] - rows[s], block_n) for s in range(len(rows) - 1))


def _auto_split(tiles: int, iters: int, sms: int) -> int:
    split = 1
    while tiles * split < 2 * sms and cdiv(iters, split * 2) >= 2 and split < 32:
        split *= 2
    return split


def _wg_half_dequant(dtype: torch.dtype, packed) -> bool:
    """"wg" forms ``(q - z) * s`` in 16 bits when that is exact-then-one-rounding: scales stored
    in x's dtype, and the biased integer exact (bf16 holds 128 + q for 4-bit q only)."""
    return packed.scales.dtype == dtype and (packed.bits == 4 or dtype == torch.float16)


def _m_tiles(m: int, cfg: W4A16Config) -> int:
    return m if cfg.kernel == "gemv" else cdiv(m, cfg.block_m)


def resolve_config(m: int, packed, config: W4A16Config | None, device: torch.device) -> W4A16Config:
    """``config`` (or the default for M) with ``split_k`` resolved to the value launched."""
    cfg = config or default_config(m)
    num_sb = packed.qweight.shape[1] // _SB_WORDS
    n_tiles = _n_tiles(packed, cfg.block_n)
    iters = cdiv(num_sb, cfg.sb_per_iter)
    m_tiles = _m_tiles(m, cfg)
    split = cfg.split_k or _auto_split(n_tiles * m_tiles, iters, _num_sms(device))
    split = max(1, min(split, iters))
    if split > 1 and n_tiles * m_tiles > _LOCK_SLOTS:
        split = 1  # more tiles than counters: the grid is large enough without split-K
    return replace(cfg, split_k=split)


def w4a16_gemm(
    x: torch.Tensor, packed, bias: torch.Tensor | None = None, config: W4A16Config | None = None
) -> torch.Tensor:
    """``x [M, K] (fp16/bf16, stride(1) == 1) @ W.T + bias -> [M, N]`` in x's dtype, one launch
    (plus the act-order gather of x). ``config`` None picks :func:`default_config` by M."""
    if x.dim() != 2 or x.shape[1] != packed.k or x.stride(1) != 1:
        raise ValueError(f"x: expected [M, {packed.k}] with stride(1) == 1, got {describe(x)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"x: expected float16 / bfloat16, got {describe(x)}")
    m, n, k = x.shape[0], packed.n, packed.k
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m == 0:
        return out
    cfg = resolve_config(m, packed, config, x.device)
    split = cfg.split_k
    group_size, ppg = _layout_constexprs(packed)
    xg, shard_stride = _gathered_x(x, packed)
    num_sb = packed.qweight.shape[1] // _SB_WORDS
    n_tiles = _n_tiles(packed, cfg.block_n)
    m_tiles = _m_tiles(m, cfg)
    locks = _locks(x.device)
    ws = torch.empty((split, m, n), dtype=torch.float32, device=x.device) if split > 1 else out
    dummy = packed.qweight
    common = dict(
        BITS=packed.bits, GROUP_SIZE=group_size, PPG=ppg,
        HAS_ZEROS=packed.zeros is not None, HAS_BIAS=bias is not None,
        NUM_SHARDS=packed.num_shards, BLOCK_N=cfg.block_n, SB_PER_ITER=cfg.sb_per_iter,
        SPLIT_K=split, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        **launch_options(x.device, m, _pdl.W4A16_PDL_MAX_M),
    )
    ptrs = (out, xg, packed.qweight, packed.scales,
            packed.zeros if packed.zeros is not None else dummy,
            bias if bias is not None else dummy, ws, locks, packed.row_bounds)
    if cfg.kernel == "gemv":
        if cfg.block_m != 1:
            raise ValueError(f"config.block_m: the gemv kernel takes 1, got {cfg.block_m}")
        _w4a16_gemv_kernel[(m, n_tiles, split)](
            *ptrs, m, n, k, packed.num_groups, num_sb,
            xg.stride(0), shard_stride, out.stride(0), packed.qweight.stride(0), **common,
        )
    elif cfg.kernel == "mma":
        _w4a16_mma_kernel[(m_tiles * n_tiles, split)](
            *ptrs, m, n, k, packed.num_groups, num_sb, n_tiles,
            xg.stride(0), shard_stride, out.stride(0), packed.qweight.stride(0),
            BLOCK_M=cfg.block_m, GROUP_M=cfg.group_m, **common,
        )
    elif cfg.kernel == "wg":
        common.pop("PPG")
        _w4a16_wg_kernel[(m_tiles * n_tiles, split)](
            *ptrs, m, n, k, packed.num_groups, num_sb, n_tiles,
            xg.stride(0), shard_stride, out.stride(0), packed.qweight.stride(0),
            BLOCK_M=cfg.block_m, GROUP_M=cfg.group_m, HALF_DEQUANT=_wg_half_dequant(x.dtype, packed), **common,
        )
    elif cfg.kernel == "mma_sb":
        common.pop("PPG")
        # 16-bit magic only where the biased integer stays exact: bf16 holds 128 + q for 4-bit
        # q, fp16 holds 1024 + q for 4- and 8-bit q.
        half_magic = packed.bits == 4 or x.dtype == torch.float16
        _w4a16_mma_sb_kernel[(m_tiles * n_tiles, split)](
            *ptrs, m, n, k, packed.num_groups, num_sb, n_tiles,
            xg.stride(0), shard_stride, out.stride(0), packed.qweight.stride(0),
            BLOCK_M=cfg.block_m, GROUP_M=cfg.group_m, SCALE_AFTER=cfg.scale_after,
            HALF_MAGIC=half_magic, **common,
        )
    else:
        raise ValueError(f"config.kernel: expected 'gemv', 'mma', 'mma_sb' or 'wg', got {cfg.kernel!r}")
    return out


# Dequantize launch defaults per kernel version. Run 1 (v1, bn64 sb2; notes/gpu_run1, M = 128
# dequant_cublas minus bf16 F.linear) implies the dequantize took ~11.7 / 35 / 111 us for
# 2112x7168 / 24576x1536 / 7168x16384 (~2.7-3.2 TB/s of int4 read + bf16 write; ~4 TB/s would be
# ~9 / 24 / 73 us). v2 writes whole superblock rows with 16-byte stores. Session 4
# (benchmarks/results/session4/probe_large_m_r2.json, the kernel alone, cold weights, bf16 out):
# v1 13.0 / 35.0 / 106.8 us vs v2 15.2 / 37.6 / 110.0 (best v2 launch variant 14.9 / 37.4 / 109.6),
# 0.64-0.69 of the copy ceiling: v1.
_DEQUANT_DEFAULTS = {1: dict(block_n=64, sb_per_prog=2, num_warps=4), 2: dict(block_n=32, sb_per_prog=2, num_warps=4)}
_DEQUANT_VERSION = 1


def w4a16_dequantize(packed, dtype: torch.dtype, *, rows: tuple[int, int] | None = None,
                     cols: tuple[int, int] | None = None, out: torch.Tensor | None = None,
                     block_n: int | None = None, sb_per_prog: int | None = None,
                     num_warps: int | None = None, version: int | None = None) -> torch.Tensor:
    """Dequantized weight ``W[r0:r1, k0:k1]`` in ``dtype``, columns in packed (per-shard sorted) order.

    ``rows`` = (r0, r1) and ``cols`` = (k0, k1) default to the whole ``[N, K]``; k0 must start a
    superblock (``16 * 32 / bits`` columns) and a group. ``out``: a ``[r1 - r0, k1 - k0]`` tensor
    of ``dtype`` with ``stride(-1) == 1`` (any row stride) to write into, else a new one.
    ``version`` 2 (``[BLOCK_N, superblock]`` tiles, 16-byte stores) or 1 (one 16-column plane per
    store); None launch parameters take :data:`_DEQUANT_DEFAULTS`.
    """
    version = version or _DEQUANT_VERSION
    if version not in _DEQUANT_DEFAULTS:
        raise ValueError(f"version: expected 1 or 2, got {version}")
    d = _DEQUANT_DEFAULTS[version]
    block_n = block_n or d["block_n"]
    sb_per_prog = sb_per_prog or d["sb_per_prog"]
    num_warps = num_warps or d["num_warps"]
    r0, r1 = rows if rows is not None else (0, packed.n)
    k0, k1 = cols if cols is not None else (0, packed.k)
    sb_cols = 16 * (32 // packed.bits)
    grouped = packed.num_groups > 1
    if not 0 <= r0 < r1 <= packed.n:
        raise ValueError(f"rows: expected 0 <= r0 < r1 <= N={packed.n}, got {rows}")
    if not 0 <= k0 < k1 <= packed.k or k0 % sb_cols or (grouped and k0 % packed.group_size):
        raise ValueError(
            f"cols: expected 0 <= k0 < k1 <= K={packed.k} with k0 a multiple of {sb_cols} (superblock)"
            f"{f' and of {packed.group_size} (group)' if grouped else ''}, got {cols}"
        )
    n, k = r1 - r0, k1 - k0
    if out is None:
        out = torch.empty((n, k), dtype=dtype, device=packed.qweight.device)
    elif (tuple(out.shape) != (n, k) or out.dtype != dtype or out.device != packed.qweight.device
          or out.stride(-1) != 1):
        raise ValueError(
            f"out: expected [{n}, {k}] {dtype} on {packed.qweight.device} with stride(-1) == 1, got {describe(out)}"
        )
    group_size, ppg = _layout_constexprs(packed)
    sb0, num_sb = k0 // sb_cols, cdiv(k, sb_cols)
    g0 = k0 // packed.group_size if grouped else 0
    # windows as views: the kernels take the data pointers (storage offsets included) and strides
    qw = packed.qweight[r0:r1, sb0 * 16:]
    scales = packed.scales[g0:, r0:]
    zeros = packed.zeros[g0:, r0:] if packed.zeros is not None else qw
    args = (out, qw, scales, zeros, n, k, packed.num_groups - g0, num_sb, out.stride(0), qw.stride(0),
            packed.scales.stride(0))
    grid = (cdiv(n, block_n), cdiv(num_sb, sb_per_prog))
    if version == 2:
        _w4a16_dequant_v2_kernel[grid](
            *args, BITS=packed.bits, GROUP_SIZE=group_size, HAS_ZEROS=packed.zeros is not None,
            BLOCK_N=block_n, SB_PER_PROG=sb_per_prog, num_warps=num_warps,
        )
        return out
    _w4a16_dequant_kernel[grid](
        *args, BITS=packed.bits, GROUP_SIZE=group_size, PPG=ppg, HAS_ZEROS=packed.zeros is not None,
        BLOCK_N=block_n, SB_PER_PROG=sb_per_prog, num_warps=num_warps,
    )
    return out


def w4a16_dequant_gemm(x: torch.Tensor, packed, bias: torch.Tensor | None = None) -> torch.Tensor:
    """Large-M path: dequantize into a fresh (allocator-cached) buffer of x's dtype, then cuBLAS.

    Act-order layers run one GEMM per shard on the gathered x (S <= a few; launch cost is noise
    at the M where this path is chosen).
    """
    if x.dim() != 2 or x.shape[1] != packed.k or x.stride(1) != 1:
        raise ValueError(f"x: expected [M, {packed.k}] with stride(1) == 1, got {describe(x)}")
    w = w4a16_dequantize(packed, x.dtype)
    b = None if bias is None else bias.to(x.dtype)
    if packed.perm is None:
        return torch.nn.functional.linear(x, w, b)
    xg, k = _gathered_x(x, packed)
    rows = packed.shard_rows
    parts = [
        torch.nn.functional.linear(xg[:, s * k:(s + 1) * k], w[rows[s]:rows[s + 1]])
        for s in range(len(rows) - 1)
    ]
    y = torch.cat(parts, dim=1)
    return y if b is None else y + b

