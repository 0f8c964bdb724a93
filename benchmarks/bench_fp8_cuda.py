"""The one-launch FP8 block decode kernel (backend "cuda", issue 4) against the committed auto path,
whole op ``fp8_block_linear(x, w, wsi, backend=...)`` with COLD weights (copies rotated past L2).

    python benchmarks/bench_fp8_cuda.py [--out DIR] [--ms 1 4 8 12 16] [--shapes 2112x7168 ...] [--quick]

Per (M, shape): the committed auto dispatch ("auto"), the Triton path forced ("triton"), "cuda"
with the committed FP8_CUDA_CONFIG entry ("cuda:table[code]") and with each candidate code
Q*1000000 + S*10000 + R*1000 + PF*100 + W (csrc/fp8_gemv_launch.h; Q = 1: x quantized by
per_token_group_quant_fp8 first, the GEMM launched with PDL reads the codes; PF = 2, 3: deeper weight
prefetch); graph replays of all candidates alternated. One line per measurement:
``FP8CUDA M=.. NxK impl us (floor us, GB/s)``, floor = weight bytes at the measured copy ceiling
(the copy kernel's read+write rate; a read-only stream is bounded by about the same rate). Then
``BEST`` per case (best "cuda" code, best in-kernel and best pre-quantized, vs auto and triton),
the merged 2112-row / (1536 + 576) ratio of the best times, and ``SET`` lines: per shape and M the
code to put in FP8_CUDA_CONFIG when it beats both auto and triton, else "triton".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, cold_fp8_block_weights, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384), (1536, 7168), (576, 7168)]


def candidates(m: int, n: int, k: int, quick: bool) -> list[int]:
    """Launch codes to sweep at M = m (configs that lost by > 20 % in fp8cuda_r1 are gone): one /
    two / four row tiles per CTA by M bucket, PF = 1 vs deeper prefetch (PF 2, 3), K split over
    CTAs where the shape has few tiles; pre-quantized x (Q = 1) from M = 4."""
    tiles = -(-n // 16)
    inkernel = [11116, 11216, 11312, 21108, 21208]
    if tiles < 264:  # few tiles: split K over CTAs
        inkernel += [41108, 41208, 81104]
    if m > 4:
        inkernel += [12108, 12208]
    if m > 8:
        inkernel += [14008, 24004, 42108]
    preq = []
    if m >= 4:
        preq = [1011116, 1011216, 1011312, 1021108, 1021208]
        if tiles < 264:
            preq += [1041108, 1041208]
    if quick:
        inkernel, preq = inkernel[:3], preq[:2]
    return inkernel + preq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 4, 8, 12, 16])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shapes", nargs="+", default=None, help="NxK (default: all five)")
    args = ap.parse_args()
    if not cuda_ext.is_available():
        print(f"FP8CUDA extension unavailable: {cuda_ext.failure_reason()}")
        sys.exit(1)
    C = cuda_ext.load()
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    print(f"FP8CUDA copy ceiling {ceiling:.0f} GB/s (read+write)", flush=True)
    rows, best, base = [], {}, {}
    saved = ops.FP8_CUDA_CONFIG
    shapes = SHAPES if args.shapes is None else [tuple(int(v) for v in s.split("x")) for s in args.shapes]
    for n, k in shapes:
        ws, ss = cold_fp8_block_weights(n, k)
        copies = len(ws)
        floor_us = n * k / (ceiling * 1e9) * 1e6
        for m in args.ms:
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            ref = ops.fp8_block_linear(x, ws[0], ss[0], backend="triton").float()

            def make(backend, code=None):
                def fn(i):
                    if code is not None:
                        ops.FP8_CUDA_CONFIG = code
                    try:
                        return ops.fp8_block_linear(x, ws[i % copies], ss[i % copies], backend=backend)
                    finally:
                        ops.FP8_CUDA_CONFIG = saved
                return fn

            wsp = ops._cuda_workspace(x.device)
            q, s = ops.per_token_group_quant_fp8(x, 128)
            fns = {"auto": make(None), "triton": make("triton")}
            table = ops._cuda_config(m, n, k)
            fns[f"cuda:table[{C.fp8_block_gemv_resolve(x, ws[0], ss[0], wsp, table)}]"] = make("cuda")
            for code in candidates(m, n, k, args.quick):
                xa, extra = (q, (s,)) if code >= 1000000 else (x, ())
                if C.fp8_block_gemv_supported(xa, ws[0], ss[0], wsp, code, *extra) == 0:
                    fns[f"cuda:{code}"] = make("cuda", code)
            errs = {name: ((fn(0).float() - ref).norm() / ref.norm()).item() for name, fn in fns.items()}
            res = bench_graphs_interleaved(fns, n_buffers=copies, reps=15, target_replay_us=1000.0)
            for name, t in res.items():
                us = t["median_us"]
                gbs = n * k / (us * 1e-6) / 1e9
                flag = " ERR" if errs[name] > 1e-2 else ""
                print(f"FP8CUDA M={m:<2d} {n}x{k} {name:<20s} {us:6.2f} us (floor {floor_us:.1f} us, {gbs:.0f} GB/s)"
                      f"{flag}", flush=True)
                rows.append(dict(case=f"M={m} {n}x{k}", impl=name, us=us, p20_us=t["p20_us"], p80_us=t["p80_us"],
                                 floor_us=floor_us, gbs=gbs, rel_err_vs_triton=errs[name]))
                if name.startswith("cuda:") and errs[name] <= 1e-2 and not name.startswith("cuda:table"):
                    kind = "preq" if name.startswith("cuda:1") else "inkernel"
                    for key in ((m, n, k, "any"), (m, n, k, kind)):
                        if key not in best or us < best[key][0]:
                            best[key] = (us, name[5:])
            base[(m, n, k)] = (res["auto"]["median_us"], res["triton"]["median_us"])
            b = best.get((m, n, k, "any"))
            if b:
                bi = best.get((m, n, k, "inkernel"), (float("nan"), "-"))
                bp = best.get((m, n, k, "preq"), (float("nan"), "-"))
                print(f"FP8CUDA M={m:<2d} {n}x{k} BEST {b[1]} {b[0]:.2f} us (in-kernel {bi[1]} {bi[0]:.2f}, "
                      f"pre-quantized {bp[1]} {bp[0]:.2f}; auto {base[(m, n, k)][0]:.2f}, triton "
                      f"{base[(m, n, k)][1]:.2f})", flush=True)
        del ws, ss
        torch.cuda.empty_cache()
    for m in args.ms:
        try:
            merged = min(best[(m, 2112, 7168, "any")][0], *base[(m, 2112, 7168)])
            sep = min(best[(m, 1536, 7168, "any")][0], *base[(m, 1536, 7168)]) + \
                min(best[(m, 576, 7168, "any")][0], *base[(m, 576, 7168)])
        except KeyError:
            continue
        print(f"FP8CUDA M={m:<2d} merged/separate (best of cuda/auto/triton) {merged:.2f} / {sep:.2f} = "
              f"{merged / sep:.3f}", flush=True)
        rows.append(dict(case=f"M={m} merged/separate", impl="best", ratio=merged / sep))
    # what to set: per shape the cuda code per M where it beats auto and triton by >= 2 %
    for n, k in SHAPES:
        picks = []
        for m in args.ms:
            b = best.get((m, n, k, "any"))
            if b is None or (m, n, k) not in base:
                continue
            other = min(base[(m, n, k)])
            picks.append(f"M={m}: {b[1]} {b[0]:.2f} us" if b[0] < 0.98 * other else f"M={m}: triton {other:.2f} us")
        print(f"FP8CUDA SET {n}x{k}  " + "  |  ".join(picks), flush=True)
    write_results("fp8_cuda", rows, {**env_info(), "weights": "cold (copies rotated past L2)",
                                      "copy_ceiling_gbps": ceiling}, args.out, metric="us")


if __name__ == "__main__":
    main()
