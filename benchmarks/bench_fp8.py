"""Op-level FP8 benchmark (H200 target): block-scaled FP8 linear vs bf16, the split-K Triton kernel
config sweep, merged vs separate MLA projections, and the fused RMSNorm -> FP8 quantization vs a
copy measured in the same run.

Every time is the median over CUDA-graph replays of a graph holding several calls (launch overhead
amortized the way a captured decode step sees it); weights rotate over enough copies that each
call reads its weight from HBM, not from the 50 MB L2. µs per call; TFLOP/s = 2*M*N*K / time.

    python benchmarks/bench_fp8.py --out "$OUT"      # writes bench_fp8.json; < 4 min on an H200
    python benchmarks/bench_fp8.py --focus small-m --out "$OUT"   # bench_fp8_small_m.json, < 100 s
    python benchmarks/bench_fp8.py --focus layer --budget-s 100 --out "$OUT"   # fp8small_layer.json

``--focus layer`` times the whole layer forward (bench_linear's method) at M in {1, 2, 4, 16} on
2112x7168, its 1536 / 576-row halves, 24576x1536 and 7168x16384 under each small-M variant of
``LAYER_VARIANTS`` (PDL at M <= 16, L2 weight prefetch, one quantization program row for all rows,
activation quantization fused into the GEMM), the merged/separate ratio per variant, M = 128
Triton vs scaled_mm, then GEMM_CONFIGS neighbours at M = 1 / 16 until ``--budget-s``.

``--focus small-m`` times only what the small-M tables need: the whole Triton op (activation
quantization included) for M in {1, 2, 4, 16, 64, 128} on the three shapes, over a coordinate
sweep around the current default config (block_n {32, 64, 128}, split_k {4, 8, 16}, num_warps
{4, 8}, num_stages {3, 4, 5}), scaled_mm for the dispatch, and rms_norm_quant_fp8 at 2-16 warps;
it ends by printing GEMM_CONFIGS / dispatch / norm warp lines ready to paste.

Sections of the JSON: ``env``; ``gemm`` (per shape x M: bf16 F.linear, torch._scaled_mm blockwise
with and without the activation quantization, qlinear Triton with its default config and with the
sweep's best, the auto dispatch and the backend it chose); ``sweep`` (every Triton config tried);
``best_configs`` (per shape and M bucket, for the dispatch table); ``merged`` (one 2112-row GEMM vs
1536 + 576); ``norm_quant`` (rms_norm_quant_fp8 on 32768 strided rows vs the copy ceiling).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qlinear._utils import FP8_E4M3, cdiv  # noqa: E402
from qlinear.kernels import fp8_triton as kern  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402

MS = [1, 2, 4, 16, 64, 128, 1024, 4096]
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]  # (N, K): fused q_a+kv_a, q_b, MLP-ish
SWEEP_MS = [1, 16, 64, 128, 4096]
ROTATE_BYTES = 160e6  # > 3x the H200's 50 MB L2

# Candidate Triton configs per M bucket (split_k 0 = auto_split_k). Kept small: every distinct
# (tile, split, stages, warps) is one Triton compile.
SWEEP = {
    "small": [  # M <= 16
        kern.GemmConfig(16, 64, 0, 4, 5),
        kern.GemmConfig(16, 128, 0, 4, 4),
        kern.GemmConfig(16, 64, 1, 4, 5),  # split-K off, for comparison
    ],
    "m64": [
        kern.GemmConfig(64, 64, 0, 4, 4),
        kern.GemmConfig(64, 128, 0, 4, 4),
    ],
    "m128": [
        kern.GemmConfig(64, 128, 0, 4, 4),
        kern.GemmConfig(128, 128, 0, 8, 3),
    ],
    "large": [
        kern.GemmConfig(128, 128, 1, 8, 3),
        kern.GemmConfig(128, 256, 1, 8, 3),
        kern.GemmConfig(128, 128, 1, 4, 4),
    ],
}


def bucket(M: int) -> str:
    if M <= 16:
        return "small"
    if M <= 64:
        return "m64"
    if M <= 128:
        return "m128"
    return "large"


# ------------------------------------------------------------------------------------------
# timing
# ------------------------------------------------------------------------------------------


def time_graph(fn, calls: int | None = None, reps: int = 15) -> dict:
    """Median µs of one ``fn(i)`` call; ``fn(i)`` is called with i = 0..calls-1 inside one graph."""
    fn(0)  # compile, autotune caches, allocator warm-up
    torch.cuda.synchronize()
    if calls is None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(3):
            fn(i)
        end.record()
        torch.cuda.synchronize()
        est_us = start.elapsed_time(end) * 1e3 / 3
        calls = int(min(50, max(3, 3000 / max(est_us, 1.0))))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(2):
            fn(i)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    del graph
    times.sort()
    return {"us": statistics.median(times), "p20": times[len(times) // 5], "p80": times[(4 * len(times)) // 5]}


def copies_for(nbytes: int) -> int:
    return int(min(8, max(1, math.ceil(ROTATE_BYTES / nbytes))))


def env_info() -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "commit": commit,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


# ------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------


def make_weights(N: int, K: int, dev: str = "cuda"):
    n = copies_for(N * K)
    ws = [(torch.randn(N, K, device=dev) * 60).to(FP8_E4M3) for _ in range(n)]
    ss = [torch.rand(cdiv(N, 128), cdiv(K, 128), device=dev) * 1e-3 + 1e-4 for _ in range(n)]
    return ws, ss


def bench_gemm(deadline: float, log) -> tuple[list, list, dict]:
    rows, sweep_rows, best = [], [], {}
    for N, K in SHAPES:
        ws, ss = make_weights(N, K)
        nb = copies_for(N * K * 2)
        wb = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) for _ in range(nb)]
        shape = f"{N}x{K}"
        scaled_ok = ops._scaled_mm_block_ok(torch.empty(1, K, device="cuda"), ws[0], (128, 128), ss[0])
        for M in MS:
            flop = 2.0 * M * N * K
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            nw = len(ws)

            def rec(name, t, **extra):
                row = {"shape": shape, "M": M, "impl": name, **t, "tflops": flop / t["us"] / 1e6, **extra}
                rows.append(row)
                log(f"{shape:>11} M={M:<5} {name:<22} {t['us']:9.2f} us {row['tflops']:8.1f} TFLOP/s {extra or ''}")

            rec("bf16_linear", time_graph(lambda i: F.linear(x, wb[i % nb])))
            if scaled_ok:
                q, s = kern.per_token_group_quant_fp8(x, 128, column_major_scales=True, pad_rows_to=4)
                rec("scaled_mm_gemm_only", time_graph(
                    lambda i: torch._scaled_mm(q, ws[i % nw].t(), scale_a=s, scale_b=ss[i % nw].t(),
                                               out_dtype=torch.bfloat16)))
                rec("scaled_mm", time_graph(lambda i: ops.fp8_block_linear(x, ws[i % nw], ss[i % nw], backend="scaled_mm")))
            rec("triton_default", time_graph(lambda i: ops.fp8_block_linear(x, ws[i % nw], ss[i % nw], backend="triton")),
                config=kern.default_gemm_config(M, N, K).__dict__)

            # Config sweep (GEMM only, pre-quantized activations) at the sweep's M values; the
            # other M reuse the winner of the nearest swept M of their bucket.
            qc, sc = kern.per_token_group_quant_fp8(x, 128, column_major_scales=True)
            if M in SWEEP_MS and time.time() < deadline:
                for cfg0 in SWEEP[bucket(M)]:
                    cfg = resolve(cfg0, M, N, K)
                    try:
                        t = time_graph(lambda i: kern.fp8_block_gemm(qc, sc, ws[i % nw], ss[i % nw], config=cfg))
                    except Exception as exc:  # e.g. a tile that does not fit in shared memory
                        sweep_rows.append({"shape": shape, "M": M, "config": cfg.__dict__, "error": repr(exc)[:300]})
                        log(f"{shape:>11} M={M:<5} sweep {cfg} failed: {exc!r}"[:300])
                        continue
                    sweep_rows.append({"shape": shape, "M": M, "config": cfg.__dict__, **t, "tflops": flop / t["us"] / 1e6})
                    key = f"{shape}/M={M}"
                    if key not in best or best[key][1] > t["us"]:
                        best[key] = (cfg0, t["us"])
            swept = [m for m in SWEEP_MS if bucket(m) == bucket(M) and f"{shape}/M={m}" in best]
            if swept:
                nearest = min(swept, key=lambda m: abs(m - M))
                cfg = resolve(best[f"{shape}/M={nearest}"][0], M, N, K)
                rec("triton_best_gemm_only",
                    time_graph(lambda i: kern.fp8_block_gemm(qc, sc, ws[i % nw], ss[i % nw], config=cfg)),
                    config=cfg.__dict__)

                def triton_best(i, cfg=cfg):
                    qq, s2 = kern.per_token_group_quant_fp8(x, 128, column_major_scales=True)
                    return kern.fp8_block_gemm(qq, s2, ws[i % nw], ss[i % nw], config=cfg)

                rec("triton_best", time_graph(triton_best), config=cfg.__dict__)
            chosen = ops.fp8_block_backend(x, ws[0], weight_scale_inv=ss[0])
            rec("auto", time_graph(lambda i: ops.fp8_block_linear(x, ws[i % nw], ss[i % nw])), backend=chosen)
        del ws, ss, wb
        torch.cuda.empty_cache()
    # split_k 0 in a stored config means "auto_split_k for the problem".
    return rows, sweep_rows, {k: {"config": v[0].__dict__, "gemm_us": v[1]} for k, v in best.items()}


def resolve(cfg: kern.GemmConfig, M: int, N: int, K: int) -> kern.GemmConfig:
    split = cfg.split_k or kern.auto_split_k(M, N, K, cfg.block_m, cfg.block_n)
    return kern.GemmConfig(cfg.block_m, cfg.block_n, split, cfg.num_warps, cfg.num_stages, cfg.group_m)


def bench_merged(log) -> list:
    K = 7168
    w_m, s_m = make_weights(2112, K)
    w_q, s_q = make_weights(1536, K)
    w_kv, s_kv = make_weights(576, K)
    rows = []
    for M in [1, 4, 16, 64, 128, 1024, 4096]:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        for backend in [None, "triton", "scaled_mm"]:
            if backend == "scaled_mm" and not ops._scaled_mm_block_ok(x, w_m[0], (128, 128), s_m[0]):
                continue
            n1, n2, n3 = len(w_m), len(w_q), len(w_kv)
            merged = time_graph(lambda i: ops.fp8_block_linear(x, w_m[i % n1], s_m[i % n1], backend=backend))

            def separate(i):
                ops.fp8_block_linear(x, w_q[i % n2], s_q[i % n2], backend=backend)
                ops.fp8_block_linear(x, w_kv[i % n3], s_kv[i % n3], backend=backend)

            sep = time_graph(separate)
            ratio = merged["us"] / sep["us"]
            rows.append({"M": M, "backend": backend or "auto", "merged_us": merged["us"], "separate_us": sep["us"],
                         "ratio": ratio})
            log(f"merged M={M:<5} {backend or 'auto':<9} merged {merged['us']:8.2f} us  separate {sep['us']:8.2f} us  ratio {ratio:.3f}")
    return rows


def _norm_quant_inputs():
    """``(M, W, x, w, res, G)`` of the norm-quant benchmarks: the q_c slice x of a [32768, 2112] bf16
    projection output (1536 wide, row stride 2112), its weight, a contiguous residual, and the
    number of 128-column groups."""
    M, W, S = 32768, 1536, 2112
    fused = torch.randn(M, S, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(W, device="cuda", dtype=torch.bfloat16) + 0.5
    res = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
    return M, W, fused[:, :W], w, res, cdiv(W, 128)


def bench_norm_quant(log) -> list:
    M, W, x, w, res, G = _norm_quant_inputs()
    rows = []
    # Copy ceiling: a contiguous bf16 copy of the same element count (read + write bytes).
    src = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t_copy = time_graph(lambda i: dst.copy_(src), calls=20)
    copy_gbps = 2 * src.numel() * 2 / t_copy["us"] / 1e3
    rows.append({"impl": "copy_bf16", **t_copy, "gbps": copy_gbps})
    log(f"copy ceiling {copy_gbps:8.1f} GB/s ({t_copy['us']:.1f} us)")
    bytes_plain = M * W * 2 + M * W + M * G * 4
    bytes_res = M * W * 2 * 3 + M * W + M * G * 4
    for warps in [4, 8, 16]:
        for column_major in [False, True]:
            t = time_graph(lambda i: kern.rms_norm_quant_fp8(x, w, 1e-6, 128, column_major_scales=column_major,
                                                             num_warps=warps), calls=20)
            gbps = bytes_plain / t["us"] / 1e3
            rows.append({"impl": "rms_norm_quant_fp8", "num_warps": warps, "column_major": column_major, **t,
                         "gbps": gbps, "frac_of_copy": gbps / copy_gbps})
            log(f"rms_norm_quant warps={warps:<2} cm={column_major!s:<5} {t['us']:8.1f} us {gbps:8.1f} GB/s {gbps / copy_gbps:.3f} of copy")
        t = time_graph(lambda i: kern.rms_norm_quant_fp8(x, w, 1e-6, 128, residual=res, num_warps=warps), calls=20)
        gbps = bytes_res / t["us"] / 1e3
        rows.append({"impl": "fused_add_rms_norm_quant_fp8", "num_warps": warps, **t, "gbps": gbps,
                     "frac_of_copy": gbps / copy_gbps})
        log(f"add+rms_norm_quant warps={warps:<2} {t['us']:8.1f} us {gbps:8.1f} GB/s {gbps / copy_gbps:.3f} of copy")
    t = time_graph(lambda i: ops.rms_norm_quant_fp8(x, w), calls=20)
    gbps = bytes_plain / t["us"] / 1e3
    rows.append({"impl": "op_default", **t, "gbps": gbps, "frac_of_copy": gbps / copy_gbps})
    log(f"rms_norm_quant op default {t['us']:8.1f} us {gbps:8.1f} GB/s {gbps / copy_gbps:.3f} of copy")
    return rows


# ------------------------------------------------------------------------------------------
# --focus small-m: only what the small-M dispatch tables need, < 100 s on an H200
# ------------------------------------------------------------------------------------------

SMALL_MS = [1, 2, 4, 16, 64, 128]
SWEPT_MS = [1, 16, 64, 128]  # M = 2, 4 are timed with the winners of M = 1 (same compiled kernels)


def _neighbours(base: "kern.GemmConfig", M: int) -> list:
    """The base config and its one-parameter variations over the grid of the sweep (block_n
    {32, 64, 128}, split_k {4, 8, 16}, num_warps {4, 8}, num_stages {3, 4, 5}): a coordinate
    sweep, because every distinct tile/warps/stages/split is one Triton compile and the full grid
    would take minutes."""
    from dataclasses import replace

    out = [base]
    out += [replace(base, block_n=v) for v in (32, 64, 128) if v != base.block_n]
    out += [replace(base, split_k=v) for v in (4, 8, 16) if v != base.split_k]
    out += [replace(base, num_warps=v) for v in (4, 8) if v != base.num_warps]
    out += [replace(base, num_stages=v) for v in (3, 4, 5) if v != base.num_stages]
    seen, uniq = set(), []
    for c in out:
        if c not in seen and not (c.block_m >= 128 and c.block_n >= 128 and c.num_stages > 3):
            seen.add(c)
            uniq.append(c)
    return uniq


def _cfg_src(c) -> str:
    return f"_G({c.block_m}, {c.block_n}, {c.split_k}, {c.num_warps}, {c.num_stages})"


def bench_small_m(deadline: float, log) -> dict:
    res = {"rows": [], "best": {}, "scaled_mm": {}}
    for N, K in SHAPES:
        shape = f"{N}x{K}"
        ws, ss = make_weights(N, K)
        nw = len(ws)
        scaled_ok = ops._scaled_mm_block_ok(torch.empty(1, K, device="cuda"), ws[0], (128, 128), ss[0])
        winners: dict = {}
        for M in SMALL_MS:
            x_full = torch.randn(M, K + 64, device="cuda", dtype=torch.bfloat16)
            x = x_full[:, :K]  # strided rows, as a fused projection's slice would be
            flop = 2.0 * M * N * K
            if scaled_ok:
                t = time_graph(lambda i: ops.fp8_block_linear(x, ws[i % nw], ss[i % nw], backend="scaled_mm"), reps=9)
                res["scaled_mm"][f"{shape}/M={M}"] = t["us"]
                log(f"{shape:>11} M={M:<4} scaled_mm (quant incl.)        {t['us']:8.2f} us")
            base = kern.default_gemm_config(M, N, K)
            if M in SWEPT_MS:
                cands = _neighbours(base, M)
            else:
                src = winners.get(1, [base])
                cands = list(dict.fromkeys([base, *src]))
            timed = []
            for cfg in cands:
                if time.time() > deadline and timed:
                    log(f"{shape:>11} M={M:<4} budget reached: {len(cands) - len(timed)} configs skipped")
                    break
                try:
                    t = time_graph(lambda i, c=cfg: kern.fp8_block_linear_triton(x, ws[i % nw], ss[i % nw], config=c),
                                   reps=9)
                except Exception as exc:  # e.g. a tile that does not fit in shared memory
                    log(f"{shape:>11} M={M:<4} {cfg} failed: {exc!r}"[:300])
                    continue
                timed.append((t["us"], cfg))
                res["rows"].append({"shape": shape, "M": M, "config": cfg.__dict__, **t, "tflops": flop / t["us"] / 1e6,
                                    "is_default": cfg == base})
                log(f"{shape:>11} M={M:<4} {_cfg_src(cfg):<42} {t['us']:8.2f} us"
                    + ("  (current default)" if cfg == base else ""))
            if not timed:
                continue
            timed.sort(key=lambda r: r[0])
            winners[M] = [c for _, c in timed[:2]]
            best_us, best_cfg = timed[0]
            res["best"][f"{shape}/M={M}"] = {
                "config": best_cfg.__dict__, "us": best_us, "default_us": next((u for u, c in timed if c == base), None),
            }
        del ws, ss
        torch.cuda.empty_cache()
    return res


def bench_norm_small(log) -> list:
    M, W, x, w, res, G = _norm_quant_inputs()
    src = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t_copy = time_graph(lambda i: dst.copy_(src), calls=20)
    copy_gbps = 2 * src.numel() * 2 / t_copy["us"] / 1e3
    rows = [{"impl": "copy_bf16", **t_copy, "gbps": copy_gbps}]
    log(f"copy ceiling {copy_gbps:8.1f} GB/s ({t_copy['us']:.1f} us)")
    bytes_plain = M * W * 2 + M * W + M * G * 4
    bytes_res = M * W * 2 * 3 + M * W + M * G * 4
    for warps in (2, 4, 8, 16):
        for residual in (False, True):
            r_arg = res if residual else None
            t = time_graph(lambda i: kern.rms_norm_quant_fp8(x, w, 1e-6, 128, residual=r_arg, column_major_scales=True,
                                                             num_warps=warps), calls=20, reps=9)
            nbytes = bytes_res if residual else bytes_plain
            gbps = nbytes / t["us"] / 1e3
            rows.append({"impl": "fused_add_rms_norm_quant_fp8" if residual else "rms_norm_quant_fp8",
                         "num_warps": warps, **t, "gbps": gbps, "frac_of_copy": gbps / copy_gbps})
            log(f"{'add+' if residual else '    '}rms_norm_quant warps={warps:<2} {t['us']:8.1f} us "
                f"{gbps:8.1f} GB/s {gbps / copy_gbps:.3f} of copy")
    return rows


def summarize_small_m(result: dict, log) -> None:
    """Print the tables in the form the code takes them (kernels/fp8_triton.py GEMM_CONFIGS,
    ops/fp8.py FP8_BLOCK_DISPATCH) and the best warp count of rms_norm_quant_fp8."""
    best, smm = result["small_m"]["best"], result["small_m"]["scaled_mm"]
    log("")
    log("# ---- paste into qlinear/kernels/fp8_triton.py: GEMM_CONFIGS (whole op, quant incl., us) ----")
    log("GEMM_CONFIGS: dict = {")
    for N, K in SHAPES:
        log(f"    ({N}, {K}): (")
        for M in SMALL_MS:
            b = best.get(f"{N}x{K}/M={M}")
            if b is None:
                continue
            c = kern.GemmConfig(**b["config"])
            note = f"# {b['us']:.2f} us (default {b['default_us'] or float('nan'):.2f}"
            note += f", scaled_mm {smm.get(f'{N}x{K}/M={M}', float('nan')):.2f})"
            log(f"        ({M}, {_cfg_src(c)}),  {note}")
        log("    ),")
    log("}")
    log("# ---- FP8_BLOCK_DISPATCH suggestion (qlinear/ops/fp8.py): largest M where Triton beat scaled_mm ----")
    for N, K in SHAPES:
        wins = [M for M in SMALL_MS if f"{N}x{K}/M={M}" in best and f"{N}x{K}/M={M}" in smm
                and best[f"{N}x{K}/M={M}"]["us"] < smm[f"{N}x{K}/M={M}"]]
        log(f"    ({N}, {K}): Triton wins at M in {wins}")
    norm = [r for r in result["norm_quant"] if r["impl"] == "rms_norm_quant_fp8"]
    if norm:
        b = max(norm, key=lambda r: r["frac_of_copy"])
        log(f"# ---- rms_norm_quant_fp8 on 1536-wide rows: best num_warps = {b['num_warps']}  "
            f"# {b['us']:.1f} us, {b['frac_of_copy']:.3f} of copy")
        add = [r for r in result["norm_quant"] if r["impl"] == "fused_add_rms_norm_quant_fp8"]
        if add:
            a = max(add, key=lambda r: r["frac_of_copy"])
            log(f"#   fused-add best: warps {a['num_warps']} {a['us']:.1f} us, "
                f"{a['frac_of_copy']:.3f} of copy")


# ------------------------------------------------------------------------------------------
# --focus layer: small-M variants of the whole layer forward (benchmarks/gpu_fp8small.sh)
# ------------------------------------------------------------------------------------------

# name -> (PDL_MAX_M, PREFETCH_WEIGHTS, QUANT_ROW_BLOCK, FUSED_QUANT_MAX_M); "base" = the defaults
# of the last measured code (PDL at M = 1 only, quantization kernel + GEMM).
# In priority order: the variants after the fourth run only while the budget lasts.
LAYER_VARIANTS = {
    "base": (1, "off", 1, 0),
    "fused": (1, "off", 1, 16),
    "pdl16+pf": (16, "pdl", 1, 0),
    "fused+pdl16+pf": (16, "pdl", 1, 16),
    "pdl16": (16, "off", 1, 0),
    "pdl16+pf+rows": (16, "pdl", 16, 0),
    "rows": (1, "off", 16, 0),
    "pf1": (1, "pdl", 1, 0),
}
LAYER_MS = [1, 2, 4, 16]


class _BudgetReached(Exception):
    pass


def _set_knobs(pdl_max_m, prefetch, row_block, fused_max_m) -> None:
    from qlinear.kernels import _pdl

    _pdl.PDL_MAX_M = pdl_max_m
    kern.PREFETCH_WEIGHTS = prefetch
    kern.QUANT_ROW_BLOCK = row_block
    kern.FUSED_QUANT_MAX_M = fused_max_m


def bench_layer_variants(args, log) -> None:
    """Whole layer forward (bench_linear's timing: CUDA-graph replay, inputs rotated past L2, the
    weight fixed as in a decode step) for each variant of LAYER_VARIANTS at M in LAYER_MS, the
    merged 2112-row layer vs its two separate layers, M = 128 Triton vs scaled_mm, then a
    config sweep at M = 1 / 16 with what time is left."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _layers import build_layer
    from _timing import env_info as env_info2, write_results
    from bench_linear import time_layer

    t0 = time.time()
    deadline = t0 + args.budget_s
    variants = [v for v in (args.variants or LAYER_VARIANTS)]
    merged, separate = build_layer("fp8-block", 7168, [1536, 576], device="cuda", split=True)
    layers = {"2112x7168": merged, "1536x7168": separate[0], "576x7168": separate[1],
              "24576x1536": build_layer("fp8-block", 1536, [24576], device="cuda"),
              "7168x16384": build_layer("fp8-block", 16384, [7168], device="cuda")}
    rows = []

    def rec(shape, m, impl, fn, k, **extra):
        try:
            r = time_layer(fn, m, k, 2 * m * k)
        except Exception as exc:  # a variant that fails to compile or launch: record, go on
            rows.append({"case": f"M={m} {shape}", "shape": shape, "m": m, "impl": impl, "error": repr(exc)[:300]})
            log(f"{shape:>11} M={m:<4} {impl:<28} FAILED {exc!r}"[:300])
            return None
        us = r["median_us"]
        rows.append({"case": f"M={m} {shape}", "shape": shape, "m": m, "impl": impl, "us": us, **r, **extra})
        log(f"{shape:>11} M={m:<4} {impl:<28} {us:8.2f} us  (p20 {r['p20_us']:.2f} p80 {r['p80_us']:.2f}) "
            f"t={time.time() - t0:.0f}s" + (f" {extra}" if extra else ""))
        return us

    def m128() -> None:
        _set_knobs(*LAYER_VARIANTS["base"])
        from qlinear.ops.fp8 import fp8_block_linear

        m = 128
        for shape, layer in layers.items():
            w, s = layer.weight, layer.weight_scale_inv
            k = layer.input_size
            be = layer.backend(torch.empty(m, k, device="cuda", dtype=torch.bfloat16))
            rec(shape, m, "layer (dispatch)", layer, k, backend=be)
            rec(shape, m, "triton", lambda x, w=w, s=s: fp8_block_linear(x, w, s, backend="triton"), k)
            rec(shape, m, "scaled_mm", lambda x, w=w, s=s: fp8_block_linear(x, w, s, backend="scaled_mm"), k)
        sep = rec("2112x7168", m, "separate (dispatch)", lambda x: (separate[0](x), separate[1](x)), 7168)
        for be in ("triton", "scaled_mm"):
            mer = next((r["us"] for r in rows if r["shape"] == "2112x7168" and r["m"] == m and r["impl"] == be
                        and "us" in r), None)
            if sep and mer:
                log(f"  ratio merged/separate M=128 merged={be}: {mer / sep:.3f}")

    try:
        for i, name in enumerate(variants):
            if time.time() > deadline:
                log(f"budget reached ({args.budget_s:.0f} s): variants {variants[i:]} skipped")
                raise _BudgetReached
            if i == min(4, len(variants)):
                m128()
            _set_knobs(*LAYER_VARIANTS[name])
            for m in LAYER_MS:
                for shape, layer in layers.items():
                    rec(shape, m, name, layer, layer.input_size)
                sep = rec("2112x7168", m, f"separate {name}", lambda x: (separate[0](x), separate[1](x)), 7168)
                mer = next((r["us"] for r in rows if r["shape"] == "2112x7168" and r["m"] == m and r["impl"] == name
                            and "us" in r), None)
                if sep and mer:
                    log(f"  ratio merged/separate M={m} {name}: {mer / sep:.3f}")
                    rows[-1]["ratio"] = mer / sep
        if len(variants) <= 4:
            m128()
        # Config sweep with the remaining time: GEMM_CONFIGS candidates at M = 1 and 16.
        for fused in (False, True):
            for shape, layer in layers.items():
                if shape == "576x7168" or shape == "1536x7168":
                    continue  # the heuristic shapes: only if GEMM_CONFIGS should get entries for them
                w, s = layer.weight, layer.weight_scale_inv
                k = layer.input_size
                n = w.shape[0]
                for m in (1, 16):
                    base = kern.default_gemm_config(m, n, k)
                    for cfg in _layer_sweep(base):
                        if time.time() > deadline:
                            log(f"budget reached ({args.budget_s:.0f} s): sweep stopped")
                            raise _BudgetReached
                        rec(shape, m, f"cfg {'fused ' if fused else ''}{_cfg_src(cfg)}",
                            lambda x, w=w, s=s, c=cfg, f=fused: kern.fp8_block_linear_triton(
                                x, w, s, config=c, fuse_quant=f, scale_eps=1e-10), k, config=cfg.__dict__,
                            fused=fused, is_default=cfg == base)
    except _BudgetReached:
        pass
    finally:
        _set_knobs(*LAYER_VARIANTS["base"])
    meta = {**env_info2(), "timing": "bench_linear.time_layer: CUDA graph replay, median of 30; inputs rotated "
            "past L2, weight fixed (L2-resident when it fits)", "variants": LAYER_VARIANTS,
            "elapsed_s": time.time() - t0}
    write_results("fp8small_layer", rows, meta, args.out, metric="us")
    _summarize_variants(rows, log)


def _layer_sweep(base: "kern.GemmConfig") -> list:
    """A few split-K / BLOCK_N / stages neighbours of ``base`` (every one is a Triton compile)."""
    from dataclasses import replace

    split = base.split_k or 1
    cands = [base, replace(base, block_n=32), replace(base, block_n=128, num_stages=4),
             replace(base, split_k=max(1, split // 2)), replace(base, split_k=min(16, split * 2)),
             replace(base, num_stages=3), replace(base, num_warps=8 if base.num_warps == 4 else 4)]
    return list(dict.fromkeys(cands))


def _summarize_variants(rows, log) -> None:
    """Per shape and M: the fastest variant (the knobs to set) against base."""
    log("")
    log("# ---- best variant per shape and M (us; base = last measured defaults) ----")
    got = [r for r in rows if "us" in r and r["impl"] in LAYER_VARIANTS]
    for shape in dict.fromkeys(r["shape"] for r in got):
        for m in LAYER_MS:
            rs = [r for r in got if r["shape"] == shape and r["m"] == m]
            if not rs:
                continue
            best = min(rs, key=lambda r: r["us"])
            base = next((r["us"] for r in rs if r["impl"] == "base"), float("nan"))
            log(f"{shape:>11} M={m:<3} best {best['impl']:<16} {best['us']:7.2f} us  base {base:7.2f}  "
                + " ".join(f"{r['impl']}={r['us']:.2f}" for r in rs))
    ratios = [r for r in rows if "ratio" in r]
    for r in ratios:
        log(f"ratio merged/separate M={r['m']} {r['impl'][9:]}: {r['ratio']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "benchmarks" / "results")))
    parser.add_argument("--budget-s", type=float, default=75.0, help="start no config sweep after this many seconds")
    parser.add_argument("--focus", choices=["all", "small-m", "layer"], default="all",
                        help="small-m: only the small-M config sweep and the norm variants (< 100 s); "
                             "layer: the small-M layer-forward variants (gpu_fp8small.sh)")
    parser.add_argument("--variants", nargs="+", choices=list(LAYER_VARIANTS), default=None,
                        help="--focus layer: these variants only")
    args = parser.parse_args()
    t0 = time.time()
    lines: list[str] = []

    def log(msg: str) -> None:
        lines.append(msg)
        print(msg, flush=True)

    torch.manual_seed(0)
    if args.focus == "layer":
        bench_layer_variants(args, log)
        return
    result = {"env": env_info()}
    if args.focus == "small-m":
        result["norm_quant"] = bench_norm_small(log)
        result["small_m"] = bench_small_m(t0 + min(args.budget_s, 85.0), log)
        result["elapsed_s"] = time.time() - t0
        summarize_small_m(result, log)
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_fp8_small_m.json").write_text(json.dumps(result, indent=1))
        (out / "bench_fp8_small_m.txt").write_text("\n".join(lines) + "\n")
        print(f"wrote {out / 'bench_fp8_small_m.json'} in {result['elapsed_s']:.0f} s")
        return
    result["norm_quant"] = bench_norm_quant(log)
    result["gemm"], result["sweep"], result["best_configs"] = bench_gemm(t0 + args.budget_s, log)
    result["merged"] = bench_merged(log)
    result["elapsed_s"] = time.time() - t0
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_fp8.json").write_text(json.dumps(result, indent=1))
    (out / "bench_fp8.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'bench_fp8.json'} in {result['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
