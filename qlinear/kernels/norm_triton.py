"""Triton RMSNorm kernels and their launchers.

y = x / sqrt(mean(x^2) + eps) * w, accumulated in fp32. Operands are 3-D views
``[n_outer, n_inner, H]`` with ``stride(2) == 1`` and any other strides (``qlinear.ops.norm``
collapses ``[..., H]`` views into that form without copying); row r starts at
``ptr + (r // n_inner) * s0 + (r % n_inner) * s1``.

Short rows are processed ROWS at a time per program (a 2-D ``[ROWS, BLOCK_H]`` tile) so a
program moves enough bytes; rows up to ``_MAX_SINGLE_PASS`` elements are read once and kept in
registers; longer rows are read twice in BLOCK_H chunks. Masks cover any H (odd sizes) and any
pointer alignment (Triton only vectorizes what it can prove aligned). ``_rms_norm_rows_kernel`` is a
constant-H variant for rows of one stride, ``_rms_norm_loop_kernel`` a two-pass one-row-per-program
variant that re-reads the row from L2 (both selected by the rules or a config, see there).

Importing this module imports triton; ``qlinear.ops`` imports it lazily on first use.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["rms_norm_triton", "fused_add_rms_norm_triton"]

# Longest row (elements) kept in registers by one program; longer rows loop over chunks.
_MAX_SINGLE_PASS = 16384
_CHUNK = 4096


# Row counts change with every batch; specializing on them would only multiply compiles.
@triton.jit(do_not_specialize=["n_rows", "n_inner"])
def _rms_norm_kernel(
    Y_ptr, Y_s0, Y_s1,
    X_ptr, X_s0, X_s1,
    R_ptr, R_s0, R_s1,
    W_ptr,
    n_rows, n_inner, H, eps,
    FUSED: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_H: tl.constexpr,
    N_CHUNKS: tl.constexpr,
    EVICT: tl.constexpr = 0,
):
    # FUSED: R <- X + R (rounded to R's dtype), then Y <- rmsnorm(R) (Y is X for the in-place op).
    # EVICT 1 (single pass only): rows are loaded evict-first and the weight evict-last (what
    # inductor emits for this persistent reduction): the streamed rows do not push the weight,
    # reused by every program, out of L2.
    x_ep: tl.constexpr = "evict_first" if EVICT == 1 else ""
    w_ep: tl.constexpr = "evict_last" if EVICT == 1 else ""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    outer = (rows // n_inner).to(tl.int64)
    inner = (rows % n_inner).to(tl.int64)
    x_row = (outer * X_s0 + inner * X_s1)[:, None]
    y_row = (outer * Y_s0 + inner * Y_s1)[:, None]
    r_row = (outer * R_s0 + inner * R_s1)[:, None]
    cols = tl.arange(0, BLOCK_H)[None, :]

    if N_CHUNKS == 1:
        mask = row_mask[:, None] & (cols < H)
        v = tl.load(X_ptr + x_row + cols, mask=mask, other=0.0, eviction_policy=x_ep)
        if FUSED:
            r = tl.load(R_ptr + r_row + cols, mask=mask, other=0.0, eviction_policy=x_ep)
            v = (v.to(tl.float32) + r.to(tl.float32)).to(R_ptr.dtype.element_ty)
            tl.store(R_ptr + r_row + cols, v, mask=mask)
        # the weight load is issued before the reduction so its first (L2) round trip overlaps
        # the row's; in the latency regime it would otherwise sit between the sum and the store
        w = tl.load(W_ptr + cols, mask=cols < H, other=0.0, eviction_policy=w_ep).to(tl.float32)
        vf = v.to(tl.float32)
        inv = tl.rsqrt(tl.sum(vf * vf, axis=1) / H + eps)
        y = vf * inv[:, None] * w
        tl.store(Y_ptr + y_row + cols, y.to(Y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((ROWS, BLOCK_H), dtype=tl.float32)
        for c in range(N_CHUNKS):
            cc = c * BLOCK_H + cols
            mask = row_mask[:, None] & (cc < H)
            v = tl.load(X_ptr + x_row + cc, mask=mask, other=0.0)
            if FUSED:
                r = tl.load(R_ptr + r_row + cc, mask=mask, other=0.0)
                v = (v.to(tl.float32) + r.to(tl.float32)).to(R_ptr.dtype.element_ty)
                tl.store(R_ptr + r_row + cc, v, mask=mask)
            vf = v.to(tl.float32)
            acc += vf * vf
        inv = tl.rsqrt(tl.sum(acc, axis=1) / H + eps)
        for c in range(N_CHUNKS):
            cc = c * BLOCK_H + cols
            mask = row_mask[:, None] & (cc < H)
            # fused: re-read the stored residual (this program wrote it above)
            if FUSED:
                vf = tl.load(R_ptr + r_row + cc, mask=mask, other=0.0).to(tl.float32)
            else:
                vf = tl.load(X_ptr + x_row + cc, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(W_ptr + cc, mask=cc < H, other=0.0).to(tl.float32)
            y = vf * inv[:, None] * w
            tl.store(Y_ptr + y_row + cc, y.to(Y_ptr.dtype.element_ty), mask=mask)


# Rows of one row stride (the 2-D case: n_outer == 1), single pass: the shape of the kernel
# inductor generates for the fp32 reference (torch.compile ran 32768 x 7168 bf16 at the copy
# ceiling while _rms_norm_kernel with the same tile and warps stayed ~3 % below): H is a
# compile-time constant (one compile per hidden size), the row offset is pid * ROWS * stride with no
# division by n_inner, 32-bit offsets when the operands span < 2^31 elements (WIDE = 0), and no
# masks at all when H is a power of two and ROWS divides n_rows (EVEN).
@triton.jit(do_not_specialize=["n_rows"])
def _rms_norm_rows_kernel(
    Y_ptr, Y_s,
    X_ptr, X_s,
    R_ptr, R_s,
    W_ptr,
    n_rows, eps,
    H: tl.constexpr,
    FUSED: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_H: tl.constexpr,
    EVICT: tl.constexpr,
    EVEN: tl.constexpr,
    WIDE: tl.constexpr,
):
    x_ep: tl.constexpr = "evict_first" if EVICT == 1 else ""
    w_ep: tl.constexpr = "evict_last" if EVICT == 1 else ""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    if WIDE:
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_H)[None, :]
    x_off = rows[:, None] * X_s + cols
    y_off = rows[:, None] * Y_s + cols
    r_off = rows[:, None] * R_s + cols
    if EVEN:
        v = tl.load(X_ptr + x_off, eviction_policy=x_ep)
        if FUSED:
            r = tl.load(R_ptr + r_off, eviction_policy=x_ep)
            v = (v.to(tl.float32) + r.to(tl.float32)).to(R_ptr.dtype.element_ty)
            tl.store(R_ptr + r_off, v)
        w = tl.load(W_ptr + cols, eviction_policy=w_ep).to(tl.float32)
        vf = v.to(tl.float32)
        inv = tl.rsqrt(tl.sum(vf * vf, axis=1) / H + eps)
        tl.store(Y_ptr + y_off, (vf * inv[:, None] * w).to(Y_ptr.dtype.element_ty))
    else:
        mask = (rows < n_rows)[:, None] & (cols < H)
        v = tl.load(X_ptr + x_off, mask=mask, other=0.0, eviction_policy=x_ep)
        if FUSED:
            r = tl.load(R_ptr + r_off, mask=mask, other=0.0, eviction_policy=x_ep)
            v = (v.to(tl.float32) + r.to(tl.float32)).to(R_ptr.dtype.element_ty)
            tl.store(R_ptr + r_off, v, mask=mask)
        w = tl.load(W_ptr + cols, mask=cols < H, other=0.0, eviction_policy=w_ep).to(tl.float32)
        vf = v.to(tl.float32)
        inv = tl.rsqrt(tl.sum(vf * vf, axis=1) / H + eps)
        tl.store(Y_ptr + y_off, (vf * inv[:, None] * w).to(Y_ptr.dtype.element_ty), mask=mask)


# Two passes over one row per program, the structure inductor generates for the fp32 reference
# at 32768 x 7168 (benchmarks/results/session3/inductor_contig_32768x7168.py.txt), which ran at the
# copy ceiling while every single-pass kernel stayed 2-3 % below: pass 1 streams the row in
# R-element chunks, keeping it in L2 (evict-last), and accumulates x^2 in an [R] fp32 vector;
# pass 2 reads the row again (from L2, evict-first: its last use) with the weight (evict-last),
# scales and stores. A chunk's registers are all a thread holds, so occupancy is high and many
# rows are in flight; the second read costs L2 bandwidth only. FUSED: pass 1 also stores
# residual <- x + residual, and pass 2 re-reads that stored residual. H is a compile-time
# constant; without FLAT, row offsets follow the 3-D view (one division per program).
# FLAT: one row stride (n_outer == 1) and every operand spans < 2^31 elements: the row offset is
# pid * stride in 32-bit arithmetic, with no division by n_inner (as in inductor's kernel); then
# ROWS rows per program share each weight chunk ([ROWS, R] tiles; ROWS is 1 otherwise).
@triton.jit(do_not_specialize=["n_inner", "n_rows"])
def _rms_norm_loop_kernel(
    Y_ptr, Y_s0, Y_s1,
    X_ptr, X_s0, X_s1,
    R_ptr, R_s0, R_s1,
    W_ptr,
    n_inner, n_rows, eps,
    H: tl.constexpr,
    FUSED: tl.constexpr,
    R: tl.constexpr,
    FLAT: tl.constexpr,
    ROWS: tl.constexpr,
):
    pid = tl.program_id(0)
    if FLAT:
        rows = pid * ROWS + tl.arange(0, ROWS)
        row_ok = (rows < n_rows)[:, None]
        x_row = X_ptr + (rows * X_s1)[:, None]
        y_row = Y_ptr + (rows * Y_s1)[:, None]
        r_row = R_ptr + (rows * R_s1)[:, None]
    else:
        outer = (pid // n_inner).to(tl.int64)
        inner = (pid % n_inner).to(tl.int64)
        row_ok = tl.full((1, 1), 1, tl.int1)
        zero = tl.zeros((1, 1), dtype=tl.int64)  # [1, 1] pointer blocks, as in the FLAT path
        x_row = (X_ptr + outer * X_s0 + inner * X_s1) + zero
        y_row = (Y_ptr + outer * Y_s0 + inner * Y_s1) + zero
        r_row = (R_ptr + outer * R_s0 + inner * R_s1) + zero
    cols = tl.arange(0, R)[None, :]
    acc = tl.zeros((ROWS, R), dtype=tl.float32)
    for off in tl.range(0, H, R):
        cc = off + cols
        m = row_ok & (cc < H)
        if FUSED:
            # x is overwritten by pass 2 (never re-read): evict-first; the new residual is
            # re-read by pass 2 and stays in L2
            v = tl.load(x_row + cc, mask=m, other=0.0, eviction_policy="evict_first")
            r = tl.load(r_row + cc, mask=m, other=0.0, eviction_policy="evict_first")
            v = (v.to(tl.float32) + r.to(tl.float32)).to(R_ptr.dtype.element_ty)
            tl.store(r_row + cc, v, mask=m, eviction_policy="evict_last")
        else:
            v = tl.load(x_row + cc, mask=m, other=0.0, eviction_policy="evict_last")
        vf = v.to(tl.float32)
        acc += vf * vf
    inv = tl.rsqrt(tl.sum(acc, axis=1) / H + eps)[:, None]
    for off in tl.range(0, H, R):
        cc = off + cols
        m = row_ok & (cc < H)
        if FUSED:
            vf = tl.load(r_row + cc, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
        else:
            vf = tl.load(x_row + cc, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(W_ptr + cc, mask=cc < H, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_row + cc, (vf * inv * w).to(Y_ptr.dtype.element_ty), mask=m)


# Tuned defaults (`benchmarks/bench_rms_norm.py --focus tune` / `--focus gaps3` print replacement
# rules): (max row bytes, ROWS per program, num_warps, evict[, static[, loop]]) for the single-pass kernel;
# ROWS = 0 means "a tile of about 4096 elements", num_warps = 0 means "about 32 bytes per thread",
# evict 1 the eviction hints (see the kernel), static 1 the constant-H rows kernel
# (_rms_norm_rows_kernel) where the rows have one stride, loop R > 0 the two-pass loop kernel
# (_rms_norm_loop_kernel: one row per program, R-element chunks, num_warps kept; ROWS / evict /
# static ignored). ROWS is then halved while the grid would
# have fewer than _MIN_PROGRAMS programs.
# Rows over 8 KB (7168 bf16): inductor's persistent-reduction config for this shape (one row per
# program, 8 warps, x evict-first / weight evict-last), which ran at the copy ceiling on the H200
# (torch.compile of the reference, 32768 x 7168: 4286 GB/s; this kernel with 16 warps and no
# hints: 3803).
# H200 round 2 (benchmarks/results/session3/rms_norm_gaps2_round1.txt): the eviction hints cost
# 4 % at 32768 x 7168 (8 warps: 3982 GB/s with, 4145 without), so rows over 8 KB take none.
# Round 3 (rms_norm_gaps3_round2.txt): q_c 32768 x 1536 (stride 2112) with the constant-H rows
# kernel, 2 rows x 4 warps: 4138 GB/s (rows of 2.5-3 KB; the auto dispatch sends that case here).
_MANY_ROW_RULES: tuple[tuple[int, ...], ...] = (
    (2560, 0, 0, 0, 0),
    (3072, 4, 8, 0, 0),
    (8192, 0, 0, 0, 0),
    (14336, 1, 8, 0, 0, 4096),
    (1 << 62, 1, 8, 0, 0),
)
_FEW_ROW_RULES: tuple[tuple[int, ...], ...] = (
    (1 << 62, 1, 0, 0, 0),
)
# From 16384 rows, rows of 12-14 KB (7168 bf16) take the loop kernel with 16 warps, 4096-element
# chunks, no software pipelining and (one-stride rows) flat addressing: H200, session 5
# (benchmarks/results/session5/probe5_r3 and probe5_r2, contiguous 32768 x 7168 plain, replays alternated):
# 4283 GB/s vs 8 warps 4202 and the CUDA loop kernel 4231 (torch.compile 4297); the run before,
# 4269 vs 4231 / 4215 (compile 4278). At 4096 rows 16 warps was 1 % slower than 8 (30.80 vs
# 30.39 us), so fewer rows keep _MANY_ROW_RULES. The fused add with this config was not timed.
_HUGE_ROWS = 16384
_HUGE_ROW_RULES: tuple[tuple[int, ...], ...] = tuple(
    (14336, 1, 16, 0, 0, 4096, 1) if r[0] == 14336 else r for r in _MANY_ROW_RULES
)
_MIN_PROGRAMS = 264  # about two per SM on an H100 / H200
_FEW_ROWS = 132  # rows at or below this count use _FEW_ROW_RULES (the latency regime)


def _rule(n_rows: int, hidden: int, elem_size: int) -> tuple[int, ...]:
    """The first rule of the table for this row count whose max row bytes covers the row."""
    if n_rows <= _FEW_ROWS:
        rules = _FEW_ROW_RULES
    else:
        rules = _HUGE_ROW_RULES if n_rows >= _HUGE_ROWS else _MANY_ROW_RULES
    row_bytes = hidden * elem_size
    return next((r for r in rules if row_bytes <= r[0]), rules[-1])


def _launch_params(
    n_rows: int, hidden: int, elem_size: int, config: tuple[int, ...] | None = None
) -> tuple[int, int, int, int, int, int]:
    """(ROWS, BLOCK_H, N_CHUNKS, num_warps, EVICT, STATIC) for a problem size.

    ``config = (rows, num_warps[, evict[, static[, loop]]])`` overrides the rules (rows / num_warps 0 =
    automatic, evict / static / loop -1 or absent = the rule's); ``rows`` is used as given (rounded up to
    a power of two), without the grid-size adjustment. STATIC 1 asks for the constant-H rows kernel
    (used only where the rows have one stride; the caller checks). ``loop`` (see
    :func:`_loop_block`) is not part of the returned tuple.
    """
    if hidden <= _MAX_SINGLE_PASS:
        block_h, n_chunks = triton.next_power_of_2(hidden), 1
    else:
        block_h, n_chunks = _CHUNK, triton.cdiv(hidden, _CHUNK)
    rule = _rule(n_rows, hidden, elem_size)
    _, rule_rows, rule_warps, rule_evict = rule[:4]
    rule_static = rule[4] if len(rule) > 4 else 0
    want = tuple(config) if config is not None else ()
    want_rows = int(want[0]) if len(want) > 0 else 0
    want_warps = int(want[1]) if len(want) > 1 else 0
    want_evict = int(want[2]) if len(want) > 2 else -1
    want_static = int(want[3]) if len(want) > 3 else -1
    evict = rule_evict if want_evict < 0 else want_evict
    static = rule_static if want_static < 0 else want_static
    if evict not in (0, 1):
        raise ValueError(f"config: evict must be 0 or 1 (or -1 for the rule's), got {evict}")
    if static not in (0, 1):
        raise ValueError(f"config: static must be 0 or 1 (or -1 for the rule's), got {static}")
    if n_chunks > 1:
        evict = 0  # the chunked loop re-reads rows: no evict-first there
        static = 0
    if want_rows > 0:
        rows = triton.next_power_of_2(int(want_rows))
    else:
        # several short rows per program: aim for a tile of >= 4096 elements, but keep programs
        # plentiful (>= ~2 per SM on a large GPU) when there are few rows
        rows = rule_rows if rule_rows > 0 else max(1, min(64, 4096 // block_h))
        rows = triton.next_power_of_2(rows)
        while rows > 1 and triton.cdiv(n_rows, rows) < _MIN_PROGRAMS:
            rows //= 2
    if want_warps > 0:
        num_warps = int(want_warps)
    elif rule_warps > 0:
        num_warps = rule_warps
    else:
        # about 32 bytes per thread per tile
        per_thread = max(1, 32 // elem_size)
        num_warps = max(1, min(16, triton.next_power_of_2(rows * block_h // (32 * per_thread))))
    if num_warps not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"config: num_warps must be a power of two <= 32, got {num_warps}")
    return rows, block_h, n_chunks, num_warps, evict, static


def _loop_block(n_rows: int, hidden: int, elem_size: int, config: tuple[int, ...] | None = None) -> int:
    """R (elements per chunk) of the two-pass loop kernel for a problem size, 0 = not used.

    ``config[4]`` (the 5th config field) overrides the rule's 6th field (-1 or absent = the
    rule's). R is a power of two >= 16; rows of more than ``_MAX_SINGLE_PASS`` elements keep the
    chunked kernel unless a config asks.
    """
    rule = _rule(n_rows, hidden, elem_size)
    want = tuple(config) if config is not None else ()
    loop = int(want[4]) if len(want) > 4 and int(want[4]) >= 0 else (rule[5] if len(rule) > 5 else 0)
    if loop and (loop < 16 or loop & (loop - 1)):
        raise ValueError(f"config: loop block must be 0 or a power of two >= 16, got {loop}")
    return loop


def _loop_stages(n_rows: int, hidden: int, elem_size: int, config: tuple[int, ...] | None = None) -> int:
    """``num_stages`` of the two-pass loop kernel: ``config[5]`` if given (> 0), else the rule's 7th
    field, else Triton's default (3). A row of 7168 bf16 is under two 4096-element chunks, so the
    software pipeline of ``tl.range`` has nothing to overlap; inductor's reductions use 1."""
    rule = _rule(n_rows, hidden, elem_size)
    want = tuple(config) if config is not None else ()
    if len(want) > 5 and int(want[5]) > 0:
        return int(want[5])
    return int(rule[6]) if len(rule) > 6 and rule[6] > 0 else 3


def _check_views(name: str, t: torch.Tensor, like: torch.Tensor) -> None:
    if t.dim() != 3 or t.shape != like.shape or (t.shape[2] > 1 and t.stride(2) != 1):
        raise ValueError(
            f"{name}: expected a 3-D view of shape {tuple(like.shape)} with stride(-1) == 1, "
            f"got shape={tuple(t.shape)} stride={tuple(t.stride())}"
        )


def _launch(out, x, residual, weight, eps, config) -> None:
    """One launch of ``_rms_norm_kernel`` over 3-D views; ``residual`` None = plain norm."""
    n_outer, n_inner, hidden = x.shape
    n_rows = n_outer * n_inner
    if n_rows == 0 or hidden == 0:
        return
    rows, block_h, n_chunks, num_warps, evict, static = _launch_params(n_rows, hidden, x.element_size(), config)
    fused = residual is not None
    res = residual if fused else x  # unused when not fused: any valid pointer, strides 0
    loop = _loop_block(n_rows, hidden, x.element_size(), config)
    if loop:
        want = tuple(config) if config is not None else ()
        flat = n_outer == 1 and all(n_rows * t.stride(1) + hidden < 2**31 for t in ((out, x, res) if fused else (out, x)))
        if len(want) > 6 and int(want[6]) == 0:
            flat = False
        loop_rows = rows if flat else 1
        _rms_norm_loop_kernel[(triton.cdiv(n_rows, loop_rows),)](
            out, out.stride(0), out.stride(1),
            x, x.stride(0), x.stride(1),
            res, res.stride(0) if fused else 0, res.stride(1) if fused else 0,
            weight,
            n_inner, n_rows, eps,
            H=hidden, FUSED=fused, R=loop, FLAT=flat, ROWS=loop_rows, num_warps=num_warps,
            num_stages=_loop_stages(n_rows, hidden, x.element_size(), config),
        )
        return
    if static and n_outer == 1:
        ops = (out, x, res) if fused else (out, x)
        # 32-bit offsets when every operand's last element is below 2^31 elements from its base
        wide = any((n_rows + rows) * t.stride(1) + hidden >= 2**31 for t in ops)
        _rms_norm_rows_kernel[(triton.cdiv(n_rows, rows),)](
            out, out.stride(1),
            x, x.stride(1),
            res, res.stride(1) if fused else 0,
            weight,
            n_rows, eps,
            H=hidden, FUSED=fused, ROWS=rows, BLOCK_H=block_h, EVICT=evict,
            EVEN=(block_h == hidden and n_rows % rows == 0), WIDE=wide, num_warps=num_warps,
        )
        return
    _rms_norm_kernel[(triton.cdiv(n_rows, rows),)](
        out, out.stride(0), out.stride(1),
        x, x.stride(0), x.stride(1),
        res, res.stride(0) if fused else 0, res.stride(1) if fused else 0,
        weight,
        n_rows, n_inner, hidden, eps,
        FUSED=fused, ROWS=rows, BLOCK_H=block_h, N_CHUNKS=n_chunks, EVICT=evict, num_warps=num_warps,
    )


def rms_norm_triton(
    out: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    config: tuple[int, ...] | None = None,
) -> None:
    """out <- x / sqrt(mean(x^2) + eps) * weight for 3-D views ``[n_outer, n_inner, H]``.

    ``out`` may be ``x`` (in place). Dtypes: fp16 / bf16 / fp32, all three tensors alike (the
    caller checks); ``weight`` is a contiguous ``[H]`` vector. ``config = (rows per program,
    num_warps[, evict[, static[, loop[, stages[, flat]]]]])`` overrides the launch rules (benchmarks
    sweep it; 0 = automatic, see :func:`_launch_params`, :func:`_loop_block` and :func:`_loop_stages`;
    flat 0 keeps the loop kernel's 3-D row addressing where the flat one would apply).
    """
    _check_views("x", x, x)
    _check_views("out", out, x)
    _launch(out, x, None, weight, eps, config)


def fused_add_rms_norm_triton(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    config: tuple[int, ...] | None = None,
) -> None:
    """In place: residual <- x + residual; x <- residual / sqrt(mean(residual^2) + eps) * weight.

    3-D views ``[n_outer, n_inner, H]`` of one shape and dtype (fp16 / bf16 / fp32), which must
    not overlap each other (the caller checks). ``config`` as for :func:`rms_norm_triton`.
    """
    _check_views("x", x, x)
    _check_views("residual", residual, x)
    _launch(x, x, residual, weight, eps, config)
