"""W4A16 at M >= 64 (issue 5): dequantize + cuBLAS with the weight dequantized in chunks that fit in L2
(``w4a16_dequant_gemm(chunk_bytes=...)``: each chunk's bf16 rows are written to one reused buffer and
multiplied straight into their output columns, so cuBLAS reads them from L2) against the unchunked
dequantize + cuBLAS, the auto dispatch and bf16 ``F.linear``; cold weights (copies rotated past L2),
alternated graph replays. One line per case: ``L2CHUNK M=128 NxK name us``.

    python benchmarks/probe_w4a16_l2chunk.py [--out DIR] [--ms 64 128 ...] [--mb 8 16 24 32]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, env_info, rel_err_check, runnable, write_results  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import w4a16_triton as wt  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = ((2112, 7168), (24576, 1536), (7168, 16384))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[64, 128, 256, 1024, 4096])
    ap.add_argument("--mb", type=int, nargs="+", default=[8, 16, 24, 32], help="chunk budgets in MiB")
    ap.add_argument("--shapes", default=None, help="comma-separated NxK (default: the three issue shapes)")
    args = ap.parse_args()
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    for n, k in shapes:
        packs, wb, w16, ref_w = cold_layers(n, k, with_reference=True)
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms:
            case = f"M={m} {n}x{k}"
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            want = x.float() @ ref_w.t()
            fns = {
                "bf16 F.linear": lambda i: F.linear(x, w16[i % nb16]),
                "auto": lambda i: ops.w4a16_linear(x, packs[i % nbuf]),
                "dequant_cublas whole": lambda i: wt.w4a16_dequant_gemm(x, packs[i % nbuf], chunk_bytes=0),
            }
            for mb in args.mb:
                budget = mb << 20
                if wt.dequant_chunk_rows(n, k, 2, budget) < n:
                    fns[f"chunked {mb} MiB ({wt.dequant_chunk_rows(n, k, 2, budget)} rows)"] = (
                        lambda i, b=budget: wt.w4a16_dequant_gemm(x, packs[i % nbuf], chunk_bytes=b))
            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"L2CHUNK {case} ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16), reps=9, target_replay_us=1000.0)
            for name, r in res.items():
                print(f"L2CHUNK {case:<18} {name:<32} {r['median_us']:9.2f} us", flush=True)
                rows.append(dict(case=case, impl=name, m=m, n=n, k=k, us=r["median_us"], p20_us=r["p20_us"],
                                 p80_us=r["p80_us"]))
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    write_results("w4a16_l2chunk", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
