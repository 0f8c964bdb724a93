"""RECORD ONLY: the QLINEAR_WG_DIAG kernel variants it times were removed again; to rerun, check out
6646b9e (benchmarks/results/session21/README.md, runs 2-4). DIAGNOSTIC: what binds the wgmma W4A16 GEMM's main loop.
QLINEAR_WG_DIAG bits: the ring's refills skip x (1) and / or the weights (2), so the stages keep
their first data; the raw words replace the dequantized A fragments (4); no wgmma is issued (8).
Results are wrong and not checked. Times each against the normal
kernel (0) and bf16 F.linear, cold weights, alternated graph replays, on the issue shapes at the
given M (auto config). One line per case: ``WGDIAG M=128 NxK name us``.

    python benchmarks/probe_w4a16_wgdiag.py [--out DIR] [--ms 128 ...]
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

from _timing import bench_graphs_interleaved, env_info, write_results  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = ((2112, 7168), (24576, 1536), (7168, 16384))
# QLINEAR_WG_DIAG bits: 1 no x refill, 2 no weight refill, 4 no dequantization (raw words as A), 8 no wgmma
DIAGS = ((0, "normal"), (3, "no refill"), (4, "no dequant"), (8, "no wgmma"), (7, "no refill/dequant"),
         (11, "no refill/wgmma"), (12, "no dequant/wgmma"), (15, "skeleton"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[128])
    ap.add_argument("--configs", nargs="*", default=[], help="wgmma configs 'tokens,splits,stages' besides auto")
    ap.add_argument("--shapes", default=None, help="comma-separated NxK (default: the three issue shapes)")
    ap.add_argument("--diags", default=None, help="comma-separated QLINEAR_WG_DIAG values (default: all of DIAGS)")
    args = ap.parse_args()
    cuda_ext.load()
    rows = []
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in sh.split("x")) for sh in args.shapes.split(",")]
    diags = DIAGS if not args.diags else [d for d in DIAGS if str(d[0]) in args.diags.split(",")]
    for n, k in shapes:
        packs, _, w16, _ = cold_layers(n, k, layer="sym-fp16")
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            case = f"M={m} {n}x{k}"

            def wg(diag, cfg=None):
                def fn(i):
                    os.environ["QLINEAR_WG_DIAG"] = str(diag)
                    try:
                        return ops.cuda_wgmma(x, packs[i % nbuf], None, cfg)
                    finally:
                        os.environ["QLINEAR_WG_DIAG"] = "0"
                return fn

            fns = {"bf16 F.linear": lambda i: F.linear(x, w16[i % nb16])}
            for cfg in [None] + [tuple(int(v) for v in c.split(",")) for c in args.configs]:
                tag = "auto" if cfg is None else "T{} S{} ST{}".format(*cfg)
                for diag, what in diags:
                    fns[f"{tag} {what}"] = wg(diag, cfg)
            res = bench_graphs_interleaved(fns, n_buffers=max(nbuf, nb16), reps=9, target_replay_us=800.0)
            for name, r in res.items():
                print(f"WGDIAG {case:<18} {name:<26} {r['median_us']:9.2f} us", flush=True)
                rows.append(dict(case=case, impl=name, m=m, n=n, k=k, us=r["median_us"]))
        del packs, w16
        torch.cuda.empty_cache()
    write_results("w4a16_wgdiag_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
