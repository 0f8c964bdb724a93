"""The MLA tail at large M: ``rms_norm_slices`` (q_c 1536 + kv_c 512 of a [T, 2112] projection
output, one launch) against the same two norms launched per slice and a copy of the same bytes.

    python benchmarks/probe_slices.py [--out DIR] [--rows 1024 4096]

Inputs "hot" (8 rotating buffers: the GEMM that wrote them just ran) and "cold" (rotated past L2);
replays of all candidates alternated (``bench_graphs_interleaved``); bytes = read + write of both
slices; GB/s against a copy measured in the same run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear.ops import rms_norm, rms_norm_slices  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--rows", type=int, nargs="+", default=[1024, 4096])
    args = ap.parse_args()
    ceiling = copy_ceiling_gbps()
    w_q = torch.randn(1536, device="cuda", dtype=torch.bfloat16)
    w_kv = torch.randn(512, device="cuda", dtype=torch.bfloat16)
    rows = []
    for t in args.rows:
        nbytes = t * 2048 * 2 * 2
        for mode in ("hot", "cold"):
            nb = 8 if mode == "hot" else buffers_to_defeat_l2(t * 2112 * 2)
            xs = [torch.randn(t, 2112, device="cuda", dtype=torch.bfloat16) for _ in range(nb)]
            outs = [torch.empty(t, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(nb)]
            cases = {
                "slices (api)": lambda i: rms_norm_slices(xs[i], (0, 1536, 2048), (w_q, w_kv), 1e-6),
                "slices triton": lambda i: rms_norm_slices(xs[i], (0, 1536, 2048), (w_q, w_kv), 1e-6, backend="triton"),
                "per-slice rms_norm x2": lambda i: (rms_norm(xs[i][:, :1536], w_q, 1e-6), rms_norm(xs[i][:, 1536:2048], w_kv, 1e-6)),
                "copy of the same bytes": lambda i: outs[i].copy_(xs[i][:, :2048]),
            }
            res = bench_graphs_interleaved(cases, n_buffers=nb)
            for name, r in res.items():
                gbps = nbytes / (r["median_us"] * 1e-6) / 1e9
                rows.append(dict(case=f"T={t} {mode}", impl=name, us=r["median_us"], p20_us=r["p20_us"],
                                 gbps=gbps, frac_of_copy=gbps / ceiling))
                print(f"SLICES T={t:5d} {mode:4s} {name:24s} {r['median_us']:7.2f} us  {gbps:7.0f} GB/s  "
                      f"{gbps / ceiling:5.3f} of copy", flush=True)
    write_results("probe_slices", rows, {**env_info(), "copy_ceiling_gbps": ceiling}, args.out, metric="us")


if __name__ == "__main__":
    main()
