"""A few eager launches of one W4A16 wgmma GEMM config, for Nsight Compute (benchmarks/gpu_s41c.sh).

The same layer and check as ``probe_tma_once.py`` (its ``run_checked``): a profile is never of a broken launch.
    python benchmarks/probe_wgmma_once.py --m 1024 --config 256,0,3,0,64 [--n 2112 --k 7168 --launches 4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_tma_once import run_checked  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--config", required=True, help="tokens,splits,stages[,reduce[,rows[,mode]]]")
    ap.add_argument("--n", type=int, default=2112)
    ap.add_argument("--k", type=int, default=7168)
    ap.add_argument("--launches", type=int, default=4)
    args = ap.parse_args()
    cfg = tuple(int(v) for v in args.config.split(","))
    run_checked(f"M={args.m} {args.n}x{args.k} config={args.config}", args.m, args.n, args.k, args.launches,
                lambda x, packed: ops.cuda_wgmma(x, packed, None, cfg))


if __name__ == "__main__":
    main()
