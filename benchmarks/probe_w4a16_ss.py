"""RECORD ONLY: the producer / consumer kernel was removed again (1.3-2x slower than the register-operand
kernel, benchmarks/results/session21/README.md runs 5-6); to rerun, check out 960ccf7. EXPERIMENT (session 21): the wgmma W4A16 GEMM with a producer warpgroup that dequantizes into shared
memory and two consumer warpgroups on shared-memory-operand wgmmas (w4_wgmma_ss_kernel, selected by
QLINEAR_WG_SS=1 / 2 at launch for 64- and 128-token tiles: 4 / 8 producer warps) against the register-operand kernel (RS) of the
same config, the committed dispatch and bf16 F.linear; every candidate checked against the fp32
reference first. Cold weights (copies rotated past L2), alternated graph replays. One line per case:
``WGSS M=128 NxK name us``.

    python benchmarks/probe_w4a16_ss.py [--out DIR] [--ms 128 ...] [--shapes NxK,...]
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

from _timing import bench_graphs_interleaved, env_info, rel_err_check, runnable, write_results  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = ((2112, 7168), (24576, 1536), (7168, 16384))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[64, 128, 256, 1024])
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--layer", default="sym-fp16")
    args = ap.parse_args()
    cuda_ext.load()
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in sh.split("x")) for sh in args.shapes.split(",")]
    rows = []
    for n, k in shapes:
        packs, _, w16, ref_w = cold_layers(n, k, with_reference=True, layer=args.layer)
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            want = x.float() @ ref_w.t()
            case = f"M={m} {n}x{k}"

            def wg(ss, cfg=None):
                def fn(i):
                    os.environ["QLINEAR_WG_SS"] = str(ss)
                    try:
                        return ops.cuda_wgmma(x, packs[i % nbuf], None, cfg)
                    finally:
                        os.environ["QLINEAR_WG_SS"] = "0"
                return fn

            fns = {"bf16 F.linear": lambda i: F.linear(x, w16[i % nb16]),
                   "auto": lambda i: ops.w4a16_linear(x, packs[i % nbuf])}
            tokens = [64, 128] if m <= 64 else [128]
            for tn in tokens:
                for ss in (0, 1, 2):
                    fns[f"{('RS', 'SS4', 'SS8')[ss]} T{tn}"] = wg(ss, (tn, 0, 4))
            if m > 128:
                fns["RS T256"] = wg(0, (256, 0, 3))
            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"WGSS {case} ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16), reps=9, target_replay_us=800.0)
            for name, r in res.items():
                print(f"WGSS {case:<18} {name:<16} {r['median_us']:9.2f} us", flush=True)
                rows.append(dict(case=case, impl=name, m=m, n=n, k=k, us=r["median_us"]))
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    write_results("w4a16_ss_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2)", "layer": args.layer},
                  args.out, metric="us")


if __name__ == "__main__":
    main()
