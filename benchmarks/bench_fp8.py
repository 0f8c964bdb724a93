"""Op-level FP8 benchmark (H200 target): block-scaled FP8 linear vs bf16, the split-K Triton kernel
config sweep, merged vs separate MLA projections, and the fused RMSNorm -> FP8 quantization vs a
copy measured in the same run.

Every time is the median over CUDA-graph replays of a graph holding several calls (launch overhead
amortized the way a captured decode step sees it); weights rotate over enough copies that each
call reads its weight from HBM, not from the 50 MB L2. µs per call; TFLOP/s = 2*M*N*K / time.

    python benchmarks/bench_fp8.py --out "$OUT"      # writes bench_fp8.json; < 4 min on an H200

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


def bench_norm_quant(log) -> list:
    M, W, S = 32768, 1536, 2112
    fused = torch.randn(M, S, device="cuda", dtype=torch.bfloat16)
    x = fused[:, :W]
    w = torch.rand(W, device="cuda", dtype=torch.bfloat16) + 0.5
    res = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
    G = cdiv(W, 128)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "benchmarks" / "results")))
    parser.add_argument("--budget-s", type=float, default=75.0, help="start no config sweep after this many seconds")
    args = parser.parse_args()
    t0 = time.time()
    lines: list[str] = []

    def log(msg: str) -> None:
        lines.append(msg)
        print(msg, flush=True)

    torch.manual_seed(0)
    result = {"env": env_info()}
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
