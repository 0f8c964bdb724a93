"""A few eager launches of one W4A16 wgmma GEMM config, for Nsight Compute (benchmarks/gpu_s41c.sh).

The layer is bench_linear's (GPTQ symmetric, fp16 scales, group 128) on fresh random data; the result is
checked against x @ W.T in fp32 so that a profile is never of a broken launch.
    python benchmarks/probe_wgmma_once.py --m 1024 --config 256,0,3,0,64 [--n 2112 --k 7168 --launches 4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_w4a16 import cold_layers  # noqa: E402

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
    packs, _, _, ref_w = cold_layers(args.n, args.k, max_buffers=2, with_reference=True, layer="sym-fp16")
    x = torch.randn(args.m, args.k, device="cuda", dtype=torch.bfloat16)
    want = x.float() @ ref_w.t()
    for i in range(args.launches):
        y = ops.cuda_wgmma(x, packs[i % len(packs)], None, cfg)
    torch.cuda.synchronize()
    err = ((y.float() - want).norm() / want.norm()).item()
    print(f"M={args.m} {args.n}x{args.k} config={args.config}: relative error {err:.2e}")
    if err > 1e-2:
        raise SystemExit("wrong result")


if __name__ == "__main__":
    main()
