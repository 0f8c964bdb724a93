"""A few eager launches of one W4A16 TMA ring code, for Nsight Compute (benchmarks/gpu_s36d.sh).

The layer is bench_linear's (GPTQ symmetric, fp16 scales, group 128) on fresh random data; the result is
checked against x @ W.T in fp32 so that a profile is never of a broken launch.
    python benchmarks/probe_tma_once.py --m 16 --code 262434 [--n 2112 --k 7168 --launches 4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402


def run_checked(label: str, m: int, n: int, k: int, launches: int, call) -> None:
    """``launches`` calls of ``call(x, packed)`` on a fresh symmetric layer (two packed copies, alternated) and bf16
    x [m, k]; prints the last result's relative error against the fp32 reference and exits if it is over 1e-2."""
    packs, _, _, ref_w = cold_layers(n, k, max_buffers=2, with_reference=True, layer="sym-fp16")
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    want = x.float() @ ref_w.t()
    for i in range(launches):
        y = call(x, packs[i % len(packs)])
    torch.cuda.synchronize()
    err = ((y.float() - want).norm() / want.norm()).item()
    print(f"{label}: relative error {err:.2e}")
    if err > 1e-2:
        raise SystemExit("wrong result")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--code", type=int, required=True)
    ap.add_argument("--n", type=int, default=2112)
    ap.add_argument("--k", type=int, default=7168)
    ap.add_argument("--launches", type=int, default=4)
    args = ap.parse_args()
    run_checked(f"M={args.m} code={args.code}", args.m, args.n, args.k, args.launches,
                lambda x, packed: ops.cuda_gemv(x, packed, ring=args.code))


if __name__ == "__main__":
    main()
