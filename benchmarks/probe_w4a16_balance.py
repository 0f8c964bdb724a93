"""Whether the W4A16 register kernel at M = 1 on many rows is limited by CTAs per SM: the same
config (R1 U2 W4, pipe 0: one 16-row tile per CTA, all CTAs resident at once) on row counts
giving exactly 2, 3 or 4 CTAs on every SM of the GPU, and on 7168 rows (448 CTAs on 132 SMs: 52 SMs
hold 4, 80 hold 3) and 7808 rows (488 CTAs). K = 16384, asymmetric int4, group 128,
cold weights, alternated graph replays. Prints GB/s of weight bytes per row count: if the uneven
7168 case reads well below the even ones, the work split across SMs is the limit.
    python benchmarks/probe_w4a16_balance.py --out DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graphs_interleaved, env_info, write_results  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--k", type=int, default=16384)
    ap.add_argument("--configs", default="1,2,4,0;1,2,4,2;1,2,3,0;1,2,5,0")
    args = ap.parse_args()
    cuda_ext.load()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    k = args.k
    ns = sorted({16 * 3 * sms, 16 * 4 * sms, 7168, 16 * 2 * sms, 7168 + 16 * (4 * sms - 448) // 2})
    cfgs = [tuple(int(v) for v in c.split(",")) for c in args.configs.split(";")]
    rows = []
    for n in ns:
        packs, wb, _, _ = cold_layers(n, k)
        nb = len(packs)
        x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
        fns = {f"R{c[0]} U{c[1]} W{c[2]} P{c[3]}": (lambda i, c=c: ops.cuda_gemv(x, packs[i % nb], config=c)) for c in cfgs}
        res = bench_graphs_interleaved(fns, n_buffers=nb, reps=15, target_replay_us=400.0)
        for name, r in res.items():
            us = r["median_us"]
            print(f"BALANCE N={n:6d} CTAs={n // 16:5d} ({n / 16 / sms:.2f} per SM) {name:<14} {us:8.2f} us "
                  f"{wb / us / 1e3:7.0f} GB/s", flush=True)
            rows.append(dict(case=f"N={n}", n=n, k=k, impl=name, ctas=n // 16, weight_bytes=wb, median_us=us,
                             p20_us=r["p20_us"], p80_us=r["p80_us"]))
        del packs
        torch.cuda.empty_cache()
    write_results("w4a16_balance", rows, env_info(), args.out, metric="median_us")


if __name__ == "__main__":
    main()
