"""RMSNorm and fused-add RMSNorm on strided rows.

    rms_norm(x, w):            y = x / sqrt(mean(x^2, -1) + eps) * w
    fused_add_rms_norm(x, r, w): r <- x + r;  x <- r / sqrt(mean(r^2, -1) + eps) * w   (in place)
    rms_norm_slices(x, (b0, b1, .., bn), (w1, .., wn)): y_i = rms_norm(x[..., b_{i-1}:b_i], w_i) for
                               every slice, one launch on CUDA (DeepSeek MLA's q_c / kv_c); with
                               quant_fp8, chosen slices come out as e4m3 codes + per-token-group
                               fp32 scales (rms_norm_quant_fp8's numerics) in the same launch

Accumulation is fp32 on every backend. Backends: ``"cuda"`` (csrc/ kernels, built on first use),
``"triton"`` and ``"reference"`` (fp32 PyTorch, the CPU path). The choice: the ``backend``
argument, else the environment variable ``QLINEAR_NORM_BACKEND`` (cuda | triton | reference |
auto), else by device: CUDA tensors use the CUDA extension when it builds (otherwise Triton),
CPU tensors the reference; with that automatic choice, :data:`AUTO_BACKEND_RULES` sends measured
shapes where the Triton kernel is faster to Triton. The CUDA backend's launch knobs (PDL, thread-block clusters for few
rows, cache hints, threads per row...) come from :data:`CUDA_KNOB_RULES` (measured rules; launches
no rule matches use the launcher's automatic plan).

The ops are registered as torch custom ops (``torch.ops.qlinear.rms_norm``,
``torch.ops.qlinear.fused_add_rms_norm``, ``torch.ops.qlinear.rms_norm_slices``,
``torch.ops.qlinear.rms_norm_slices_quant``) with fake implementations and declared mutations, so
``torch.compile`` and CUDA-graph capture see them as single opaque nodes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import torch

from qlinear._utils import FLOAT_DTYPES, define_op, describe, env_backend
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref

__all__ = ["rms_norm", "fused_add_rms_norm", "rms_norm_slices", "NORM_BACKENDS", "resolve_norm_backend", "cuda_knobs",
           "CUDA_KNOB_RULES", "CUDA_AUTO", "AUTO_BACKEND_RULES", "auto_backend", "SLICES_QUANT_ONE_LAUNCH_MAX_ROWS"]

NORM_BACKENDS = ("cuda", "triton", "reference")
_ENV_VAR = "QLINEAR_NORM_BACKEND"


def resolve_norm_backend(backend: str | None, x: torch.Tensor) -> str:
    """Backend for a call: ``backend`` argument > ``$QLINEAR_NORM_BACKEND`` > device capability.

    Raises ValueError for an unknown name or a CPU tensor sent to ``"cuda"`` / ``"triton"``.
    """
    if backend is not None and backend != "auto":
        if backend not in NORM_BACKENDS:
            raise ValueError(f"backend: expected one of {NORM_BACKENDS} or None, got {backend!r}")
        chosen = backend
    else:
        chosen = env_backend(_ENV_VAR, NORM_BACKENDS)
    if chosen is None:
        if x.device.type != "cuda":
            return "reference"
        # Function-local import (the one allowed kind): keeps the extension loader, and with it
        # torch.utils.cpp_extension, off the `import qlinear.ops` path.
        from qlinear.kernels import cuda_ext

        ops = cuda_ext.ops_or_none("the RMSNorm ops use their Triton kernels", stacklevel=4)
        return "cuda" if ops is not None else "triton"
    if chosen in ("cuda", "triton") and x.device.type != "cuda":
        raise ValueError(
            f"backend {chosen!r} needs CUDA tensors, got x on {x.device}; "
            "use backend='reference' for CPU tensors"
        )
    return chosen


# Automatic dispatch between the two GPU backends: applies only when the backend was chosen
# automatically (no ``backend`` argument, ``$QLINEAR_NORM_BACKEND`` unset or "auto") and that
# choice was "cuda". First match wins: (min_rows, min_row_bytes, max_row_bytes, fused, in_place,
# backend); fused / in_place None match both; rows = all rows of the call, row bytes = H * element
# size. Set from `benchmarks/bench_rms_norm.py --focus gaps3` (its summary prints the lines).
#   32768 x 7168 bf16 (H200): Triton with inductor's config (1 row / program, 8 warps, eviction
#       hints) vs CUDA 4134 GB/s and torch.compile 4286 (= the copy ceiling); 4096 rows stay CUDA
#       (3962 vs Triton 3489).
#   kv_c 32768 x 512 (row stride 2112), out of place: Triton 3658 GB/s, CUDA 3572, compile 3600;
#       in place CUDA 3214 vs Triton 3170.
#   Round 2 (benchmarks/results/session3/rms_norm_gaps2_round1.txt): the Triton rule for rows
#       over 8 KB ran 3984 GB/s (its eviction hints cost 4 %) vs CUDA with weight prefetch + PDL
#       4171: removed, 32768 x 7168 is CUDA again (CUDA_KNOB_RULES). `--focus gaps3` re-times the
#       candidates with interleaved repeats and prints the lines to set here.
#   Round 3 (benchmarks/results/session3/rms_norm_gaps3_round2.txt, interleaved passes): kv_c
#       32768 x 512 out of place is CUDA again (32 threads x 8 rows + PDL 3960 GB/s vs Triton's best
#       3878, compile 3602; CUDA_KNOB_RULES); q_c 32768 x 1536 (stride 2112) goes to Triton's
#       constant-H rows kernel, 2 rows x 4 warps (4138 vs CUDA 4086, compile 3072).
#   Round 4 (benchmarks/results/rms_norm_gaps3.json at 65a09fb, interleaved passes): 32768 x 7168
#       out of place -> Triton's two-pass loop kernel (inductor's structure: x read with evict_last,
#       re-read from L2; 1 row x 8 warps, 4096-column chunks) 4190 GB/s vs CUDA 4147-4160 and
#       compile 4221; q_c -> Triton 4 rows x 8 warps 4055 vs 3973 (2 x 4); kv_c 32768 -> CUDA
#       32 threads x 16 rows 3897 vs 3753 (x 8); 4096 x 7168 -> CUDA with the shuffle reduction
#       (hints 8) 3960 vs 3833 (compile 3845).
#   Round 5 (benchmarks/results/session4/rms_norm_gaps4_r3.txt, 5 interleaved passes): 32768 x 7168
#       out of place is CUDA again: the CUDA two-pass loop kernel (2 vectors x 256 threads, PDL,
#       hints 32) 4204 GB/s vs Triton's loop 4187 and compile 4219 (pass spreads 223.3-226.2 vs
#       222.4-228.5 us: a tie within noise, 0.4 % behind on the medians).
#   Session 5 (benchmarks/results/session5/probe5_r2, probe5_r3, all candidates' graph replays alternated):
#       32768 x 7168 out of place -> Triton's loop kernel with 16 warps, flat addressing
#       (norm_triton._HUGE_ROW_RULES): 4283 / 4269 GB/s in two runs vs this CUDA loop kernel 4231 /
#       4215 and torch.compile 4297 / 4278 (still 0.2-0.3 % behind compile).
AUTO_BACKEND_RULES: tuple[tuple[int, int, int, bool | None, bool | None, str], ...] = (
    (16384, 2561, 3072, False, False, "triton"),
    (16384, 12289, 14336, False, False, "triton"),
)


def auto_backend(n_rows: int, hidden: int, elem_size: int, fused: bool, in_place: bool) -> str:
    """The backend :data:`AUTO_BACKEND_RULES` assigns to an automatically dispatched CUDA call."""
    row_bytes = hidden * elem_size
    for min_rows, min_rb, max_rb, r_fused, r_in_place, backend in AUTO_BACKEND_RULES:
        if (n_rows >= min_rows and min_rb <= row_bytes <= max_rb and (r_fused is None or r_fused == fused)
                and (r_in_place is None or r_in_place == in_place)):
            return backend
    return "cuda"


def _dispatch(backend: str | None, x: torch.Tensor, fused: bool, in_place: bool) -> str:
    chosen = resolve_norm_backend(backend, x)
    if chosen == "cuda" and (backend is None or backend == "auto") and env_backend(_ENV_VAR, NORM_BACKENDS) is None:
        hidden = x.shape[-1]
        n_rows = x.numel() // hidden if hidden else 0
        return auto_backend(n_rows, hidden, x.element_size(), fused, in_place)
    return chosen


# ----------------------------------------------------------------------------- argument checks


def _check_tensor(name: str, t: object) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    return t


def _check_x(x: torch.Tensor) -> None:
    _check_tensor("x", x)
    if x.dim() < 1:
        raise ValueError(f"x: expected at least 1 dimension [..., H], got {describe(x)}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"x: expected dtype float16, bfloat16 or float32, got {x.dtype}")
    if x.shape[-1] > 1 and x.stride(-1) != 1:
        raise ValueError(f"x: expected stride(-1) == 1, got {describe(x)}")


def _check_like(name: str, t: torch.Tensor, x: torch.Tensor) -> None:
    _check_tensor(name, t)
    if t.dtype != x.dtype:
        raise TypeError(f"{name}: expected dtype {x.dtype} (x's dtype), got {t.dtype}")
    if t.shape != x.shape:
        raise ValueError(f"{name}: expected shape {tuple(x.shape)} (x's shape), got {tuple(t.shape)}")
    if t.device != x.device:
        raise ValueError(f"{name}: expected device {x.device} (x's device), got {t.device}")
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(f"{name}: expected stride(-1) == 1, got {describe(t)}")


def _check_weight(weight: torch.Tensor, x: torch.Tensor) -> None:
    _check_tensor("weight", weight)
    hidden = x.shape[-1]
    if weight.dim() != 1 or weight.shape[0] != hidden:
        raise ValueError(f"weight: expected shape ({hidden},) to match x's last dim, got {describe(weight)}")
    if weight.dtype != x.dtype:
        raise TypeError(
            f"weight: expected dtype {x.dtype} (x's dtype), got {weight.dtype}; "
            "convert the weight once at load time (RMSNorm's weight_loader does)"
        )
    if weight.device != x.device:
        raise ValueError(f"weight: expected device {x.device} (x's device), got {weight.device}")
    if hidden > 1 and weight.stride(0) != 1:
        raise ValueError(f"weight: expected a contiguous vector, got {describe(weight)}")


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    """[first, last+1) byte offsets of t's elements inside its storage."""
    es = t.element_size()
    start = t.storage_offset() * es
    extent = sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return start, start + (extent + 1) * es


def _rows_2d(t: torch.Tensor) -> tuple[int, int] | None:
    """(n_rows, row_stride) when t's leading dims collapse into one row stride, else None."""
    if t.dim() == 1:
        return 1, 0
    views = list(_collapse_leading((t,)))
    if len(views) != 1 or views[0][0].shape[0] != 1:
        return None
    v = views[0][0]
    return v.shape[1], v.stride(1)


def _may_overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True unless a and b provably share no element (same-storage byte ranges are refined for
    the common case of two [rows, H] views with one row stride, e.g. slices of one buffer)."""
    if a.numel() == 0 or b.numel() == 0:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    (a0, a1), (b0, b1) = _byte_span(a), _byte_span(b)
    if a1 <= b0 or b1 <= a0:
        return False
    ra, rb = _rows_2d(a), _rows_2d(b)
    if ra is None or rb is None or a.element_size() != b.element_size():
        return True
    (na, sa), (nb, sb) = ra, rb
    hidden = a.shape[-1]
    if na == 1 and nb == 1:
        sa = sb = max(hidden, 1)
    elif na == 1:
        sa = sb
    elif nb == 1:
        sb = sa
    if sa != sb or sa < hidden:
        return True
    # element offsets a0 + i*s + c and b0 + j*s + c'; shared iff d = (i-j)*s + (c-c') is solvable
    d = (b0 - a0) // a.element_size()
    if (b0 - a0) % a.element_size():
        return True
    for k in (d // sa, d // sa + 1):
        if -nb < k < na and abs(d - k * sa) < hidden:
            # (i - j) = k must be reachable with 0 <= i < na, 0 <= j < nb
            return True
    return False


def _check_written(name: str, t: torch.Tensor) -> None:
    # 1 = definitely overlapping (e.g. an expanded dim with stride 0): writes would race
    if torch._debug_has_internal_overlap(t) == 1:
        raise ValueError(f"{name}: written in place but has internally overlapping memory ({describe(t)})")


# ----------------------------------------------------------------------------- CUDA launch knobs

# The CUDA launcher's knobs, in the binding's argument order (csrc/norm_launch.h, NormConfig):
# (vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints);
# all zeros = the launcher's automatic plan.
CudaKnobs = tuple[int, int, int, int, int, int, int]
CUDA_AUTO: CudaKnobs = (0, 0, 0, 0, 0, 0, 0)
# Dispatch table, first match wins: (max_rows, max_row_bytes, fused, knobs) applies to a launch of
# at most max_rows rows of at most max_row_bytes bytes (H * element size); fused None matches both
# ops. Empty = every launch uses the automatic plan. Set from
# `benchmarks/bench_rms_norm.py --focus gaps` (its summary prints the best knobs per case), e.g.
#   (132, 1 << 62, None, (0, 0, 0, 0, 1, 8, 0)),   # few rows: 8-CTA clusters, PDL
#
# H200 (benchmarks/results/session2/rms_norm_gaps.json, bf16, CUDA-graph replay of back-to-back
# calls, best of two medians; torch.compile anchor in the same run):
#   16 x 7168:   auto 2.79 us; 256 threads per row + weight prefetch + PDL 2.14 us (compile 2.85);
#                8-CTA clusters 2.20 us: no better than the one-CTA row with PDL, not used.
#   4096 x 7168: auto 31.05 us; weight prefetch + PDL 29.64 us = 3963 GB/s (compile 3816).
#   kv_c 4096 x 512 (stride 2112), in place: auto 4.7 us; prefetch + PDL 4.27 us (compile,
#                out of place, 3.61 us: still faster).
#   32768 x 7168 and the fused add at 32768 x 7168: every knob within 0.3 % of auto (4092-4102 and
#                4113-4127 GB/s): auto kept.
# Knobs added after that sweep (timed by `bench_rms_norm.py --focus gaps3`): prefetch_weight 2 =
# the weight loaded before the PDL wait (plain norm), rows_per_block -k = the persistent kernel
# with k blocks per SM (plain norm). The few-rows rule below loads the weight before the wait.
# PDL only lets a launch start while the previous kernel drains; every kernel waits
# (griddepcontrol.wait) before touching memory, so results never depend on it. Rules are for the
# plain norm only: the fused add was measured at 32768 rows alone.
# Round 2: 32768 x 7168 plain, weight prefetch + PDL 4171 GB/s vs auto 4094: the rule for rows
# over 8 KB now covers every row count (shorter rows past 4096 keep the automatic plan).
# Round 3 (benchmarks/results/session3/rms_norm_gaps3_round2.txt, median of 3 interleaved passes):
#   16 x 7168: one-row-per-block kernel, 448 threads (2 vectors each), weight before the PDL wait
#       1.94 us vs 256 threads 2.07 (compile 2.83): rows of 12 KB < bytes <= 14 KB only (448 threads
#       hold at most 7168 16-bit elements; shorter rows keep 256 threads).
#   kv_c 512 bf16 (stride 2112): 4096 rows 32 threads x 16 rows + PDL 2541 GB/s (compile 2295);
#       32768 rows 32 x 8 rows, weight before the wait + PDL 3960 (compile 3602). Rows of 512 B
#       or less keep the automatic plan (not measured).
#   fused add 32768 x 7168: the 448-thread row kernel at 32 registers + PDL 4135 GB/s vs auto 4063
#       (rows over 16383 of 8-14 KB; fewer rows keep the automatic plan, not measured).
#   32768 x 7168 plain: + the shuffle reduction (hints bit 8) 4195 vs 4176.
# Round 5 (session 4, benchmarks/results/session4/rms_norm_gaps4_r3.txt, 5 interleaved passes):
#   16 x 7168: the committed 448-thread row kernel 1.98 us stays the fastest point; the mbarrier
#       cluster kernel measured 2.23-2.65 us (compile 2.88). 32768 x 7168 plain: the CUDA loop
#       kernel (2, 256, 1, 0, 1, 0, 32) 4204 GB/s (rule below; compile 4219). Fused add 32768 x 7168:
#       the committed (0, 448, 1, 0, 1, 0, 16) 4109-4110 GB/s, the best point (compile 3330).
# Round 5 knobs (csrc/norm_launch.h; timed by `bench_rms_norm.py --focus gaps4`, which prints the
# line to set per case): cluster 2 / 4 / 8 / 16 + hints 64 = the mbarrier cluster kernel for few
# rows (+ 128 warp pushes; prefetch 2 = weight before the PDL wait), loop kernel hints 32 + 64 plain
# stores / + 128 L1-allocating loads, row kernel (448 / 896 threads) with hints 4 / 5.
# Session 6 (benchmarks/results/session6/run4/kvc, kv_c 4096 x 512 stride 2112 out of place, three
#   alternated passes, us): 32 threads x 32 rows + weight before the wait + PDL 3.05-3.08 vs the
#   rule before (32 x 16, weight after) 3.53-3.57 and torch.compile 3.46-3.50; 16 x 32 3.06-3.09.
CUDA_KNOB_RULES: tuple[tuple[int, int, bool | None, CudaKnobs], ...] = (
    (132, 12288, False, (0, 256, 1, 2, 1, 0, 0)),
    (132, 14336, False, (0, 448, 1, 2, 1, 0, 0)),
    (132, 16384, False, (0, 256, 1, 2, 1, 0, 0)),
    (1 << 62, 512, None, CUDA_AUTO),
    (4096, 1024, False, (0, 32, 32, 2, 1, 0, 0)),
    (4096, 8192, False, (0, 0, 0, 1, 1, 0, 0)),
    (4096, 14336, False, (0, 0, 0, 1, 1, 0, 8)),
    (4096, 1 << 62, False, (0, 0, 0, 1, 1, 0, 0)),
    (1 << 62, 1024, False, (0, 32, 16, 2, 1, 0, 0)),
    (1 << 62, 8192, None, CUDA_AUTO),
    (16383, 1 << 62, True, CUDA_AUTO),
    (1 << 62, 14336, True, (0, 448, 1, 0, 1, 0, 16)),
    (1 << 62, 14336, False, (2, 256, 1, 0, 1, 0, 32)),
    (1 << 62, 1 << 62, False, (0, 0, 0, 1, 1, 0, 8)),
)


def cuda_knobs(n_rows: int, hidden: int, elem_size: int, fused: bool) -> CudaKnobs:
    """The CUDA launch knobs :data:`CUDA_KNOB_RULES` assigns to one launch (``CUDA_AUTO`` if none)."""
    row_bytes = hidden * elem_size
    for max_rows, max_row_bytes, rule_fused, knobs in CUDA_KNOB_RULES:
        if n_rows <= max_rows and row_bytes <= max_row_bytes and (rule_fused is None or rule_fused == fused):
            return knobs
    return CUDA_AUTO


# ----------------------------------------------------------------------------- row layout


def _collapse_leading(ts: tuple[torch.Tensor, ...]) -> Iterator[list[torch.Tensor]]:
    """Views of ``ts`` (one leading shape ``[...]``, each its own last dim ``H_t``) as 3-D
    ``[n_outer, n_inner, H_t]``, no copy.

    Leading dims are merged where every tensor's strides allow (stride[i] == stride[i+1] *
    size[i+1]); at most two merged dims go to one launch, further outer dims are iterated.
    """
    shape = ts[0].shape
    dims: list[tuple[int, list[int]]] = []
    for i in range(len(shape) - 1):
        if shape[i] == 1:
            continue
        strides = [t.stride(i) for t in ts]
        if dims and all(ps == s * shape[i] for ps, s in zip(dims[-1][1], strides)):
            dims[-1] = (dims[-1][0] * shape[i], strides)
        else:
            dims.append((shape[i], strides))
    while len(dims) < 2:
        dims.insert(0, (1, [0] * len(ts)))
    head, (n0, s0), (n1, s1) = dims[:-2], dims[-2], dims[-1]
    for idx in itertools.product(*(range(n) for n, _ in head)):
        views = []
        for k, t in enumerate(ts):
            offset = t.storage_offset() + sum(i * st[k] for i, (_, st) in zip(idx, head))
            views.append(t.as_strided((n0, n1, t.shape[-1]), (s0[k], s1[k], 1), offset))
        yield views


def _run_rms_norm(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float, backend: str) -> None:
    if backend == "reference":
        out.copy_(rms_norm_ref(x, weight, eps))
        return
    if x.numel() == 0:
        return
    # Function-local imports (the one allowed kind): triton / the CUDA build load on first use only.
    if backend == "cuda":
        from qlinear.kernels import cuda_ext

        ops = cuda_ext.load()
        for o3, x3 in _collapse_leading((out, x)):
            knobs = cuda_knobs(o3.shape[0] * o3.shape[1], o3.shape[2], o3.element_size(), False)
            ops.rms_norm(o3, x3, weight, eps, *knobs)
    else:
        from qlinear.kernels import norm_triton

        for o3, x3 in _collapse_leading((out, x)):
            norm_triton.rms_norm_triton(o3, x3, weight, eps)


def _run_fused(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float, backend: str) -> None:
    if backend == "reference":
        out, new_residual = fused_add_rms_norm_ref(x, residual, weight, eps)
        residual.copy_(new_residual)
        x.copy_(out)
        return
    if x.numel() == 0:
        return
    if backend == "cuda":
        from qlinear.kernels import cuda_ext

        ops = cuda_ext.load()
        for x3, r3 in _collapse_leading((x, residual)):
            knobs = cuda_knobs(x3.shape[0] * x3.shape[1], x3.shape[2], x3.element_size(), True)
            ops.fused_add_rms_norm(x3, r3, weight, eps, *knobs)
    else:
        from qlinear.kernels import norm_triton

        for x3, r3 in _collapse_leading((x, residual)):
            norm_triton.fused_add_rms_norm_triton(x3, r3, weight, eps)


# ----------------------------------------------------------------------------- custom ops


@define_op("qlinear::rms_norm", mutates_args=("out",))
def _rms_norm_op(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float, backend: str) -> None:
    # overlap checks need real storages, so they live here rather than in the traced wrapper
    _check_written("out", out)
    same = out.data_ptr() == x.data_ptr() and out.stride() == x.stride()
    if not same and _may_overlap(out, x):
        raise ValueError(
            f"out: overlaps x without being x itself (out {describe(out)}, x {describe(x)}); "
            "pass out=x for in place or a disjoint buffer"
        )
    _run_rms_norm(out, x, weight, eps, backend)


@_rms_norm_op.register_fake
def _rms_norm_fake(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float, backend: str) -> None:
    return None


@define_op("qlinear::fused_add_rms_norm", mutates_args=("x", "residual"))
def _fused_add_rms_norm_op(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float, backend: str
) -> None:
    _check_written("x", x)
    _check_written("residual", residual)
    if _may_overlap(x, residual):
        raise ValueError(
            f"x and residual overlap in memory (x {describe(x)}, residual {describe(residual)}); "
            "both are written in place and must be disjoint"
        )
    _run_fused(x, residual, weight, eps, backend)


@_fused_add_rms_norm_op.register_fake
def _fused_add_rms_norm_fake(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float, backend: str
) -> None:
    return None


def _spans_overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True unless a and b provably share no element. Like :func:`_may_overlap` but for views of
    different widths: two row sets with one row stride (e.g. column slices of one buffer) are
    resolved exactly, anything else by byte ranges (conservative)."""
    if a.numel() == 0 or b.numel() == 0 or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    (a0, a1), (b0, b1) = _byte_span(a), _byte_span(b)
    if a1 <= b0 or b1 <= a0:
        return False
    ra, rb = _rows_2d(a), _rows_2d(b)
    es = a.element_size()
    if ra is None or rb is None or es != b.element_size() or (b0 - a0) % es:
        return True
    (na, sa), (nb, sb) = ra, rb
    wa, wb = a.shape[-1], b.shape[-1]
    if na == 1 and nb == 1:
        sa = sb = max(wa, wb, 1)
    elif na == 1:
        sa = sb
    elif nb == 1:
        sb = sa
    if sa != sb or sa < max(wa, wb):
        return True
    # a: a0 + i*s + [0, wa), b: b0 + j*s + [0, wb) (elements); shared iff -wb < d - (i-j)*s < wa
    d = (b0 - a0) // es
    for k in (d // sa - 1, d // sa, d // sa + 1):
        if -nb < k < na and -wb < d - k * sa < wa:
            return True
    return False


def _run_slices(
    outs: list[torch.Tensor], x: torch.Tensor, bounds: list[int], weights: list[torch.Tensor], eps: float,
    backend: str,
) -> None:
    n = len(weights)
    if backend == "reference":
        for i in range(n):
            outs[i].copy_(rms_norm_ref(x[..., bounds[i]:bounds[i + 1]], weights[i], eps))
        return
    if x.numel() == 0:
        return
    if backend == "cuda":
        from qlinear.kernels import cuda_ext

        ops = cuda_ext.load()
        for views in _collapse_leading((x, *outs)):
            x3, outs3 = views[0], views[1:]
            n_rows = x3.shape[0] * x3.shape[1]
            # the launcher takes kMaxSlices (4) slices per launch
            for c in range(0, n, 4):
                e = min(n, c + 4)
                widest = max(bounds[i + 1] - bounds[i] for i in range(c, e))
                pdl = cuda_knobs(n_rows, widest, x.element_size(), False)[4]
                ops.rms_norm_slices(outs3[c:e], x3, bounds[c:e + 1], weights[c:e], eps, 0, 0, pdl)
    else:
        # no multi-slice Triton kernel: one Triton RMSNorm launch per slice, same arithmetic
        from qlinear.kernels import norm_triton

        for i in range(n):
            xs = x[..., bounds[i]:bounds[i + 1]]
            for o3, x3 in _collapse_leading((outs[i], xs)):
                norm_triton.rms_norm_triton(o3, x3, weights[i], eps)


@define_op("qlinear::rms_norm_slices", mutates_args=("outs",))
def _rms_norm_slices_op(
    outs: list[torch.Tensor], x: torch.Tensor, bounds: list[int], weights: list[torch.Tensor], eps: float,
    backend: str,
) -> None:
    # Each output is either x's slice itself (in place) or disjoint from x and from the other
    # outputs; a partial overlap would make the one-launch result depend on block order.
    _check_slice_args(x, bounds, weights)
    if len(outs) != len(weights):
        raise ValueError(f"outs: expected {len(weights)} tensors (one per weight), got {len(outs)}")
    separate = []
    for i, o in enumerate(outs):
        xs = x[..., bounds[i]:bounds[i + 1]]
        _check_like(f"outs[{i}]", o, xs)
        _check_written(f"outs[{i}]", o)
        if o.data_ptr() == xs.data_ptr() and o.stride() == xs.stride():
            continue
        if _spans_overlap(o, x):
            raise ValueError(
                f"outs[{i}]: overlaps x without being x's slice {i} (outs[{i}] {describe(o)}, x {describe(x)}); "
                "pass the slice itself for in place or a disjoint buffer"
            )
        for j, p in separate:
            if _spans_overlap(o, p):
                raise ValueError(f"outs[{i}] and outs[{j}] overlap in memory ({describe(o)}, {describe(p)})")
        separate.append((i, o))
    _run_slices(outs, x, list(bounds), weights, eps, backend)


@_rms_norm_slices_op.register_fake
def _rms_norm_slices_fake(
    outs: list[torch.Tensor], x: torch.Tensor, bounds: list[int], weights: list[torch.Tensor], eps: float,
    backend: str,
) -> None:
    return None


# ----------------------------------------------------------------------------- slices with FP8 outputs

# Rows below which rms_norm_slices with quant_fp8 runs the one-launch CUDA kernel
# (csrc/norm_slices_quant.cuh); from this many rows on it runs the two tuned per-slice kernels
# (rms_norm_quant_fp8's row kernels per quantized slice + the plain norm per plain slice), which
# move more bytes per second at large M. Set from benchmarks/gpu_mlanorm.sh (one-launch vs
# two-launch tail at M = 1 .. 32768; session 4, benchmarks/results/session4/mlanorm_r3.txt, MLA
# 2112-wide bf16 rows: one launch 3.90 vs two 6.98 us at M = 1024, 14.01 vs 11.97 at M = 4096).
SLICES_QUANT_ONE_LAUNCH_MAX_ROWS = 4096
# PDL for the one-launch kernel (its weights are read before the wait: norm weights are
# parameters, never written by the kernel launched just before).
SLICES_QUANT_PDL = 1


def _slices_quant_scale_eps() -> float:
    from qlinear.reference.fp8 import FP8_SCALE_EPS

    return FP8_SCALE_EPS


def _run_slices_quant(
    outs: list[torch.Tensor], scales: list[torch.Tensor], x: torch.Tensor, bounds: list[int],
    weights: list[torch.Tensor], quant: list[bool], eps: float, group_size: int, backend: str,
) -> None:
    from qlinear.reference.fp8 import rms_norm_quant_fp8_ref

    scale_eps = _slices_quant_scale_eps()
    n = len(weights)
    sc_of = {}
    it = iter(scales)
    for i in range(n):
        if quant[i]:
            sc_of[i] = next(it)
    views = [x[:, bounds[i]:bounds[i + 1]] for i in range(n)]
    if backend == "reference":
        for i in range(n):
            if quant[i]:
                q, s = rms_norm_quant_fp8_ref(views[i], weights[i], eps, group_size)
                outs[i].copy_(q)
                sc_of[i].copy_(s)
            else:
                outs[i].copy_(rms_norm_ref(views[i], weights[i], eps))
        return
    if x.shape[0] == 0:
        return
    if backend == "cuda":
        from qlinear.kernels import cuda_ext

        ops = cuda_ext.load()
        opt_scales = [sc_of.get(i) for i in range(n)]
        # False: the one-launch kernel does not take these arguments (dtype, alignment, widths)
        if n <= 4 and x.shape[0] < SLICES_QUANT_ONE_LAUNCH_MAX_ROWS and ops.rms_norm_slices_quant(
                outs, opt_scales, x, bounds, weights, eps, scale_eps, group_size, 0, SLICES_QUANT_PDL):
            return
        # per slice: rms_norm_quant_fp8's CUDA kernels and the plain norm's tuned launches
        for i in range(n):
            if quant[i]:
                ops.rms_norm_quant_fp8(outs[i], sc_of[i], views[i], None, weights[i], eps, scale_eps, group_size)
            else:
                _run_rms_norm(outs[i], views[i], weights[i], eps, "cuda")
        return
    from qlinear.kernels import fp8_triton, norm_triton

    for i in range(n):
        if quant[i]:
            q, s = fp8_triton.rms_norm_quant_fp8(views[i], weights[i], eps, group_size, scale_eps=scale_eps)
            outs[i].copy_(q)
            sc_of[i].copy_(s)
        else:
            for o3, x3 in _collapse_leading((outs[i], views[i])):
                norm_triton.rms_norm_triton(o3, x3, weights[i], eps)


@define_op("qlinear::rms_norm_slices_quant", mutates_args=("outs", "scales"))
def _rms_norm_slices_quant_op(
    outs: list[torch.Tensor], scales: list[torch.Tensor], x: torch.Tensor, bounds: list[int],
    weights: list[torch.Tensor], quant: list[bool], eps: float, group_size: int, backend: str,
) -> None:
    # outs[i]: x's dtype [M, W_i] (plain; x's slice itself for in place, or disjoint) or e4m3
    # [M, W_i] (quantized); scales: one fp32 [M, cdiv(W_i, group_size)] per quantized slice, in order
    separate = []
    for i, o in enumerate(outs):
        _check_written(f"outs[{i}]", o)
        xs = x[:, bounds[i]:bounds[i + 1]]
        if not quant[i] and o.data_ptr() == xs.data_ptr() and o.stride() == xs.stride():
            continue
        if not quant[i] and _spans_overlap(o, x):
            raise ValueError(f"outs[{i}]: overlaps x without being x's slice {i} ({describe(o)}, x {describe(x)})")
        separate.append((f"outs[{i}]", o))
    separate += [(f"scales[{k}]", s) for k, s in enumerate(scales)]
    for k, (na, a) in enumerate(separate):
        if a.numel() and a.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() and a.dtype != x.dtype:
            raise ValueError(f"{na}: shares x's storage ({describe(a)}); pass a separate buffer")
        for nb, b in separate[:k]:
            if a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and _byte_spans_meet(a, b):
                raise ValueError(f"{na} and {nb} overlap in memory ({describe(a)}, {describe(b)})")
    _run_slices_quant(outs, scales, x, list(bounds), weights, list(quant), eps, group_size, backend)


@_rms_norm_slices_quant_op.register_fake
def _rms_norm_slices_quant_fake(outs, scales, x, bounds, weights, quant, eps, group_size, backend) -> None:
    return None


def _byte_spans_meet(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return False
    (a0, a1), (b0, b1) = _byte_span(a), _byte_span(b)
    return a0 < b1 and b0 < a1


def _check_quant_args(x: torch.Tensor, n: int, quant_fp8: object, group_size: object) -> list[bool]:
    if isinstance(quant_fp8, bool):
        flags = [quant_fp8] * n
    else:
        flags = list(quant_fp8)
        if len(flags) != n or not all(isinstance(f, bool) for f in flags):
            raise TypeError(f"quant_fp8: expected a bool or {n} bools (one per slice), got {quant_fp8!r}")
    if not isinstance(group_size, int) or isinstance(group_size, bool) or group_size <= 0:
        raise ValueError(f"group_size: expected a positive int, got {group_size!r}")
    if any(flags) and x.dim() != 2:
        raise ValueError(f"x: quant_fp8 needs 2-D [T, W] rows (tokens x columns), got {describe(x)}")
    return flags


def _check_slice_args(x: torch.Tensor, bounds: object, weights: object) -> None:
    _check_x(x)
    if isinstance(bounds, torch.Tensor) or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        raise TypeError(f"bounds: expected a sequence of ints (column offsets), got {bounds!r}")
    bounds = list(bounds)
    if isinstance(weights, torch.Tensor):
        raise TypeError("weights: expected a sequence of 1-D tensors (one per slice), got a single tensor")
    weights = list(weights)
    width = x.shape[-1]
    if len(bounds) < 2:
        raise ValueError(f"bounds: expected at least 2 column offsets (one slice), got {bounds}")
    if bounds[0] < 0 or bounds[-1] > width:
        raise ValueError(f"bounds: expected offsets within [0, {width}] (x's last dim), got {bounds}")
    if any(a >= b for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"bounds: expected strictly increasing offsets, got {bounds}")
    if len(weights) != len(bounds) - 1:
        raise ValueError(
            f"weights: expected {len(bounds) - 1} tensors (one per slice of bounds {bounds}), got {len(weights)}"
        )
    for i, w in enumerate(weights):
        _check_tensor(f"weights[{i}]", w)
        xs = x[..., bounds[i]:bounds[i + 1]]
        try:
            _check_weight(w, xs)
        except (TypeError, ValueError) as e:
            raise type(e)(f"weights[{i}] (slice [{bounds[i]}, {bounds[i + 1]})): {e}") from None


# ----------------------------------------------------------------------------- public API


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: torch.Tensor | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """y = x / sqrt(mean(x^2, -1) + eps) * weight, accumulated in fp32; returns y (= ``out``).

    x: ``[..., H]`` with ``stride(-1) == 1`` and any other strides (e.g. ``buf[:, 1536:2048]`` of a
    ``[T, 2112]`` buffer, or non-collapsible 3-D / 4-D views); never copied.
    weight: ``[H]``, contiguous, same dtype and device as x (fp16, bf16 or fp32). Other weight
    dtypes (e.g. fp32 weight with bf16 x) are not accepted: convert once at load time.
    out: optional ``[..., H]`` of x's shape / dtype / device, ``stride(-1) == 1``, any other
    strides; may be ``x`` itself (in place) but must not partially overlap it. When omitted a new
    contiguous tensor is returned.
    backend: ``"cuda"``, ``"triton"``, ``"reference"`` or None (see the module docstring).
    """
    _check_x(x)
    _check_weight(weight, x)
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    else:
        _check_like("out", out, x)
    # identity, not pointers: this wrapper also runs on fake tensors under torch.compile
    in_place = out is x
    _rms_norm_op(out, x, weight, float(eps), _dispatch(backend, x, False, in_place))
    return out


def fused_add_rms_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    backend: str | None = None,
) -> None:
    """In place: residual <- x + residual; x <- residual / sqrt(mean(residual^2, -1) + eps) * weight.

    The sum is computed in fp32 and rounded to the dtype; the norm is taken of the stored
    (rounded) residual. x, residual: ``[..., H]`` of one shape, dtype (fp16, bf16, fp32) and
    device, ``stride(-1) == 1``, any other strides (both may be strided views), and disjoint in
    memory. weight: ``[H]``, contiguous, x's dtype. Returns None.
    """
    _check_x(x)
    _check_like("residual", residual, x)
    _check_weight(weight, x)
    _fused_add_rms_norm_op(x, residual, weight, float(eps), _dispatch(backend, x, True, True))


def rms_norm_slices(
    x: torch.Tensor,
    bounds: Sequence[int],
    weights: Sequence[torch.Tensor],
    eps: float = 1e-6,
    inplace: bool = False,
    backend: str | None = None,
    *,
    quant_fp8: bool | Sequence[bool] | None = None,
    group_size: int = 128,
    column_major_scales: bool = False,
) -> list:
    """RMSNorm of several column slices of the same rows, each with its own weight, in one launch.

    For slice i = ``x[..., bounds[i]:bounds[i + 1]]`` (width ``W_i``):
    ``y_i = x_i / sqrt(mean(x_i^2, -1) + eps) * weights[i]``, exactly :func:`rms_norm`'s arithmetic
    (fp32 accumulation, one rounding of the result). E.g. DeepSeek MLA after the fused QKV-A
    projection ``qkv [T, 2112]``: ``q_c, kv_c = rms_norm_slices(qkv, (0, 1536, 2048), (w_q, w_kv))``;
    columns outside the slices (the rope part 2048:2112) are not read or written.

    x: ``[..., W]``, fp16 / bf16 / fp32, ``stride(-1) == 1``, any other strides; never copied.
    bounds: ``n + 1`` strictly increasing column offsets in ``[0, W]`` for ``n >= 1`` slices.
    weights: ``n`` contiguous ``[W_i]`` tensors of x's dtype and device.
    inplace: False returns ``n`` new contiguous ``[..., W_i]`` tensors; True normalizes the slices
    inside x and returns the views ``x[..., bounds[i]:bounds[i + 1]]``.
    backend: as :func:`rms_norm`. ``"cuda"`` is one kernel launch for up to 4 slices (more slices:
    one launch per 4); ``"triton"`` launches its RMSNorm once per slice; ``"reference"`` is the fp32
    PyTorch loop.

    quant_fp8: a bool per slice (or one for all): a True slice is returned as FP8 instead,
    ``(q, scales)`` with ``q`` e4m3 ``[T, W_i]`` and fp32 ``scales`` ``[T, cdiv(W_i, group_size)]``
    (strides ``(1, T)`` with ``column_major_scales``), exactly :func:`qlinear.ops.rms_norm_quant_fp8`'s
    numerics: ``y = x_i * rsqrt(mean(x_i^2) + eps) * w_i`` in fp32 (never rounded to x's dtype),
    ``scale = max(amax_group(|y|), 1e-10) / 448``, ``q = e4m3_rn(clamp(y / scale, -448, 448))``.
    Needs 2-D ``x`` ``[T, W]``. E.g. MLA with an FP8 q_b_proj::

        (q_fp8, q_scales), kv_c = rms_norm_slices(qkv, (0, 1536, 2048), (w_q, w_kv), 1e-6,
                                                  quant_fp8=(True, False))

    On CUDA (sm_89+) this is ONE launch for up to 4 slices of bf16 / fp16 rows (group 128, 16-byte
    aligned rows and slices, widths <= 2048 and a multiple of 128 for quantized slices, of 8 for
    plain ones) below :data:`SLICES_QUANT_ONE_LAUNCH_MAX_ROWS` rows; otherwise one launch per slice
    (rms_norm_quant_fp8's kernels and the plain norm's). ``inplace`` applies to the plain slices
    (quantized ones always get new buffers).
    """
    _check_slice_args(x, bounds, weights)
    bounds = [int(b) for b in bounds]
    weights = list(weights)
    if quant_fp8 is not None:
        flags = _check_quant_args(x, len(weights), quant_fp8, group_size)
        if any(flags):
            return _rms_norm_slices_fp8(x, bounds, weights, float(eps), inplace, backend, flags, group_size,
                                        bool(column_major_scales))
    views = [x[..., bounds[i]:bounds[i + 1]] for i in range(len(weights))]
    if inplace:
        for i, v in enumerate(views):
            _check_written(f"x (slice {i}, written in place)", v)
        outs = views
    else:
        outs = [torch.empty(v.shape, dtype=x.dtype, device=x.device) for v in views]
    _rms_norm_slices_op(outs, x, bounds, weights, float(eps), resolve_norm_backend(backend, x))
    return outs


def _rms_norm_slices_fp8(
    x: torch.Tensor, bounds: list[int], weights: list[torch.Tensor], eps: float, inplace: bool, backend: str | None,
    flags: list[bool], group_size: int, column_major_scales: bool,
) -> list:
    from qlinear._utils import FP8_E4M3, cdiv, empty_group_scales

    T = x.shape[0]
    outs, scales, result = [], [], []
    for i, w in enumerate(weights):
        view = x[:, bounds[i]:bounds[i + 1]]
        if flags[i]:
            q = torch.empty(view.shape, dtype=FP8_E4M3, device=x.device)
            s = empty_group_scales(T, cdiv(view.shape[1], group_size), column_major_scales, x.device)
            outs.append(q)
            scales.append(s)
            result.append((q, s))
        else:
            if inplace:
                _check_written(f"x (slice {i}, written in place)", view)
                o = view
            else:
                o = torch.empty(view.shape, dtype=x.dtype, device=x.device)
            outs.append(o)
            result.append(o)
    _rms_norm_slices_quant_op(outs, scales, x, bounds, weights, flags, eps, group_size,
                              resolve_norm_backend(backend, x))
    return result
