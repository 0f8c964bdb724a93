"""Where the merged W4A16 layer's time goes at large M (issue 7: the fused MLA step at M = 4096).

    python benchmarks/probe_w4a16_large_m.py [--out DIR]

2112x7168 (the merged MLA projection) and its 1536 / 576 shards, GPTQ 4-bit group 128, cold packed
weights (copies rotated past L2), bf16 x [M, 7168], CUDA graphs, 3 interleaved passes (median):
dequantize alone (v1 / v2), dequantize + F.linear (the "dequant_cublas" backend, v1 / v2), the same
GEMM on a static bf16 weight (rotated copies too), and the two shard layers back to back.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _layers import build_layer  # noqa: E402
from _timing import bench_graph, buffers_to_defeat_l2, env_info, write_results  # noqa: E402

from qlinear.kernels import w4a16_triton as wt  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[4096, 1024])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--cases", choices=["all", "after"], default="all")
    args = ap.parse_args()
    k = 7168
    cp = buffers_to_defeat_l2(2112 * k // 2, max_buffers=24)
    built = [build_layer("w4a16", k, [1536, 576], device="cuda", split=True) for _ in range(cp)]
    merged = [b[0].quant_method.packed(b[0]) for b in built]
    shards = [[s.quant_method.packed(s) for s in b[1]] for b in built]
    cw = buffers_to_defeat_l2(2 * 2112 * k, max_buffers=8)
    wb = [torch.randn(2112, k, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(cw)]

    def deq_lin(p, x, v):
        return F.linear(x, wt.w4a16_dequantize(p, x.dtype, version=v))

    def split_mm(x, w, cuts):
        # one output, several GEMMs writing its column slices (cuBLAS takes the row stride as ldc)
        out = torch.empty((x.shape[0], w.shape[0]), device=x.device, dtype=x.dtype)
        for a, b in zip(cuts[:-1], cuts[1:]):
            torch.mm(x, w[a:b].t(), out=out[:, a:b])
        return out


    cases = {
        "dequantize v1": lambda i, x: wt.w4a16_dequantize(merged[i % cp], x.dtype, version=1),
        "dequantize v2": lambda i, x: wt.w4a16_dequantize(merged[i % cp], x.dtype, version=2),
        "bf16 F.linear (static weight)": lambda i, x: F.linear(x, wb[i % cw]),
        "dequant v1 + F.linear": lambda i, x: deq_lin(merged[i % cp], x, 1),
        "dequant v2 + F.linear": lambda i, x: deq_lin(merged[i % cp], x, 2),
        "shards: 2 x (dequant v1 + F.linear)": lambda i, x: [deq_lin(p, x, 1) for p in shards[i % cp]],
        "dequant v1 + mm into slices 1536|576": lambda i, x: split_mm(x, wt.w4a16_dequantize(merged[i % cp], x.dtype, version=1), (0, 1536, 2112)),
        "dequant v1 + mm into slices 1024|2112": lambda i, x: split_mm(x, wt.w4a16_dequantize(merged[i % cp], x.dtype, version=1), (0, 1024, 2112)),
        "bf16 mm into slices 1536|576 (static)": lambda i, x: split_mm(x, wb[i % cw], (0, 1536, 2112)),
        "bf16 mm into slices 2048|64 (static)": lambda i, x: split_mm(x, wb[i % cw], (0, 2048, 2112)),
        "bf16 F.linear 2048 rows (static)": lambda i, x: F.linear(x, wb[i % cw][:2048]),
        "layer forward (auto)": lambda i, x: built[i % cp][0](x),
        "shard layers forward (auto)": lambda i, x: [s(x) for s in built[i % cp][1]],
    }
    if args.cases == "after":
        # Is the GEMM slower after the dequantize because it reads a just-written weight, or
        # because anything ran before it?  And does cuBLAS prefer a K-major (transposed) weight?
        scratch = [None]
        wbt = [w.t().contiguous() for w in wb]

        def deq_then_static(i, x):
            scratch[0] = wt.w4a16_dequantize(merged[i % cp], x.dtype, version=1)
            return F.linear(x, wb[i % cw])

        cases = {
            "bf16 F.linear (static weight)": cases["bf16 F.linear (static weight)"],
            "dequant v1, then F.linear on another (static) weight": deq_then_static,
            "dequant v1 + F.linear": cases["dequant v1 + F.linear"],
            "bf16 x @ W^T with W stored [K, N] (static)": lambda i, x: torch.mm(x, wbt[i % cw]),
            "layer forward (auto)": cases["layer forward (auto)"],
            "shard layers forward (auto)": cases["shard layers forward (auto)"],
        }
    rows = []
    for m in args.ms:
        xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        n = max(cp, 2)
        res = {name: [] for name in cases}
        for _ in range(args.passes):
            for name, fn in cases.items():
                res[name].append(bench_graph(lambda i, fn=fn: fn(i, xs[i % 2]), n_buffers=n)["median_us"])
        for name, v in res.items():
            us = statistics.median(v)
            rows.append(dict(case=f"M={m} 2112x7168", impl=name, us=us, passes=v))
            print(f"W4L M={m:5d} {name:38s} {us:8.1f} us  passes {' '.join(f'{t:.1f}' for t in v)}", flush=True)
    write_results("probe_w4a16_large_m", rows, env_info(), args.out, metric="us")


if __name__ == "__main__":
    main()
