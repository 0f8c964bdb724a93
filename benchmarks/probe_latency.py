"""16 x 7168 bf16 RMSNorm latency: qlinear's dispatch and CUDA launch variants, torch.compile of the
fp32-accumulating reference and F.rms_norm, graph replays of all candidates alternated, with the
input L2-resident ("hot-1": one buffer, as the issue's anchor row was measured; "hot-8": 8 rotating
buffers, as when the previous kernel of a decode step has just written it) and from HBM ("cold":
buffers rotated past L2, bench_rms_norm.py's method).

"floor" rows time the same CUDA kernel on 16 x 64 rows (a few hundred bytes): what a dependent
launch in a graph costs with and without PDL, i.e. the part of the latency no kernel body removes.

    python benchmarks/probe_latency.py [--out DIR] [--passes N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, env_info, runnable, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import rms_norm  # noqa: E402
from qlinear.ops.norm import cuda_knobs  # noqa: E402
from qlinear.reference.norm import rms_norm_ref  # noqa: E402

EPS = 1e-6
# (vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints)
VARIANTS = {
    "cuda 448t prew2 pdl": (0, 448, 1, 2, 1, 0, 0),
    "cuda 448t prew2 no-pdl": (0, 448, 1, 2, 0, 0, 0),
    "cuda 896t prew2 pdl": (0, 896, 1, 2, 1, 0, 0),
    "cuda 256t prew2 pdl": (0, 256, 1, 2, 1, 0, 0),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    rows_, h = 16, 7168
    ops = cuda_ext.load()
    w = (torch.randn(h, device="cuda") * 0.1 + 1).to(torch.bfloat16)
    w_small = w[:64].clone()
    compiled = torch.compile(lambda x: rms_norm_ref(x, w, EPS), dynamic=False)
    print("dispatch knobs for 16 x 7168 bf16:", cuda_knobs(rows_, h, 2, False), flush=True)
    rows = []
    for mode in ("hot-1", "hot-8", "cold"):
        n = {"hot-1": 1, "hot-8": 8}.get(mode) or buffers_to_defeat_l2(2 * rows_ * h * 2)
        xs = [torch.randn(rows_, h, device="cuda", dtype=torch.bfloat16) for _ in range(n)]
        outs = [torch.empty_like(x) for x in xs]
        small = [torch.randn(rows_, 64, device="cuda", dtype=torch.bfloat16) for _ in range(n)]
        small_out = [torch.empty_like(x) for x in small]
        cands = {
            "qlinear api": lambda i: rms_norm(xs[i], w, EPS),
            "qlinear api out=": lambda i: rms_norm(xs[i], w, EPS, out=outs[i]),
            "torch.compile(ref)": lambda i: compiled(xs[i]),
            "F.rms_norm": lambda i: F.rms_norm(xs[i], (h,), w, EPS),
        }
        for name, k in VARIANTS.items():
            cands[name] = lambda i, k=k: ops.rms_norm(outs[i][None], xs[i][None], w, EPS, *k)
        for pdl in (1, 0):
            k = (0, 32, 1, 2, pdl, 0, 0)
            cands[f"floor 16x64 {'pdl' if pdl else 'no-pdl'}"] = (
                lambda i, k=k: ops.rms_norm(small_out[i][None], small[i][None], w_small, EPS, *k))
        cands = runnable(cands, label=f"LAT {mode} ")
        ref = rms_norm_ref(xs[0], w, EPS)
        err = (rms_norm(xs[0], w, EPS).float() - ref.float()).abs().max().item()
        print(f"LAT {mode}: max abs err of the api vs the fp32 reference {err:.3g}", flush=True)
        for p in range(args.passes):
            res = bench_graphs_interleaved(cands, n_buffers=n)
            for name, r in res.items():
                rows.append(dict(case=f"latency 16x7168 {mode}", impl=name, pass_=p, us=r["median_us"],
                                 p20_us=r["p20_us"], p80_us=r["p80_us"], method=r["method"], buffers=n))
                print(f"LAT {mode:5s} pass {p} {name:24s} {r['median_us']:6.2f} us (p20 {r['p20_us']:.2f}, "
                      f"p80 {r['p80_us']:.2f}) {r['method']}", flush=True)
    write_results("probe_latency", rows, env_info(), args.out, metric="us")


if __name__ == "__main__":
    main()
