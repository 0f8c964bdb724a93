"""W4A16 at M = 17 .. 32: the "cuda" backend (the decode kernels on blocks of at most 16 rows, one launch
each into one output, each block with the automatic kernel of its M) against the mma.sync GEMM ("cuda_gemm"),
Triton and bf16 ``F.linear``; all candidates of a case in one alternated-replay measurement, weights cold
(rotated copies). "auto" = the committed dispatch.
    python benchmarks/probe_w4a16_chunks.py --out DIR [--shapes many few short] [--ms 17 24 32]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graphs_interleaved, env_info, record_gbps_rows, rel_err_check, runnable, write_results  # noqa: E402,E501
from bench_w4a16 import LAYER_KINDS, cold_layers  # noqa: E402
from bench_w4tma import SHAPES  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--layer", choices=sorted(LAYER_KINDS), default="sym-fp16")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--ms", type=int, nargs="+", default=[17, 24, 32])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    args = ap.parse_args()
    rows: list[dict] = []
    for cls in args.shapes:
        n, k = SHAPES[cls]
        packs, wb, w16, ref_w = cold_layers(n, k, with_reference=True, layer=args.layer)
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms:
            case = f"M={m} {n}x{k}"
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            want = xs[0].float() @ ref_w.t()
            auto = ops.w4a16_backend(xs[0], packs[0])
            fns = {"bf16 F.linear": lambda i: F.linear(xs[i % 4], w16[i % nb16]),
                   f"auto ({auto})": lambda i: ops.w4a16_linear(xs[i % 4], packs[i % nbuf])}
            for be in ("cuda", "cuda_gemm", "triton"):
                if be == "triton" or ops._CUDA_SUPPORT[be](xs[0], packs[0]):
                    fns[be] = lambda i, be=be: ops.w4a16_linear(xs[i % 4], packs[i % nbuf], backend=be)
            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"{case:>18}  ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16), reps=args.reps, target_replay_us=400.0)
            record_gbps_rows(res, rows, case, wb, width=16, m=m, n=n, k=k, weight_bytes=wb)
            us = {nm: r["median_us"] for nm, r in res.items()}
            print(f"CHUNKS {case:>18}: " + " | ".join(f"{nm} {u:7.2f}" for nm, u in us.items()), flush=True)
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    write_results("w4chunks", rows, {**env_info(), "layer": args.layer}, args.out, metric="median_us")


if __name__ == "__main__":
    main()
