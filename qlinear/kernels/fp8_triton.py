"""Triton kernels for FP8 (e4m3) activation quantization, block-scaled FP8 GEMM and the fused
RMSNorm -> FP8 quantization, with their launchers.

Numerics follow ``qlinear.reference.fp8`` exactly: group scales are ``max(amax, eps) / 448`` and
codes ``e4m3(clamp(x / scale, -448, 448))`` with IEEE (round-to-nearest) divisions, so the
quantizer is bit-identical to the reference. Importing this module imports triton; it compiles
nothing until a launcher runs.

Under ``TRITON_INTERPRET=1`` (CPU tests) the fp32 -> e4m3 cast is done with integer arithmetic:
the interpreter's own cast truncates the carry of a rounded mantissa and rounds ties away from
zero, while GPUs use the hardware RNE cast (``cvt.rn.satfinite.e4m3x2.f32``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from qlinear._utils import FP8_E4M3, cdiv, empty_group_scales
from qlinear.kernels._pdl import launch_options, pdl_prologue, pdl_trigger
from qlinear.kernels._splitk import LOCK_SLOTS, locks, splitk_sum
from qlinear.kernels._tiles import grouped_tile

__all__ = [
    "GemmConfig",
    "default_gemm_config",
    "auto_split_k",
    "per_token_group_quant_fp8",
    "fp8_block_gemm",
    "fp8_block_linear_triton",
    "GEMM_CONFIGS",
    "SWAP_AB_CONFIGS",
    "small_m_path",
    "rms_norm_quant_fp8",
]

_FP8_MAX = tl.constexpr(448.0)  # a global read inside @triton.jit must be a constexpr


def _interpret() -> bool:
    # Read at launch, not import: a test process may set it before its first launch.
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


# --------------------------------------------------------------------------------------------
# device helpers
# --------------------------------------------------------------------------------------------


@triton.jit
def _f32_to_e4m3(y, INTERPRET: tl.constexpr):
    """``y`` fp32, already clamped to [-448, 448] -> float8e4nv with round-to-nearest-even.

    Done on the bits everywhere: the interpreter's cast loses the carry of a rounded-up
    mantissa, and on an H200 (Triton 3.6) the native cast disagreed with torch's RNE cast on
    some elements in every case of our first GPU run (tests/gpu/test_fp8_gpu.py::
    test_quant_bit_exact). About ten integer ops per element, no float -> int conversion: the
    fused quantizers are bound by instruction issue, not memory (see _div_by_scale).
    """
    bits = y.to(tl.uint32, bitcast=True)
    mag = bits & 0x7FFFFFFF
    # Normal e4m3 (|y| >= 2^-6): keep 3 of fp32's 23 mantissa bits with RNE; the integer add
    # carries into the exponent field, and the e4m3 exponent is the fp32 one minus 120 (folded
    # into the same add: mag >= 0x3C800000 here, so nothing wraps where the result is used).
    lsb = (mag >> 20) & 1
    normal = ((mag + lsb + 0x7FFFF) - 0x3C000000) >> 20
    # Subnormal e4m3: multiples of 2^-9. |y| * 512 + 2^23 makes fp32 round |y| * 512 RNE to an
    # integer that sits in the low mantissa bits of 2^23 (0x4B000000): subtracting the bits of
    # 2^23 reads it off without a float -> int conversion (a quarter-rate instruction).
    a = mag.to(tl.float32, bitcast=True)
    sub = (a * 512.0 + 8388608.0).to(tl.uint32, bitcast=True) - 0x4B000000
    code = tl.where(mag < 0x3C800000, sub, normal) | ((bits >> 24) & 0x80)
    q = code.to(tl.uint8).to(tl.float8e4nv, bitcast=True)
    return q


@triton.jit
def _div_by_scale(y, scale, INTERPRET: tl.constexpr):
    """``y / scale[:, None]`` bit-identical to ``tl.math.div_rn`` (== torch's fp32 ``/``) for
    the operands a quantizer sees, with ``scale`` [R] one value per row of ``y`` [R, C].

    ``div.rn.f32`` compiles (sm_90, checked with nvdisasm) to: ``r0 = MUFU.RCP(b)``,
    ``r = fma(r0, fma(-b, r0, 1), r0)``, ``q = a * r``, ``q += r * fma(-q, b, a)``, plus an FCHK
    range check, a branch to a slow path and a convergence barrier, per element. That made the
    fused RMSNorm -> FP8 kernel instruction-bound on an H200 (run 1: 0.37 of the copy ceiling).
    Here the reciprocal part runs once per row and each element does the last three steps, the
    same instructions as div.rn's fast path, so the same result wherever that fast path is taken.
    FCHK sends only extreme exponents to the slow path; here ``scale`` is in [2.2e-13, 7.6e35]
    (so ``r`` is normal) and ``|y / scale| <= 448``, which leaves only ``|y| < 2^-100``-ish,
    whose quotients are far below half the smallest e4m3 subnormal (code 0 either way). The
    interpreter divides directly (it has no MUFU and no true fused multiply-add).
    """
    if INTERPRET:
        q = tl.math.div_rn(y, scale[:, None])
    else:
        r0 = tl.inline_asm_elementwise(
            "rcp.approx.f32 $0, $1;", "=r,r", [scale], dtype=tl.float32, is_pure=True, pack=1
        )
        r = tl.fma(r0, tl.fma(-scale, r0, 1.0), r0)[:, None]
        s2 = scale[:, None]
        q = y * r
        q = tl.fma(r, tl.fma(-q, s2, y), q)
    return q


@triton.jit
def _quant_rows(x, scale_eps, INTERPRET: tl.constexpr):
    """Quantize each row of the fp32 tile ``x`` [R, GROUP] as one group: returns the e4m3 codes
    [R, GROUP] and the fp32 scales [R] (``max(amax, scale_eps) / 448``, IEEE division)."""
    amax = tl.max(tl.abs(x), axis=1)
    scale = tl.math.div_rn(tl.maximum(amax, scale_eps), _FP8_MAX)
    y = tl.clamp(_div_by_scale(x, scale, INTERPRET), -_FP8_MAX, _FP8_MAX)
    return _f32_to_e4m3(y, INTERPRET), scale


@triton.jit
def _f32_to(y, DST: tl.constexpr, INTERPRET: tl.constexpr):
    """fp32 -> ``DST`` (fp32 / bf16 / fp16) with round-to-nearest-even. The interpreter's casts
    lose the carry of a rounded-up mantissa, so under it the rounding is done on the bits."""
    if INTERPRET and DST == tl.bfloat16:
        bits = y.to(tl.uint32, bitcast=True)
        r = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        out = r.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    elif INTERPRET and DST == tl.float16:
        bits = y.to(tl.uint32, bitcast=True)
        sign = (bits >> 16) & 0x8000
        mag = bits & 0x7FFFFFFF
        a = mag.to(tl.float32, bitcast=True)
        normal = ((mag + 0xFFF + ((mag >> 13) & 1)) >> 13) - (112 << 10)
        # fp16 subnormals are multiples of 2^-24; + 2^23 makes fp32 round a * 2^24 to an integer.
        sub = ((tl.minimum(a, 6.103515625e-05) * 16777216.0 + 8388608.0) - 8388608.0).to(tl.uint32)
        code = tl.where(a < 6.103515625e-05, sub, normal) | sign
        out = code.to(tl.uint16).to(tl.float16, bitcast=True)
    else:
        out = y.to(DST)
    return out


# --------------------------------------------------------------------------------------------
# per-token-group quantization
# --------------------------------------------------------------------------------------------


@triton.jit(do_not_specialize=["M", "M_pad"])
def _per_token_group_quant_fp8_kernel(
    Q_ptr,
    S_ptr,
    X_ptr,
    M,
    M_pad,
    K,
    G,
    X_row_stride,
    Q_row_stride,
    S_row_stride,
    S_col_stride,
    scale_eps,
    GROUP: tl.constexpr,
    GROUPS_PER_PROG: tl.constexpr,
    ROWS: tl.constexpr,
    INTERPRET: tl.constexpr,
    USE_PDL: tl.constexpr,
    PDL_EARLY: tl.constexpr,
):
    # One program: ROWS rows x GROUPS_PER_PROG consecutive groups, held as a [ROWS * GPP, GROUP]
    # tile (tile row r = activation row r // GPP, group r % GPP) so every group is a row of the
    # tile. Rows in [M, M_pad) (padding requested by the caller) read as zeros, so they get code 0
    # and a tiny finite scale.
    pdl_prologue(USE_PDL, PDL_EARLY)
    r = tl.arange(0, ROWS * GROUPS_PER_PROG)
    row = tl.program_id(0) * ROWS + r // GROUPS_PER_PROG
    gi = tl.program_id(1) * GROUPS_PER_PROG + r % GROUPS_PER_PROG
    cols = gi[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
    col_ok = cols < K
    row64 = row.to(tl.int64)[:, None]
    x = tl.load(X_ptr + row64 * X_row_stride + cols, mask=col_ok & (row < M)[:, None], other=0.0).to(tl.float32)
    pdl_trigger(USE_PDL, PDL_EARLY)
    qv, scale = _quant_rows(x, scale_eps, INTERPRET)
    row_ok = row < M_pad
    tl.store(Q_ptr + row64 * Q_row_stride + cols, qv, mask=col_ok & row_ok[:, None])
    tl.store(S_ptr + row.to(tl.int64) * S_row_stride + gi * S_col_stride, scale, mask=row_ok & (gi < G))


# Small-M knobs, module constants read at each launch (benchmarks/gpu_fp8small.sh flips them in
# one process to compare the variants on an H200; the defaults are the last measured behaviour):
#   QUANT_ROW_BLOCK: per_token_group_quant_fp8 gives each program up to this many rows (1: one row
#     per program, a grid of M x groups; 16: at M <= 16 one program row for all rows).
#   FUSED_QUANT_MAX_M: fp8_block_linear_triton quantizes the activations inside the GEMM (no
#     quantization launch) for M <= this; 0 = never.
#   PREFETCH_WEIGHTS: "off"; "pdl" = when the GEMM launches with PDL, each program first asks L2
#     for its weight bytes (cp.async.bulk.prefetch, no data returned) and only then waits at
#     griddepcontrol.wait, so the weight stream overlaps the preceding kernel; "always" = also
#     without PDL. Weights are not written by the preceding kernel, and a prefetch returns no data,
#     so results never depend on it.
QUANT_ROW_BLOCK = 1
FUSED_QUANT_MAX_M = 0
PREFETCH_WEIGHTS = "off"


def _quant_rows_per_prog(M_pad: int) -> int:
    return max(1, min(triton.next_power_of_2(max(M_pad, 1)), QUANT_ROW_BLOCK))


def _group_tile(group_size: int, K: int) -> int:
    """Tile width of one group: the group itself (a power of two >= 16), or, when one group
    spans the whole row (per-token quantization), the row rounded up to a power of two."""
    if group_size >= K:
        return max(16, triton.next_power_of_2(K))
    check_group_size(group_size)
    return group_size


def _groups_per_prog(G: int, group: int, cap: int = 16) -> int:
    # Largest power of two <= cap (and <= 4096 elements per program) dividing G, so no program
    # holds a masked-off tail of groups; G itself (rounded up) when it is small.
    cap = max(1, min(cap, 4096 // group))
    if G <= cap:
        return triton.next_power_of_2(G)
    p = cap
    while p > 1 and G % p:
        p //= 2
    return p if p >= 4 else cap


def per_token_group_quant_fp8(
    x: torch.Tensor,
    group_size: int = 128,
    *,
    column_major_scales: bool = False,
    pad_rows_to: int = 1,
    scale_eps: float = 1e-10,
    rows_per_prog: int | None = None,
    pdl_trigger: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize ``x`` [M, K] (fp16/bf16/fp32, ``stride(1) == 1``, any row stride) to e4m3 per
    ``group_size`` columns of each row.

    Returns ``q`` [M_pad, K] e4m3 (contiguous) and fp32 ``scales`` [M_pad, cdiv(K, group_size)]
    where ``M_pad = round_up(M, pad_rows_to)`` (rows past M are zeros with tiny scales: the shape
    cuBLAS wants). With ``column_major_scales`` the scales are the transpose of a contiguous
    [G, M_pad] tensor (strides ``(1, M_pad)``). ``rows_per_prog``: activation rows per program
    (rounded up to a power of two; default :func:`_quant_rows_per_prog`). ``pdl_trigger``: "early"
    / "late" places the launch's PDL trigger (``qlinear.kernels._pdl.launch_options``); None follows
    ``QLINEAR_PDL``.
    """
    M, K = x.shape
    G = cdiv(K, group_size)
    M_pad = cdiv(M, pad_rows_to) * pad_rows_to
    q = torch.empty((M_pad, K), dtype=FP8_E4M3, device=x.device)
    s = empty_group_scales(M_pad, G, column_major_scales, x.device)
    if M_pad == 0 or K == 0:
        return q, s
    tile = _group_tile(group_size, K)
    rows = _quant_rows_per_prog(M_pad) if rows_per_prog is None else triton.next_power_of_2(rows_per_prog)
    gpp = _groups_per_prog(G, tile, max(1, 4096 // (rows * tile)))
    grid = (cdiv(M_pad, rows), cdiv(G, gpp))
    _per_token_group_quant_fp8_kernel[grid](
        q,
        s,
        x,
        M,
        M_pad,
        K,
        G,
        x.stride(0),
        q.stride(0),
        s.stride(0),
        s.stride(1),
        scale_eps,
        GROUP=tile,
        GROUPS_PER_PROG=gpp,
        ROWS=rows,
        INTERPRET=_interpret(),
        num_warps=min(16, max(2, rows * gpp * tile // 512)),
        **launch_options(x.device, M, trigger=pdl_trigger),
    )
    return q, s


# --------------------------------------------------------------------------------------------
# block-scaled FP8 GEMM with optional split-K
# --------------------------------------------------------------------------------------------


@triton.jit
def _prefetch_l2(ptrs, nbytes):
    """Ask L2 for ``nbytes`` (a multiple of 16, 16-byte aligned start) at each of ``ptrs``; no data
    comes back to the SM (sm_90 ``cp.async.bulk.prefetch``)."""
    tl.inline_asm_elementwise(
        "cp.async.bulk.prefetch.L2.global [$1], $2; // $0", "=r,l,r", [ptrs, nbytes],
        dtype=tl.int32, is_pure=False, pack=1,
    )


@triton.jit
def _unrolled_masks(m_ok, n_ok, offs_m, offs_n, kb, kb_end, K_UNROLL: tl.constexpr):
    """The row masks of K block ``kb`` of a K_UNROLL iteration: with K_UNROLL > 1 a block past the
    slice's end (the last iteration of a slice whose length K_UNROLL does not divide) reads as zeros."""
    if K_UNROLL > 1:
        # broadcast as int vectors: the interpreter rejects a bool vector & a scalar bool as a mask
        m_ok = m_ok & ((offs_m * 0 + kb) < kb_end)
        n_ok = n_ok & ((offs_n * 0 + kb) < kb_end)
    return m_ok, n_ok


@triton.jit(do_not_specialize=["M"])
def _fp8_block_gemm_kernel(
    C_ptr,
    A_ptr,
    B_ptr,
    As_ptr,
    Bs_ptr,
    Bias_ptr,
    WS_ptr,
    Lock_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bn,
    stride_cm,
    stride_as_m,
    stride_as_k,
    stride_bs_n,
    stride_bs_k,
    k_blocks_per_split,
    scale_eps,
    SCALE_BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    FP8_DOT: tl.constexpr,
    QUANT_A: tl.constexpr,
    PREFETCH_B: tl.constexpr,
    K_UNROLL: tl.constexpr,
    INTERPRET: tl.constexpr,
    USE_PDL: tl.constexpr,
    PDL_EARLY: tl.constexpr,
):
    # C[m, n] = sum_kb As[m, kb] * Bs[n // SCALE_BLOCK_N, kb] * sum_{k in kb} A[m, k] * B[n, k]
    # BLOCK_K equals the K extent of a scale block, so each K step has one scale per row of A
    # and one per row of B (gathered per column: BLOCK_N need not divide SCALE_BLOCK_N).
    # QUANT_A: A_ptr holds the unquantized activations (bf16 / fp16 / fp32); each K step turns its
    # [BLOCK_M, BLOCK_K] tile into e4m3 codes + one scale per row in registers, exactly as
    # per_token_group_quant_fp8 does with group BLOCK_K (As_ptr unused).
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m, pid_n = grouped_tile(pid, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    kb_begin = pid_k * k_blocks_per_split
    kb_end = tl.minimum(kb_begin + k_blocks_per_split, tl.cdiv(K, BLOCK_K))
    if PREFETCH_B:
        # The weight is not written by the kernel before us: start its HBM -> L2 stream before
        # waiting for that kernel (one bulk prefetch per weight row of this program's K range;
        # the launcher enables this only for EVEN_K and 16-byte aligned rows).
        rows = tl.minimum(pid_n * BLOCK_N + tl.arange(0, BLOCK_N), N - 1)
        k_lo = kb_begin * BLOCK_K
        nbytes = tl.zeros((BLOCK_N,), dtype=tl.int32) + (kb_end - kb_begin) * BLOCK_K
        _prefetch_l2(B_ptr + rows.to(tl.int64) * stride_bn + k_lo, nbytes)
    pdl_prologue(USE_PDL, PDL_EARLY)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < N
    a_ptrs = A_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :]
    # B is read as a [BLOCK_K, BLOCK_N] tile whose K axis is contiguous (the K-major operand
    # layout the fp8 MMA wants), so no transpose is needed before tl.dot.
    b_ptrs = B_ptr + offs_n[None, :].to(tl.int64) * stride_bn + offs_k[:, None]
    as_ptrs = As_ptr + offs_m * stride_as_m
    bs_ptrs = Bs_ptr + (offs_n // SCALE_BLOCK_N) * stride_bs_n

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # K_UNROLL K blocks per iteration (see GemmConfig.k_unroll); the sum order is the same
    for kb0 in range(kb_begin, kb_end, K_UNROLL):
        for u in tl.static_range(K_UNROLL):
            kb = kb0 + u
            m_in, n_in = _unrolled_masks(m_ok, n_ok, offs_m, offs_n, kb, kb_end, K_UNROLL)
            k0 = kb * BLOCK_K
            if EVEN_K:
                a = tl.load(a_ptrs + k0, mask=m_in[:, None], other=0.0)
                b = tl.load(b_ptrs + k0, mask=n_in[None, :], other=0.0)
            else:
                k_ok = (k0 + offs_k) < K
                a = tl.load(a_ptrs + k0, mask=m_in[:, None] & k_ok[None, :], other=0.0)
                b = tl.load(b_ptrs + k0, mask=k_ok[:, None] & n_in[None, :], other=0.0)
            if QUANT_A:
                # rows >= M and columns >= K read as zeros: as in the quantization kernel
                a, a_s = _quant_rows(a.to(tl.float32), scale_eps, INTERPRET)
            else:
                a_s = tl.load(as_ptrs + kb * stride_as_k, mask=m_in, other=0.0)
            b_s = tl.load(bs_ptrs + kb * stride_bs_k, mask=n_in, other=0.0)
            if FP8_DOT:
                part = tl.dot(a, b)
            else:
                # GPUs without fp8 tensor cores: e4m3 -> fp16 is exact (subnormals included).
                part = tl.dot(a.to(tl.float16), b.to(tl.float16))
            acc += part * a_s[:, None] * b_s[None, :]

    pdl_trigger(USE_PDL, PDL_EARLY)
    c_ptrs = C_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
    c_ok = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        if HAS_BIAS:
            acc += tl.load(Bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
        tl.store(c_ptrs, _f32_to(acc, C_ptr.dtype.element_ty, INTERPRET), mask=c_ok)
    else:
        # fp32 partials summed in a fixed order by the last split to arrive (deterministic)
        ws_ptrs = WS_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
        total, last = splitk_sum(acc, ws_ptrs, M * N, c_ok, Lock_ptr + pid, pid_k, SPLIT_K)
        if last:
            if HAS_BIAS:
                total += tl.load(Bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
            tl.store(c_ptrs, _f32_to(total, C_ptr.dtype.element_ty, INTERPRET), mask=c_ok)


@triton.jit(do_not_specialize=["M"])
def _fp8_block_gemm_swapab_kernel(
    C_ptr,
    A_ptr,
    B_ptr,
    As_ptr,
    Bs_ptr,
    Bias_ptr,
    WS_ptr,
    Lock_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bn,
    stride_cm,
    stride_as_m,
    stride_as_k,
    stride_bs_n,
    stride_bs_k,
    k_blocks_per_split,
    scale_eps,
    SCALE_BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    FP8_DOT: tl.constexpr,
    QUANT_A: tl.constexpr,
    K_UNROLL: tl.constexpr,
    INTERPRET: tl.constexpr,
    USE_PDL: tl.constexpr,
    PDL_EARLY: tl.constexpr,
):
    # The same sum as _fp8_block_gemm_kernel, computed transposed: acc[n, m] = C[m, n], so the
    # weight tile [BLOCK_N, BLOCK_K] is the MMA's M operand (64+ rows: a full wgmma / mma tile)
    # and the few tokens are its N side, instead of padding M = 1..16 tokens to 16+ MMA rows.
    # Grid: (N tiles, K slices, M tiles); N tiles vary fastest so one wave streams disjoint
    # weight rows.
    # QUANT_A: A_ptr holds the unquantized activations; each K step quantizes its
    # [BLOCK_M, BLOCK_K] tile in registers with _quant_rows (group = BLOCK_K), the codes and
    # scales per_token_group_quant_fp8 writes. The activation tile of step kb + 1 is loaded
    # before step kb's quantization and MMA (a register double buffer: the quantization sits
    # between that load and the dot, so the load is not one the compiler pipelines itself).
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    kb_begin = pid_k * k_blocks_per_split
    kb_end = tl.minimum(kb_begin + k_blocks_per_split, tl.cdiv(K, BLOCK_K))
    pdl_prologue(USE_PDL, PDL_EARLY)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < N
    a_ptrs = A_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :]
    b_ptrs = B_ptr + offs_n[:, None].to(tl.int64) * stride_bn + offs_k[None, :]
    as_ptrs = As_ptr + offs_m * stride_as_m
    bs_ptrs = Bs_ptr + (offs_n // SCALE_BLOCK_N) * stride_bs_n

    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    if QUANT_A:
        k_lim = tl.minimum(kb_end * BLOCK_K, K)  # this slice's end: no load past the last step
        k_ok0 = (kb_begin * BLOCK_K + offs_k) < K
        x_next = tl.load(a_ptrs + kb_begin * BLOCK_K, mask=m_ok[:, None] & k_ok0[None, :], other=0.0)
    # K_UNROLL K blocks per iteration (see GemmConfig.k_unroll; 1 with QUANT_A); the sum order is the same
    for kb0 in range(kb_begin, kb_end, K_UNROLL):
        for u in tl.static_range(K_UNROLL):
            kb = kb0 + u
            m_in, n_in = _unrolled_masks(m_ok, n_ok, offs_m, offs_n, kb, kb_end, K_UNROLL)
            k0 = kb * BLOCK_K
            if EVEN_K:
                b = tl.load(b_ptrs + k0, mask=n_in[:, None], other=0.0)
            else:
                k_ok = (k0 + offs_k) < K
                b = tl.load(b_ptrs + k0, mask=n_in[:, None] & k_ok[None, :], other=0.0)
            if QUANT_A:
                x = x_next
                # the next step's tile (none after the last step: its mask is all false)
                k_ok1 = (k0 + BLOCK_K + offs_k) < k_lim
                x_next = tl.load(a_ptrs + (k0 + BLOCK_K), mask=m_ok[:, None] & k_ok1[None, :], other=0.0)
                # rows >= M and columns >= K are zeros: as in the quantization kernel
                a, a_s = _quant_rows(x.to(tl.float32), scale_eps, INTERPRET)
            else:
                if EVEN_K:
                    a = tl.load(a_ptrs + k0, mask=m_in[:, None], other=0.0)
                else:
                    a = tl.load(a_ptrs + k0, mask=m_in[:, None] & k_ok[None, :], other=0.0)
                a_s = tl.load(as_ptrs + kb * stride_as_k, mask=m_in, other=0.0)
            b_s = tl.load(bs_ptrs + kb * stride_bs_k, mask=n_in, other=0.0)
            if FP8_DOT:
                part = tl.dot(b, tl.trans(a))
            else:
                part = tl.dot(b.to(tl.float16), tl.trans(a.to(tl.float16)))
            # the operand order of _fp8_block_gemm_kernel's (part * a_s) * b_s: the same fp32 roundings
            acc += part * a_s[None, :] * b_s[:, None]

    pdl_trigger(USE_PDL, PDL_EARLY)
    c_ptrs = C_ptr + offs_m[None, :].to(tl.int64) * stride_cm + offs_n[:, None]
    c_ok = n_ok[:, None] & m_ok[None, :]
    if SPLIT_K == 1:
        if HAS_BIAS:
            acc += tl.load(Bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[:, None]
        tl.store(c_ptrs, _f32_to(acc, C_ptr.dtype.element_ty, INTERPRET), mask=c_ok)
    else:
        ws_ptrs = WS_ptr + offs_m[None, :].to(tl.int64) * N + offs_n[:, None]
        lock = Lock_ptr + pid_m * tl.num_programs(0) + pid_n
        total, last = splitk_sum(acc, ws_ptrs, M * N, c_ok, lock, pid_k, SPLIT_K)
        if last:
            if HAS_BIAS:
                total += tl.load(Bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[:, None]
            tl.store(c_ptrs, _f32_to(total, C_ptr.dtype.element_ty, INTERPRET), mask=c_ok)


@dataclass(frozen=True)
class GemmConfig:
    """Tile configuration of the block-scaled GEMM. ``split_k`` = number of K slices (1: none,
    0: chosen by :func:`auto_split_k` for the problem).

    ``swap_ab``: run the swap-AB kernel (:func:`_fp8_block_gemm_swapab_kernel`: weight rows are
    the MMA's M side, ``block_n`` of them per tile, tokens its N side, ``block_m`` of them).
    ``fuse_quant`` (swap-AB only, in :func:`fp8_block_linear_triton`): that kernel quantizes its
    own activation tiles, so the layer is one launch. ``k_unroll`` (1, 2, 4; 1 where the swap-AB
    kernel quantizes): K blocks loaded per loop iteration, so each weight row's consecutive K
    blocks (``k_unroll`` x 128 contiguous bytes) are requested together; the same sums in the same
    order (a slice's K blocks past its end read as zeros).
    """

    block_m: int
    block_n: int
    split_k: int = 1
    num_warps: int = 4
    num_stages: int = 4
    group_m: int = 8
    swap_ab: bool = False
    fuse_quant: bool = False
    k_unroll: int = 1

    def __post_init__(self):
        if self.k_unroll not in (1, 2, 4):
            raise ValueError(f"k_unroll: expected 1, 2 or 4, got {self.k_unroll!r}")

    def short(self) -> str:
        """Name used by the benchmarks' result lines."""
        kind = ("swapq" if self.fuse_quant else "swap") if self.swap_ab else "split"
        ku = f" ku{self.k_unroll}" if self.k_unroll > 1 else ""
        return f"{kind} bm{self.block_m} bn{self.block_n} sk{self.split_k} w{self.num_warps} st{self.num_stages}{ku}"


@functools.lru_cache(maxsize=None)
def _num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.lru_cache(maxsize=None)
def _fp8_dot_supported(device_index: int) -> bool:
    # fp8 tensor-core MMA exists from sm_89 (Ada) on.
    return torch.cuda.get_device_capability(device_index) >= (8, 9)


def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 132
    return _num_sms(device.index if device.index is not None else torch.cuda.current_device())


_G = GemmConfig
# Measured configs per weight shape (N, K): ((max_m, config), ...), the first with M <= max_m
# wins; shapes or M past the last entry use the heuristic of default_gemm_config. Source:
# notes/gpu_run1/bench_fp8.txt (H200, Triton 3.6, GEMM only, activations pre-quantized), the
# best of its sweep per M:
#   2112x7168 : M<=16 (16, 64, split 8, 4 warps, 5 stages) 9.3-9.8 us · M=64 (64, 64, 8, 4, 4)
#               10.8 us · M=128 (128, 128, 14, 8, 3) 18.6 us
#   24576x1536: M<=16 (16, 64, 1, 4, 5) 12.8-13.3 us · M=64 (64, 64, 1, 4, 4) 14.9 us ·
#               M=128 (64, 128, 1, 4, 4) 29.1 us
#   7168x16384: M<=4 (16, 64, 3, 4, 5) 33.5-36.6 us · M=16 (16, 128, 5, 4, 4) 36.9 us ·
#               M=64 (64, 64, 3, 4, 4) 43.3 us · M=128 (128, 128, 5, 8, 3) 79.6 us
# H200 run 2 (benchmarks/results/bench_fp8_small_m.txt, whole op with quantization, us) settled the
# table below. A first fused-quantization GEMM was slower than quantize-then-GEMM at every M and
# shape (7168x16384 M=1 59.3 vs 35.7 us): every N tile re-quantizes the same activations (112
# tiles there), and with a per-element div.rn (~20 instructions with its range check) that is
# an estimated ~40 us of issue time per SM. The QUANT_A path (FUSED_QUANT_MAX_M) uses the row-reciprocal
# division and bit-level e4m3 cast of _quant_rows instead; whether that pays is measured by
# benchmarks/gpu_fp8small.sh.
#   2112x7168 : M=1 12.14 · 2 12.66 · 4 12.16 · 16 12.26 · 64 12.94 · 128 20.71 (scaled_mm 18.5-25.8)
#   24576x1536: M=1 16.07 · 2 16.57 · 4 16.56 · 16 17.79 · 64 18.77 · 128 27.76 (scaled_mm 19.8-21.0)
#   7168x16384: M=1 35.73 · 2 37.34 · 4 39.91 · 16 40.81 · 64 47.17 · 128 72.63 (scaled_mm 43-52.6)
# Session 3 (benchmarks/results/session3/fp8_probe*.json: the whole layer, CUDA graphs, H200, us):
# 2112x7168 (the merged 1536 + 576 layer) with PDL (M <= 4, see qlinear.kernels._pdl) ->
# (16, 32, 8, 4, 3): 7.59 at M = 1 where (16, 64, 8, 4, 5) gave 7.71-8.04; M = 5..16 run without
# PDL -> (16, 64, 8, 4, 4): 9.20 at M = 16 vs 9.40 for (16, 64, 8, 4, 5). 7168x16384 M = 5..16 ->
# (16, 64, 6, 4, 3): 37.67 at M = 16 with PDL vs 39.57 for (16, 128, 5, 4, 4) (without PDL the
# probe had (16, 64, 6, 4, 4) at 38.60 and (16, 64, 4, 4, 4) at 38.12).
# Session 4 (benchmarks/results/session4/fp8small_r2.log: whole layer, CUDA graphs, weights COLD,
# i.e. weight copies rotated past L2 as in a decode step; us at M = 1 / 4 / 16): the swap-AB
# kernel (weight rows on the MMA's M side, quantization launch kept) wins at M <= 4 on
# 24576x1536 (16, 128, 1, 4, 4) 13.26 / 14.05 vs 13.93 / 14.20 and on 7168x16384
# (16, 128, 5, 4, 4) 32.67 / 33.77 vs 34.59 / 36.89; at M = 16 and on 2112x7168 the split kernel
# stays (9.18 / 9.72 / 11.44 vs swap-AB >= 9.54 / 10.93 / 11.34 fused). In-kernel quantization
# (fuse_quant) lost everywhere but 2112x7168 M = 16 (11.34 vs 11.44, noise): off.
# Session 8 (benchmarks/results/session8/run6, probe_fp8_wide.py: whole op, cold weights, alternated
# replays, us at M = 8 / 12 / 16): 24576x1536 (16, 64, 1, 4, 4) 13.87 / 14.20 / 13.98 vs (16, 64, 1, 4, 5)
# 14.35 / 14.39 / 14.50 (the entry before; 13 other split-K / swap-AB configs slower at M = 16);
# 7168x16384 (16, 64, 6, 4, 3) stays the best of 14 (36.75 at M = 16).
# Session 9 run 6 (benchmarks/results/session9/run6/s9final/wide.log, same probe, us at M = 4 / 16):
# 24576x1536 swap-AB (16, 64, 1, 4, 4) 12.96 / 13.96 vs the entries before it, swap-AB (16, 128, 1,
# 4, 4) 14.11 at M = 4 and split (16, 64, 1, 4, 4) 14.11 at M = 16 (dispatch 14.18 / 14.19; with the
# quantization fused into the GEMM every config took >= 19.75) -> one swap-AB entry for M <= 16
# (M = 1 / 2 were not measured with it).
# Session 18 run 2 (benchmarks/results/session18/run2/s18ku, same probe --set ku, us at M = 1 / 4 / 16):
# 24576x1536 swap-AB (16, 64, 1, 4, 3) with k_unroll = 2 12.30 / 13.09 / 13.45 vs the entry before it
# 12.38 / 12.82 / 13.98; on 7168x16384 every k_unroll config was slower. Run 3 (run3/s18fin/ku3, us at
# M = 2 / 5 / 8 / 12 / 16): k_unroll 12.78 / 13.34 / 13.36 / 13.56 / 13.62 vs the entry before it
# 12.33 / 13.13 / 13.73 / 13.93 / 13.91 and the same 3 stages without k_unroll 12.47 / 13.25 / 13.85 /
# 13.97 / 14.02 (the gain is the unrolling's) -> k_unroll from M = 8 on.
GEMM_CONFIGS: dict = {
    (2112, 7168): (
        (4, _G(16, 32, 8, 4, 3)),
        (16, _G(16, 64, 8, 4, 4)),
        (64, _G(64, 64, 8, 4, 3)),
        (128, _G(128, 128, 4, 8, 3)),
    ),
    (24576, 1536): (
        (7, _G(16, 64, 1, 4, 4, swap_ab=True)),
        (16, _G(16, 64, 1, 4, 3, swap_ab=True, k_unroll=2)),
        (64, _G(64, 64, 1, 4, 4)),
        (128, _G(64, 128, 1, 8, 4)),
    ),
    (7168, 16384): (
        (4, _G(16, 128, 5, 4, 4, swap_ab=True)),
        (16, _G(16, 64, 6, 4, 3)),
        (64, _G(64, 64, 3, 4, 3)),
        (128, _G(128, 128, 4, 8, 3)),
    ),
}


# Small-M path (issue 4, session 4), read at each launch: "split" = GEMM_CONFIGS above (a
# quantization launch, then the split-K GEMM with token tiles as the MMA's M side); "swapab" =
# for M <= SWAP_AB_MAX_M, SWAP_AB_CONFIGS (or _swapab_heuristic for other shapes): the swap-AB
# kernel, with the activation quantization inside it where the entry says fuse_quant, so the
# layer is one launch. QLINEAR_FP8_SMALL_M=split|swapab overrides it (A/B without editing).
# benchmarks/gpu_fp8small.sh measures both on cold weights and prints the entries to commit.
SMALL_M_PATH = "split"
SWAP_AB_MAX_M = 16
# Swap-AB entries, the same format as GEMM_CONFIGS. First guesses from the byte budget (cold
# weights: >= ~30 KB of weight loads in flight per SM, whole waves of programs, few N tiles
# because every N tile re-reads and, fused, re-quantizes the activations):
#   2112x7168 : 33 tiles of 64 rows x 4 K slices = 132 programs of 14 K blocks (one per SM)
#   24576x1536: 192 tiles of 128 rows, 12 K blocks, no split (1.45 programs per SM)
#   7168x16384: 56 tiles of 128 rows x 5 slices = 280 programs of 26 K blocks
# Measured in session 4 (benchmarks/results/session4/fp8small_r2.log, "table" rows, whole layer,
# cold weights): slower than the split path at every point, e.g. M = 1 15.22 / 16.20 / 43.78 us
# vs 9.18 / 13.93 / 34.59; hence SMALL_M_PATH "split". The swap-AB configs that did win (M <= 4,
# quantization launch kept) are GEMM_CONFIGS entries instead.
SWAP_AB_CONFIGS: dict = {
    (2112, 7168): ((16, _G(16, 64, 4, 4, 6, swap_ab=True, fuse_quant=True)),),
    (24576, 1536): ((16, _G(16, 128, 1, 4, 4, swap_ab=True, fuse_quant=True)),),
    (7168, 16384): ((16, _G(16, 128, 5, 4, 4, swap_ab=True, fuse_quant=True)),),
}


def small_m_path() -> str:
    """"split" or "swapab": ``QLINEAR_FP8_SMALL_M`` when set, else :data:`SMALL_M_PATH`."""
    path = os.environ.get("QLINEAR_FP8_SMALL_M", SMALL_M_PATH).strip().lower()
    if path not in ("split", "swapab"):
        raise ValueError(f"QLINEAR_FP8_SMALL_M: expected 'split' or 'swapab', got {path!r}")
    return path


def _swapab_heuristic(M: int, N: int, K: int, block_k: int, num_sms: int) -> GemmConfig:
    # 128 weight rows per tile when that still gives >= one tile per SM, else 64; K slices up
    # to about two programs per SM (auto_split_k).
    bn = 128 if cdiv(N, 128) >= num_sms else 64
    split = auto_split_k(M, N, K, 16, bn, block_k, num_sms)
    return GemmConfig(16, bn, split, 4, 4, swap_ab=True, fuse_quant=True)


def default_gemm_config(M: int, N: int, K: int, block_k: int = 128, num_sms: int = 132) -> GemmConfig:
    """The measured :data:`GEMM_CONFIGS` entry for (N, K) and M when there is one (and
    ``block_k`` is 128, the block they were measured with); else a heuristic by M bucket,
    split-K when the (M, N) tiles alone cannot fill ``num_sms`` SMs twice over (each K slice
    keeps >= 4 K blocks). With :func:`small_m_path` "swapab" and ``M <= SWAP_AB_MAX_M``
    (``block_k`` >= 32): the :data:`SWAP_AB_CONFIGS` entry, else :func:`_swapab_heuristic`."""
    if M <= SWAP_AB_MAX_M and block_k >= 32 and small_m_path() == "swapab":
        for max_m, cfg in SWAP_AB_CONFIGS.get((N, K), ()) if block_k == 128 else ():
            if M <= max_m:
                return cfg
        return _swapab_heuristic(M, N, K, block_k, num_sms)
    if block_k == 128:
        for max_m, cfg in GEMM_CONFIGS.get((N, K), ()):
            if M <= max_m:
                return cfg
    if M <= 16:
        bm, bn, warps, stages = 16, 64, 4, 5
    elif M <= 32:
        bm, bn, warps, stages = 32, 64, 4, 5
    elif M <= 64:
        bm, bn, warps, stages = 64, 64, 4, 4
    elif M <= 128:
        bm, bn, warps, stages = 64, 128, 4, 4
    else:
        bm, bn, warps, stages = 128, 128, 8, 3
    split = auto_split_k(M, N, K, bm, bn, block_k, num_sms)
    return GemmConfig(bm, bn, split, warps, stages)


def auto_split_k(M: int, N: int, K: int, block_m: int, block_n: int, block_k: int = 128, num_sms: int = 132) -> int:
    """K slices so that tiles x slices reaches about two programs per SM, each slice keeping at
    least 4 K blocks (below that the fp32 workspace round trip costs more than it saves)."""
    tiles = cdiv(M, block_m) * cdiv(N, block_n)
    if tiles >= 2 * num_sms:
        return 1
    return max(1, min(cdiv(2 * num_sms, tiles), cdiv(K, block_k) // 4))


def fp8_block_gemm(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    b: torch.Tensor,
    b_scale: torch.Tensor,
    block_size: tuple[int, int] = (128, 128),
    out_dtype: torch.dtype = torch.bfloat16,
    bias: torch.Tensor | None = None,
    *,
    out: torch.Tensor | None = None,
    config: GemmConfig | None = None,
) -> torch.Tensor:
    """``out[M, N] = (A * As) @ (B * Bs).T (+ bias)`` with fp32 accumulation.

    ``a`` e4m3 [M, K] (``stride(1) == 1``), ``a_scale`` fp32 [M, cdiv(K, bk)] (any strides; the
    column-major layout from :func:`per_token_group_quant_fp8` coalesces best), ``b`` e4m3 [N, K]
    (``stride(1) == 1``), ``b_scale`` fp32 [cdiv(N, bn), cdiv(K, bk)] (any strides),
    ``block_size = (bn, bk)`` with ``bk`` a power of two >= 16. ``out`` may be given ([M, N],
    ``stride(1) == 1``). Ragged M, N and K edges are masked. With ``config.split_k > 1`` the
    partial sums go through an fp32 workspace from the caching allocator and are summed by the
    last split of each tile (``qlinear.kernels._splitk``): one launch, nothing synchronizes with
    the host, CUDA-graph capturable.
    """
    return _launch_gemm(a, a_scale, b, b_scale, block_size, out_dtype, bias, out, config)


def _launch_gemm(a, a_scale, b, b_scale, block_size, out_dtype, bias, out, config, scale_eps=None):
    """:func:`fp8_block_gemm`; with ``a_scale`` None, ``a`` holds unquantized activations that the
    kernel quantizes per (row, K block) with ``scale_eps`` (QUANT_A)."""
    M, K = a.shape
    N = b.shape[0]
    bn, bk = block_size
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype, device=a.device)
    if M == 0 or N == 0:
        return out
    if config is None:
        config = default_gemm_config(M, N, K, bk, _sm_count(a.device))
    split, per_split = _plan_split(config, M, N, K, bk, a.device)
    if config.swap_ab:
        return _launch_swapab(a, a_scale, b, b_scale, bn, bk, bias, out, config, split, per_split, scale_eps)
    quant_a = a_scale is None
    has_bias = bias is not None
    grid = (cdiv(M, config.block_m) * cdiv(N, config.block_n), split)
    fp8_dot = True if a.device.type != "cuda" else _fp8_dot_supported(a.device.index or 0)
    ws = torch.empty((split, M, N), dtype=torch.float32, device=a.device) if split > 1 else out
    opts = launch_options(a.device, M)
    even_k = K % bk == 0
    _fp8_block_gemm_kernel[grid](
        out,
        a,
        b,
        out if quant_a else a_scale,
        b_scale,
        bias if has_bias else out,
        ws,
        locks(a.device),
        M,
        N,
        K,
        a.stride(0),
        b.stride(0),
        out.stride(0),
        0 if quant_a else a_scale.stride(0),
        0 if quant_a else a_scale.stride(1),
        b_scale.stride(0),
        b_scale.stride(1),
        per_split,
        1e-10 if scale_eps is None else scale_eps,
        SCALE_BLOCK_N=bn,
        BLOCK_M=config.block_m,
        BLOCK_N=config.block_n,
        BLOCK_K=bk,
        GROUP_M=config.group_m,
        SPLIT_K=split,
        EVEN_K=even_k,
        HAS_BIAS=has_bias,
        FP8_DOT=fp8_dot,
        QUANT_A=quant_a,
        PREFETCH_B=_prefetch_b(b, even_k, opts["USE_PDL"]),
        K_UNROLL=config.k_unroll,
        INTERPRET=_interpret(),
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        **opts,
    )
    return out


_LAST_SWAPAB = None  # the last compiled swap-AB kernel launched (benchmarks read its smem / registers)


def _launch_swapab(a, a_scale, b, b_scale, bn, bk, bias, out, config, split, per_split, scale_eps):
    """The swap-AB kernel for ``config`` (``a_scale`` None: QUANT_A, ``a`` unquantized)."""
    M, K = a.shape
    N = b.shape[0]
    if bk < 32:
        raise ValueError(f"block_size[1]: the swap-AB kernel needs K blocks of >= 32 (an fp8 MMA's K), got {bk}")
    quant_a = a_scale is None
    has_bias = bias is not None
    grid = (cdiv(N, config.block_n), split, cdiv(M, config.block_m))
    fp8_dot = True if a.device.type != "cuda" else _fp8_dot_supported(a.device.index or 0)
    ws = torch.empty((split, M, N), dtype=torch.float32, device=a.device) if split > 1 else out
    global _LAST_SWAPAB
    _LAST_SWAPAB = _fp8_block_gemm_swapab_kernel[grid](
        out,
        a,
        b,
        out if quant_a else a_scale,
        b_scale,
        bias if has_bias else out,
        ws,
        locks(a.device),
        M,
        N,
        K,
        a.stride(0),
        b.stride(0),
        out.stride(0),
        0 if quant_a else a_scale.stride(0),
        0 if quant_a else a_scale.stride(1),
        b_scale.stride(0),
        b_scale.stride(1),
        per_split,
        1e-10 if scale_eps is None else scale_eps,
        SCALE_BLOCK_N=bn,
        BLOCK_M=config.block_m,
        BLOCK_N=config.block_n,
        BLOCK_K=bk,
        SPLIT_K=split,
        EVEN_K=K % bk == 0,
        HAS_BIAS=has_bias,
        FP8_DOT=fp8_dot,
        QUANT_A=quant_a,
        K_UNROLL=1 if quant_a else config.k_unroll,
        INTERPRET=_interpret(),
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        **launch_options(a.device, M),
    )
    return out


def _prefetch_b(b: torch.Tensor, even_k: bool, use_pdl: bool) -> bool:
    """Whether the GEMM bulk-prefetches its weight bytes into L2 (see PREFETCH_WEIGHTS): sm_90+,
    whole K blocks and 16-byte aligned weight rows (cp.async.bulk's requirements)."""
    mode = PREFETCH_WEIGHTS
    if mode == "off" or (mode == "pdl" and not use_pdl) or b.device.type != "cuda" or _interpret():
        return False
    if b.data_ptr() % 16 or b.stride(0) % 16 or not even_k:
        return False
    return _sm90(b.device.index if b.device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _sm90(device_index: int) -> bool:
    return torch.cuda.get_device_capability(device_index) >= (9, 0)


def _plan_split(config: GemmConfig, M: int, N: int, K: int, bk: int, device) -> tuple[int, int]:
    """(number of K slices, K blocks per slice) for ``config`` on an M x N x K problem."""
    k_blocks = cdiv(K, bk)
    split = config.split_k
    if split == 0:
        split = auto_split_k(M, N, K, config.block_m, config.block_n, bk, _sm_count(device))
    split = max(1, min(split, k_blocks))
    if cdiv(M, config.block_m) * cdiv(N, config.block_n) > LOCK_SLOTS:
        split = 1  # more tiles than split-K counters: the grid fills the GPU without splitting
    per_split = cdiv(k_blocks, split)
    return cdiv(k_blocks, per_split), per_split  # no empty slices


def fp8_block_linear_triton(
    x: torch.Tensor,
    b: torch.Tensor,
    b_scale: torch.Tensor,
    block_size: tuple[int, int] = (128, 128),
    bias: torch.Tensor | None = None,
    *,
    config: GemmConfig | None = None,
    scale_eps: float = 1e-10,
    fuse_quant: bool | None = None,
    quant_pdl: str | None = None,
    quantize: Callable[[torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> torch.Tensor:
    """The whole block-scaled FP8 linear on Triton: ``x`` [M, K] -> ``x.dtype`` [M, N]:
    :func:`per_token_group_quant_fp8` (column-major scales; or ``quantize(x, bk)``, a callable giving the
    same codes and column-major scales, e.g. another kernel's launch) followed by :func:`fp8_block_gemm`
    with ``config`` (default: :func:`default_gemm_config`), or, with ``fuse_quant`` (default:
    ``config.swap_ab and config.fuse_quant``, or ``M <= FUSED_QUANT_MAX_M``), one GEMM launch that
    quantizes each [BLOCK_M, bk] activation tile in registers (same codes and scales, no
    quantization launch; every N tile repeats the work, so it only pays at small M). ``quant_pdl``:
    the quantization launch's PDL trigger ("early" / "late"; None: ``QLINEAR_PDL``).
    """
    bk = block_size[1]
    M, K = x.shape
    if config is None and M > 0:
        config = default_gemm_config(M, b.shape[0], K, bk, _sm_count(x.device))
    if fuse_quant is None:
        fuse_quant = (config is not None and config.swap_ab and config.fuse_quant) or M <= FUSED_QUANT_MAX_M
    if fuse_quant:
        check_group_size(bk)
        return _launch_gemm(x, None, b, b_scale, block_size, x.dtype, bias, None, config, scale_eps)
    if quantize is not None:
        q, s = quantize(x, bk)
    else:
        q, s = per_token_group_quant_fp8(x, bk, column_major_scales=True, scale_eps=scale_eps, pdl_trigger=quant_pdl)
    return fp8_block_gemm(q, s, b, b_scale, block_size, x.dtype, bias, config=config)


# --------------------------------------------------------------------------------------------
# fused RMSNorm -> FP8 per-token-group quantization
# --------------------------------------------------------------------------------------------


@triton.jit
def _rms_norm_quant_fp8_kernel(
    Q_ptr,
    S_ptr,
    X_ptr,
    R_ptr,
    W_ptr,
    K,
    k_float,
    G,
    X_row_stride,
    R_row_stride,
    Q_row_stride,
    S_row_stride,
    S_col_stride,
    eps,
    scale_eps,
    GROUP: tl.constexpr,
    NUM_GROUPS: tl.constexpr,
    HAS_RESIDUAL: tl.constexpr,
    INTERPRET: tl.constexpr,
    USE_PDL: tl.constexpr,
    PDL_EARLY: tl.constexpr,
):
    # One program per row; the row is held as a [NUM_GROUPS, GROUP] tile so the group maxima are
    # row reductions of that tile.
    pdl_prologue(USE_PDL, PDL_EARLY)
    row = tl.program_id(0).to(tl.int64)
    gi = tl.arange(0, NUM_GROUPS)
    cols = gi[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
    ok = cols < K
    h = tl.load(X_ptr + row * X_row_stride + cols, mask=ok, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        r = tl.load(R_ptr + row * R_row_stride + cols, mask=ok, other=0.0).to(tl.float32)
        # Round the sum to the residual dtype first: that is what the next layer reads, and
        # normalizing the same rounded values keeps fused == unfused.
        hr = _f32_to(h + r, R_ptr.dtype.element_ty, INTERPRET)
        tl.store(R_ptr + row * R_row_stride + cols, hr, mask=ok)
        h = hr.to(tl.float32)
    mean_sq = tl.math.div_rn(tl.sum(tl.sum(h * h, axis=1), axis=0), k_float)
    rstd = tl.math.div_rn(1.0, tl.sqrt_rn(mean_sq + eps))
    w = tl.load(W_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    y = h * rstd * w
    qv, scale = _quant_rows(y, scale_eps, INTERPRET)
    pdl_trigger(USE_PDL, PDL_EARLY)
    tl.store(Q_ptr + row * Q_row_stride + cols, qv, mask=ok)
    tl.store(S_ptr + row * S_row_stride + gi * S_col_stride, scale, mask=gi < G)


def rms_norm_quant_fp8(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    group_size: int = 128,
    *,
    residual: torch.Tensor | None = None,
    column_major_scales: bool = False,
    scale_eps: float = 1e-10,
    num_warps: int | None = None,
    pdl_trigger: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm of the rows of ``x`` [M, K] (``stride(1) == 1``, any row stride) written as e4m3
    [M, K] plus fp32 group scales [M, cdiv(K, group_size)] (column-major on request). With
    ``residual`` (same shape/dtype, ``stride(1) == 1``): ``residual <- dtype(x + residual)`` in
    place, and the new residual is normalized. Formula: ``qlinear.reference.fp8.rms_norm_quant_fp8_ref``.
    One program per row, the whole row in registers; ``num_warps`` overrides the default.
    ``pdl_trigger`` ("first" / "early" / "late", ``qlinear.kernels._pdl.launch_options``): launch with PDL
    and that trigger, so that a GEMM launched with PDL after it (``fp8_block_linear_quantized``) starts
    early; None (the default): no PDL. ``qlinear.ops.fp8.rms_norm_quant_fp8``'s auto dispatch takes "early"
    for one or two rows of 4096 < K <= 8192 (``NORM_QUANT_TRITON_EARLY``: session 31 runs 3-4).
    """
    M, K = x.shape
    G = cdiv(K, group_size)
    q = torch.empty((M, K), dtype=FP8_E4M3, device=x.device)
    s = empty_group_scales(M, G, column_major_scales, x.device)
    if M == 0 or K == 0:
        return q, s
    tile = _group_tile(group_size, K)
    num_groups = triton.next_power_of_2(G)
    if num_warps is None:
        # 16 row elements per thread: H200 run 2 on 32768 strided rows of 1536 (benchmarks/results/
        # bench_fp8_small_m.json) gave 4 warps 81.6 us vs 8 warps 101.9 us; a tiled many-rows-per-
        # program variant was slower still (fused add 124.5 us vs 96.7) and was removed.
        num_warps = min(16, max(1, num_groups * tile // 512))
    has_res = residual is not None
    _rms_norm_quant_fp8_kernel[(M,)](
        q,
        s,
        x,
        residual if has_res else x,
        weight,
        K,
        float(K),
        G,
        x.stride(0),
        residual.stride(0) if has_res else 0,
        q.stride(0),
        s.stride(0),
        s.stride(1),
        eps,
        scale_eps,
        GROUP=tile,
        NUM_GROUPS=num_groups,
        HAS_RESIDUAL=has_res,
        INTERPRET=_interpret(),
        num_warps=num_warps,
        **(launch_options(x.device, M, trigger=pdl_trigger) if pdl_trigger is not None
           else {"USE_PDL": False, "PDL_EARLY": 0}),
    )
    return q, s


def check_group_size(group_size: int) -> None:
    """Triton tiles need a power-of-two group of at least 16 elements."""
    if group_size < 16 or group_size & (group_size - 1):
        raise ValueError(f"group_size: the Triton kernels need a power of two >= 16, got {group_size}")

