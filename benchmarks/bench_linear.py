"""Whole-layer forward of a quantized MergedReplicatedLinear on the shapes of issue 4 / 5.

    python benchmarks/bench_linear.py --format fp8-block [--out DIR] [--quick]
    python benchmarks/bench_linear.py --format w4a16

Times ``layer(x)`` (activation quantization and every launch included, CUDA-graph replay) for
M in {1, 2, 4, 16, 64, 128, 1024, 4096} on N x K in {2112 x 7168, 24576 x 1536, 7168 x 16384},
against, in the same run: bf16 ``F.linear`` (cuBLAS), and per format the anchor named in its
issue (fp8-block: ``torch._scaled_mm`` blockwise with the same activation quantization, through
``fp8_block_linear(backend="scaled_mm")``; w4a16: torch's tinygemm ``_weight_int4pack_mm`` when
``benchmarks/bench_w4a16.py`` provides it). For N x K = 2112 x 7168 it also times the two
separate layers (1536 and 576 rows) that the merged one replaces.
Writes ``linear_<format>.json`` + ``.png`` (µs per call) to ``--out`` (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _layers import build_layer  # noqa: E402
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

MS = [1, 2, 4, 16, 64, 128, 1024, 4096]
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
SPLIT = {(2112, 7168): [1536, 576]}


def weight_bytes(fmt: str, n: int, k: int) -> int:
    return {"bf16": 2 * n * k, "fp8-block": n * k, "w4a16": n * k // 2}[fmt]


def time_layer(layer, m: int, k: int, x_bytes_per_call: int) -> dict:
    nbuf = buffers_to_defeat_l2(x_bytes_per_call, max_buffers=8)
    xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
    return bench_graph(lambda i: layer(xs[i]), n_buffers=nbuf)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", choices=["fp8-block", "w4a16", "bf16"], required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="fewer M values")
    ap.add_argument("--ms", type=int, nargs="+", default=None, help="these M values only")
    ap.add_argument("--pdl-ab", action="store_true",
                    help="for M <= 128 also time the layers with QLINEAR_PDL=off and =early (the default is late)")
    args = ap.parse_args()
    ms = args.ms or ([1, 16, 128, 4096] if args.quick else MS)
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    rows = []
    tinygemm = None
    if args.format == "w4a16":
        try:
            import bench_w4a16  # the op benchmark knows how to pack for tinygemm

            tinygemm = getattr(bench_w4a16, "make_tinygemm", None)
        except ImportError:
            tinygemm = None
    for n, k in SHAPES:
        separate = None
        if (n, k) in SPLIT:
            layer, separate = build_layer(args.format, k, SPLIT[(n, k)], device="cuda", split=True)
        else:
            layer = build_layer(args.format, k, [n], device="cuda")
        w_bf16 = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        tg = tinygemm(n, k) if tinygemm is not None else None
        for m in ms:
            floor_us = weight_bytes(args.format, n, k) / (ceiling * 1e3)
            case = f"M={m} {n}x{k}"
            base = dict(case=case, m=m, n=n, k=k, weight_floor_us=floor_us)
            res = time_layer(layer, m, k, 2 * m * k)
            path = layer.backend(torch.empty(m, k, device="cuda", dtype=torch.bfloat16))
            rows.append({**base, "impl": f"qlinear {args.format}", "backend": path, **res})
            res_bf16 = time_layer(lambda x: F.linear(x, w_bf16), m, k, 2 * m * k)
            rows.append({**base, "impl": "bf16 F.linear", **res_bf16})
            if args.format == "fp8-block":
                from qlinear.ops.fp8 import fp8_block_linear

                w, s = layer.weight, layer.weight_scale_inv
                try:
                    r = time_layer(lambda x: fp8_block_linear(x, w, s, (128, 128), backend="scaled_mm"), m, k, 2 * m * k)
                    rows.append({**base, "impl": "torch._scaled_mm blockwise (+quant)", **r})
                except Exception as exc:  # the anchor itself may refuse a shape: record it
                    rows.append({**base, "impl": "torch._scaled_mm blockwise (+quant)", "error": repr(exc)[:200]})
            if tg is not None:
                try:
                    rows.append({**base, "impl": "tinygemm _weight_int4pack_mm", **time_layer(tg, m, k, 2 * m * k)})
                except Exception as exc:
                    rows.append({**base, "impl": "tinygemm _weight_int4pack_mm", "error": repr(exc)[:200]})
            if separate is not None and m <= 4096:
                r = time_layer(lambda x: (separate[0](x), separate[1](x)), m, k, 2 * m * k)
                rows.append({**base, "impl": f"two separate layers {SPLIT[(n, k)]}", **r})
            for mode in (("off", "early") if args.pdl_ab and m <= 128 else ()):
                os.environ["QLINEAR_PDL"] = mode
                try:
                    rows.append({**base, "impl": f"qlinear {args.format} (PDL {mode})", **time_layer(layer, m, k, 2 * m * k)})
                    if separate is not None:
                        r = time_layer(lambda x: (separate[0](x), separate[1](x)), m, k, 2 * m * k)
                        rows.append({**base, "impl": f"two separate layers {SPLIT[(n, k)]} (PDL {mode})", **r})
                finally:
                    os.environ.pop("QLINEAR_PDL", None)
            flops = 2 * m * n * k
            for r in rows:
                if r["case"] == case and "median_us" in r:
                    r["tflops"] = flops / (r["median_us"] * 1e6)
            print(" | ".join(f"{r['impl']}: {r.get('median_us', float('nan')):.1f}us" for r in rows if r["case"] == case),
                  f"| {case} backend={path}", flush=True)
        del layer, separate
        torch.cuda.empty_cache()
    meta = {**env_info(), "copy_ceiling_gbps": ceiling, "format": args.format,
            "timing": "CUDA graph replay, median of 30 replays; inputs rotated past L2"}
    for r in rows:
        r["us"] = r.get("median_us")
    write_results(f"linear_{args.format}", rows, meta, args.out, metric="us")


if __name__ == "__main__":
    main()
