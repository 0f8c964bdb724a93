"""The CUDA W4A16 GEMMs at M = 17 .. 1024 on the issue shapes: backend "cuda_gemm" (csrc/w4a16_gemm.cuh,
every compiled (warps, tokens, stages)) and / or "cuda_wgmma" (csrc/w4a16_wgmma.cuh, every compiled
(tokens, stages)), each with the K splits asked for, against the committed auto dispatch and bf16
``F.linear`` (issue 5: M = 128 no slower than bf16, M >= 1024 <= 1.15x); cold weights (copies rotated
past L2), alternated graph replays. One line per case: ``GEMM M=128 NxK name us``, then
``GEMM BEST ...`` per case.

    python benchmarks/probe_w4a16_gemm.py [--out DIR] [--ms 32 64 128 ...] [--splits 0 ...]
        [--family gemm|wgmma|both]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, env_info, rel_err_check, runnable, write_results  # noqa: E402
from bench_w4a16 import LAYER_KINDS, cold_layers  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = ((2112, 7168), (24576, 1536), (7168, 16384))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--layer", choices=sorted(LAYER_KINDS), default="asym-bf16", help="bench_w4a16.LAYER_KINDS")
    ap.add_argument("--ms", type=int, nargs="+", default=[17, 32, 64, 128, 256, 1024])
    ap.add_argument("--splits", type=int, nargs="+", default=[0], help="K splits to try per config (0 = auto)")
    ap.add_argument("--shapes", default=None, help="comma-separated NxK (default: the three issue shapes)")
    ap.add_argument("--family", choices=("gemm", "wgmma", "both"), default="gemm")
    ap.add_argument("--tokens", type=int, nargs="*", default=None, help="wgmma token tiles to time (default: all)")
    ap.add_argument("--wg-configs", nargs="*", default=[],
                    help="extra wgmma configs 'tokens,splits,stages[,reduce[,rows[,producer]]]' timed at every M (reduce: "
                         "1 = the last CTA of a tile sums the K split, 2 = spread over the tile's CTAs)")
    ap.add_argument("--pdl-ab", action="store_true",
                    help="also time the wgmma GEMM's automatic config with PDL off and on, and each --wg-configs one with PDL off")
    ap.add_argument("--dequant", action="store_true",
                    help="also time the dequantize + cuBLAS backend (w4a16_linear backend='dequant_cublas')")
    ap.add_argument("--rotate-x", action="store_true",
                    help="rotate x copies past L2 as bench_linear does (default: one x, L2-resident)")
    args = ap.parse_args()
    C = cuda_ext.load()
    codes = [(c // 1000, (c // 10 % 100) * 8, c % 10) for c in C.w4a16_gemm_configs()]
    # P * 10000 + H * 1000 + (tokens / 8) * 10 + stages, H = 0 / 1 / 2: 128 / 64 / 192 weight rows per CTA,
    # P = 1: a producer warpgroup
    wg_codes = [(c % 1000 // 10 * 8, c % 10, (128, 64, 192)[c % 10000 // 1000], c // 10000)
                for c in C.w4a16_wgmma_configs()]
    use_gemm, use_wg = args.family in ("gemm", "both"), args.family in ("wgmma", "both")
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows, best_lines = [], []
    for n, k in shapes:
        packs, wb, w16, ref_w = cold_layers(n, k, with_reference=True, layer=args.layer)
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms:
            case = f"M={m} {n}x{k}"
            nx = buffers_to_defeat_l2(2 * m * k, max_buffers=8) if args.rotate_x else 1
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(nx)]
            x = xs[0]
            want = x.float() @ ref_w.t()
            fns = {"bf16 F.linear": lambda i: F.linear(xs[i % nx], w16[i % nb16]),
                   "auto": lambda i: ops.w4a16_linear(xs[i % nx], packs[i % nbuf]),
                   }
            if args.dequant:
                fns["dequant_cublas"] = lambda i: ops.w4a16_linear(xs[i % nx], packs[i % nbuf],
                                                                   backend="dequant_cublas")
            if use_gemm:
                fns["cuda_gemm auto"] = lambda i: ops.cuda_gemm(xs[i % nx], packs[i % nbuf])
            if use_wg:
                fns["cuda_wgmma auto"] = lambda i: ops.cuda_wgmma(xs[i % nx], packs[i % nbuf])
                if args.pdl_ab:
                    for on in (False, True):
                        fns[f"cuda_wgmma auto pdl={int(on)}"] = (
                            lambda i, on=on: ops.cuda_wgmma(xs[i % nx], packs[i % nbuf], None, None, on))
                for tokens, stages, wrows, prod in wg_codes:
                    if args.tokens and tokens not in args.tokens:
                        continue
                    for sp in args.splits:
                        fns[f"wg R{wrows}{'P' if prod else ''} T{tokens} S{sp} ST{stages}"] = (
                            lambda i, c=(tokens, sp, stages, 0, wrows, prod): ops.cuda_wgmma(
                                xs[i % nx], packs[i % nbuf], None, c))
            for spec in args.wg_configs:
                cfg = tuple(int(v) for v in spec.split(","))
                fns[f"wg {spec}"] = lambda i, c=cfg: ops.cuda_wgmma(xs[i % nx], packs[i % nbuf], None, c)
                if args.pdl_ab:
                    fns[f"wg {spec} pdl=0"] = lambda i, c=cfg: ops.cuda_wgmma(xs[i % nx], packs[i % nbuf], None, c, False)
            for warps, tokens, stages in codes if use_gemm else ():
                if tokens > 2 * max(m, 8) or (tokens < 64 and m > 128):
                    continue  # half-empty token tiles, or many token blocks re-reading the weights
                for sp in args.splits:
                    fns[f"gemm W{warps} T{tokens} S{sp} ST{stages}"] = (
                        lambda i, c=(warps, tokens, sp, stages): ops.cuda_gemm(xs[i % nx], packs[i % nbuf], None, c))
            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"GEMM {case} ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16, nx), reps=9, target_replay_us=800.0)
            for name, r in res.items():
                print(f"GEMM {case:<18} {name:<28} {r['median_us']:9.2f} us", flush=True)
                rows.append(dict(case=case, impl=name, m=m, n=n, k=k, us=r["median_us"], p20_us=r["p20_us"],
                                 p80_us=r["p80_us"], tflops=2 * m * n * k / r["median_us"] / 1e6))
            gem = {nm: r["median_us"] for nm, r in res.items() if nm.startswith(("gemm", "wg ", "cuda_"))}
            if gem:
                b = min(gem, key=gem.get)
                best_lines.append(f"GEMM BEST {case}: {b} {gem[b]:.2f} us | auto {res['auto']['median_us']:.2f}"
                                  f" | bf16 {res['bf16 F.linear']['median_us']:.2f}")
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    for ln in best_lines:
        print(ln, flush=True)
    write_results("w4a16_gemm_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2)", "layer": args.layer}, args.out, metric="us")


if __name__ == "__main__":
    main()
