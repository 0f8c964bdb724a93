"""The one-launch FP8 block decode kernel (backend "cuda", issue 4) against the committed auto path,
whole op ``fp8_block_linear(x, w, wsi, backend=...)`` with COLD weights (copies rotated past L2).

    python benchmarks/bench_fp8_cuda.py [--out DIR] [--ms 1 4 8 16] [--quick]

Per (M, shape): the committed auto dispatch ("auto"), "cuda" with the launcher's automatic config
("cuda:auto" = FP8_CUDA_CONFIG 0, the code it resolves to in brackets) and with each candidate code
S*10000 + R*1000 + PF*100 + W (csrc/fp8_gemv_launch.h); graph replays of all candidates alternated.
One line per measurement: ``FP8CUDA M=.. NxK impl us (floor us, GB/s)``, floor = weight bytes at
the measured copy ceiling. Then the merged 2112-row / (1536 + 576) ratio of the best "cuda" time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384), (1536, 7168), (576, 7168)]


def candidates(m: int, quick: bool) -> list[int]:
    """Launch codes to sweep at M = m: row tiles per CTA by M bucket, a few warp / split counts."""
    rs = (1,) if m <= 4 else ((1, 2) if m <= 8 else (2, 4))
    ws = ((8, 1), (16, 1), (4, 2), (8, 2), (8, 4)) if not quick else ((8, 1), (8, 2))
    out = []
    for r in rs:
        pf = 1 if r <= 2 else 0
        wmax = 16 if r == 1 else (12 if (r == 2 and m <= 8) else 8)
        for w, s in ws:
            if w <= wmax:
                out.append(s * 10000 + r * 1000 + pf * 100 + w)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not cuda_ext.is_available():
        print(f"FP8CUDA extension unavailable: {cuda_ext.failure_reason()}")
        sys.exit(1)
    C = cuda_ext.load()
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    print(f"FP8CUDA copy ceiling {ceiling:.0f} GB/s (read+write)", flush=True)
    rows, best = [], {}
    saved = ops.FP8_CUDA_CONFIG
    for n, k in SHAPES:
        copies = buffers_to_defeat_l2(n * k, max_buffers=24)
        ws = [(torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn) for _ in range(copies)]
        ss = [torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8 for _ in range(copies)]
        floor_us = n * k / (ceiling / 2 * 1e9) * 1e6
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

            fns = {"auto": make(None)}
            auto_code = C.fp8_block_gemv_resolve(x, ws[0], ss[0], ops._cuda_workspace(x.device), 0)
            fns[f"cuda:auto[{auto_code}]"] = make("cuda", 0)
            for code in candidates(m, args.quick):
                if C.fp8_block_gemv_supported(x, ws[0], ss[0], ops._cuda_workspace(x.device), code) == 0:
                    fns[f"cuda:{code}"] = make("cuda", code)
            errs = {name: ((fn(0).float() - ref).norm() / ref.norm()).item() for name, fn in fns.items()}
            res = bench_graphs_interleaved(fns, n_buffers=copies, reps=15, target_replay_us=1000.0)
            for name, t in res.items():
                us = t["median_us"]
                gbs = n * k / (us * 1e-6) / 1e9
                flag = " ERR" if errs[name] > 1e-2 else ""
                print(f"FP8CUDA M={m:<2d} {n}x{k} {name:<18s} {us:6.2f} us (floor {floor_us:.1f} us, {gbs:.0f} GB/s)"
                      f"{flag}", flush=True)
                rows.append(dict(case=f"M={m} {n}x{k}", impl=name, us=us, p20_us=t["p20_us"], p80_us=t["p80_us"],
                                 floor_us=floor_us, gbs=gbs, rel_err_vs_triton=errs[name]))
                if name.startswith("cuda") and errs[name] <= 1e-2:
                    key = (m, n, k)
                    if key not in best or us < best[key][0]:
                        best[key] = (us, name)
            b = best.get((m, n, k))
            if b:
                print(f"FP8CUDA M={m:<2d} {n}x{k} BEST {b[1]} {b[0]:.2f} us (auto {res['auto']['median_us']:.2f})",
                      flush=True)
        del ws, ss
        torch.cuda.empty_cache()
    for m in args.ms:
        try:
            merged = best[(m, 2112, 7168)][0]
            sep = best[(m, 1536, 7168)][0] + best[(m, 576, 7168)][0]
        except KeyError:
            continue
        print(f"FP8CUDA M={m:<2d} merged/separate (best cuda) {merged:.2f} / {sep:.2f} = {merged / sep:.3f}", flush=True)
        rows.append(dict(case=f"M={m} merged/separate", impl="cuda best", ratio=merged / sep))
    write_results("fp8_cuda", rows, {**env_info(), "weights": "cold (copies rotated past L2)",
                                      "copy_ceiling_gbps": ceiling}, args.out, metric="us")


if __name__ == "__main__":
    main()
