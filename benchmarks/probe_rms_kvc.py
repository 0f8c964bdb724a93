"""kv_c 4096 x 512 bf16 RMSNorm (rows of a [4096, 2112] buffer at column 1536, out of place into
one reused contiguous output, as bench_rms_norm.py's api row): CUDA launch knobs and Triton configs
vs torch.compile of the reference, graph replays of all candidates alternated, several passes.

    python benchmarks/probe_rms_kvc.py [--out DIR] [--passes N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, env_info, runnable, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.kernels.norm_triton import rms_norm_triton  # noqa: E402
from qlinear.ops import rms_norm  # noqa: E402
from qlinear.ops.norm import cuda_knobs  # noqa: E402
from qlinear.reference.norm import rms_norm_ref  # noqa: E402

EPS = 1e-6
# (vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints)
KNOBS = [(0, 32, 16, 0, 1, 0, 0), (0, 32, 16, 2, 1, 0, 0), (0, 32, 8, 2, 1, 0, 0), (0, 32, 32, 2, 1, 0, 0),
         (0, 64, 8, 2, 1, 0, 0), (0, 16, 32, 2, 1, 0, 0), (0, 32, 4, 2, 1, 0, 0), (0, 64, 16, 2, 1, 0, 0)]
# (rows per program, num_warps, evict, static)
TRITON = [(16, 4, 0, 1), (8, 2, 0, 1), (32, 4, 0, 1), (16, 2, 0, 1), (32, 8, 0, 1), (8, 1, 0, 1), (4, 1, 0, 1)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--rows", type=int, default=4096)
    args = ap.parse_args()
    t, h, col, width = args.rows, 512, 1536, 2112
    ops = cuda_ext.load()
    w = (torch.randn(h, device="cuda") * 0.1 + 1).to(torch.bfloat16)
    compiled = torch.compile(lambda x: rms_norm_ref(x, w, EPS), dynamic=False)
    nb = buffers_to_defeat_l2(2 * t * h * 2)
    bufs = [torch.randn(t, width, device="cuda", dtype=torch.bfloat16) for _ in range(nb)]
    xs = [b[:, col:col + h] for b in bufs]
    shared = torch.empty(t, h, device="cuda", dtype=torch.bfloat16)
    print(f"KVC rows={t} buffers={nb} dispatch knobs {cuda_knobs(t, h, 2, False)}", flush=True)
    cands = {
        "torch.compile(ref)": lambda i: compiled(xs[i]),
        "api": lambda i: rms_norm(xs[i], w, EPS, out=shared),
    }
    for k in KNOBS:
        cands[f"cuda {k}"] = lambda i, k=k: ops.rms_norm(shared[None], xs[i][None], w, EPS, *k)
    for c in TRITON:
        cands[f"triton {c}"] = lambda i, c=c: rms_norm_triton(shared[None], xs[i][None], w, EPS, c)
    want = rms_norm_ref(xs[0], w, EPS).float()

    def check(name, _):
        if not name.startswith("torch"):
            err = (shared.float() - want).abs().max().item()
            if not err < 0.05:
                raise RuntimeError(f"wrong result: max abs err {err:.3g}")

    cands = runnable(cands, check, "KVC ")
    rows = []
    for p in range(args.passes):
        res = bench_graphs_interleaved(cands, n_buffers=nb)
        base = res["torch.compile(ref)"]["median_us"]
        for name, r in sorted(res.items(), key=lambda kv: kv[1]["median_us"]):
            rows.append(dict(case=f"kv_c {t}x{h} s{width}", impl=name, pass_=p, us=r["median_us"],
                             p20_us=r["p20_us"], p80_us=r["p80_us"]))
            print(f"KVC pass {p} {name:34s} {r['median_us']:7.3f} us  x{base / r['median_us']:.3f} vs compile", flush=True)
    write_results("probe_rms_kvc", rows, env_info(), args.out, metric="us")


if __name__ == "__main__":
    main()
