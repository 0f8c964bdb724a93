"""16 x 7168 RMSNorm latency with the input L2-resident ("hot": 8 rotating buffers, as when the
previous kernel of a decode step has just written it) and from HBM ("cold": buffers rotated past
L2, the method of bench_rms_norm.py), for qlinear's dispatch, torch.compile of the fp32-accumulating
reference and F.rms_norm, in one run.

    python benchmarks/probe_latency.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graph, buffers_to_defeat_l2, env_info, write_results  # noqa: E402

from qlinear.ops import rms_norm  # noqa: E402
from qlinear.reference.norm import rms_norm_ref  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows_, h, eps = 16, 7168, 1e-6
    w = torch.randn(h, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(lambda x, w: rms_norm_ref(x, w, eps))
    impls = {
        "qlinear api": lambda x: rms_norm(x, w, eps),
        "torch.compile": lambda x: compiled(x, w),
        "F.rms_norm": lambda x: F.rms_norm(x, (h,), w, eps),
    }
    rows = []
    for mode in ("hot", "cold"):
        n = 8 if mode == "hot" else buffers_to_defeat_l2(2 * rows_ * h)
        xs = [torch.randn(rows_, h, device="cuda", dtype=torch.bfloat16) for _ in range(n)]
        for _ in range(2):  # two interleaved passes
            for name, fn in impls.items():
                t = bench_graph(lambda i: fn(xs[i]), n_buffers=n)
                rows.append(dict(case=f"latency 16x7168 input {mode}", impl=name, us=t["median_us"], p20_us=t["p20_us"]))
                print(f"LAT {mode:4s} {name:14s} {t['median_us']:.2f} us (p20 {t['p20_us']:.2f}) buffers={n}", flush=True)
    write_results("probe_latency", rows, env_info(), args.out, metric="us")


if __name__ == "__main__":
    main()
