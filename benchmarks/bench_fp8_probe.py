"""Where the FP8 block layer's time goes at small M, and a GEMM config sweep there (H200 probe).

For 2112x7168 and 7168x16384 at M in PROBE_MS: the activation quantization alone, the GEMM alone
(pre-quantized operands, the default config) and the whole layer, with PDL on (``PDL_MAX_M`` 16)
and off; then, at M = 4 and 16, a sweep of GEMM configs timed as the whole layer (quantization
included) with PDL off and on. CUDA-graph replay, activations rotated past L2, weight fixed.

    python benchmarks/bench_fp8_probe.py --out DIR [--budget-s 90]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _layers import build_layer  # noqa: E402
from _timing import bench_graph, buffers_to_defeat_l2, env_info, write_results  # noqa: E402

from qlinear.kernels import _pdl  # noqa: E402
from qlinear.kernels import fp8_triton as kern  # noqa: E402

PROBE_MS = (1, 2, 4, 8, 16)
SWEEP_MS = (4, 16)
SHAPES = ((2112, 7168), (7168, 16384))


def _sweep_configs(n: int, wide: bool) -> list:
    if not wide:
        splits = (4, 6, 8, 12) if n == 2112 else (2, 3, 4, 6)
        return [kern.GemmConfig(16, bn, sk, 4, st) for bn, sk, st in itertools.product((64, 128), splits, (4, 6))]
    # second round: narrower tiles, fewer / more warps, shallower pipelines
    splits = (4, 8, 12) if n == 2112 else (3, 4, 6)
    return [kern.GemmConfig(16, bn, sk, w, st)
            for bn, sk, w, st in itertools.product((32, 64), splits, (2, 4), (3, 4))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=90.0)
    ap.add_argument("--round2", action="store_true",
                    help="the merged 1536 + 576 layer for 2112x7168, probe at M = 8 / 16, sweep at M = 16 / 1 over a wider config grid, PDL on only")
    args = ap.parse_args()
    t0 = time.time()
    rows = []

    def rec(shape, m, impl, fn, nbuf, **extra):
        r = bench_graph(fn, n_buffers=nbuf)
        rows.append({"shape": shape, "m": m, "impl": impl, "us": r["median_us"], **r, **extra})
        print(f"{shape:>11} M={m:<3} {impl:<34} {r['median_us']:8.2f} us", flush=True)
        return r["median_us"]

    def make(n, k):
        if args.round2 and n == 2112:
            return build_layer("fp8-block", k, [1536, 576], device="cuda")
        return build_layer("fp8-block", k, [n], device="cuda")

    probe_ms = (8, 16) if args.round2 else PROBE_MS
    sweep_ms = (16, 1) if args.round2 else SWEEP_MS
    pdls = (16,) if args.round2 else (0, 16)
    default_bound = _pdl.PDL_MAX_M

    def cases(ms):
        """(shape, n, layer, m, n_buffers, activations) for every shape and every M in ``ms``."""
        for n, k in SHAPES:
            layer = make(n, k)
            for m in ms:
                nbuf = buffers_to_defeat_l2(2 * m * k, max_buffers=8)
                xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(nbuf)]
                yield f"{n}x{k}", n, layer, m, nbuf, xs

    for shape, n, layer, m, nbuf, xs in cases(probe_ms):
        w, ws = layer.weight, layer.weight_scale_inv
        qs = [kern.per_token_group_quant_fp8(x, 128, column_major_scales=True) for x in xs]
        for pdl in (0, 16):
            _pdl.PDL_MAX_M = pdl
            tag = "pdl" if pdl else "nopdl"
            rec(shape, m, f"quant {tag}", lambda i: kern.per_token_group_quant_fp8(xs[i], 128, column_major_scales=True), nbuf)
            rec(shape, m, f"gemm default {tag}", lambda i: kern.fp8_block_gemm(qs[i][0], qs[i][1], w, ws), nbuf)
            rec(shape, m, f"layer {tag}", lambda i: layer(xs[i]), nbuf)
    for shape, n, layer, m, nbuf, xs in cases(sweep_ms):
        w, ws = layer.weight, layer.weight_scale_inv
        for cfg in _sweep_configs(n, args.round2):
            if time.time() - t0 > args.budget_s:
                print(f"budget reached: sweep stopped at {shape} M={m}", flush=True)
                break
            name = f"cfg bn{cfg.block_n} sk{cfg.split_k} w{cfg.num_warps} st{cfg.num_stages}"
            for pdl in pdls:
                _pdl.PDL_MAX_M = pdl
                rec(shape, m, f"{name} {'pdl' if pdl else 'nopdl'}",
                    lambda i, cfg=cfg: kern.fp8_block_linear_triton(xs[i], w, ws, config=cfg), nbuf,
                    config=cfg.__dict__, pdl=bool(pdl))
    _pdl.PDL_MAX_M = default_bound
    print("---- best per shape / M / pdl")
    for (shape, m) in sorted({(r["shape"], r["m"]) for r in rows}):
        for tag in ("nopdl", "pdl"):
            cand = [r for r in rows if r["shape"] == shape and r["m"] == m and r["impl"].endswith(" " + tag)
                    and not r["impl"].startswith(("quant", "gemm"))]
            if cand:
                b = min(cand, key=lambda r: r["us"])
                print(f"BEST {shape:>11} M={m:<3} {tag:<5} {b['impl']:<34} {b['us']:8.2f} us")
    write_results("fp8_probe", rows, {**env_info(), "note": "FP8 small-M probe"}, args.out)
    print(f"wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
