"""Kernels of the W4A16 CUDA decode dispatch for Nsight Compute (benchmarks/gpu_w4ncu.sh): each case runs
twice (warm-up, then the profiled launch) with the automatic kernel choice (_CUDA_RING_AUTO /
_CUDA_REG_AUTO), in this order: 7168x16384 M = 1, 16; 24576x1536 M = 1, 16; 2112x7168 M = 1, 16
(asymmetric group-128 weights, as in bench_w4reg / bench_w4a16).

    ncu ... python benchmarks/probe_w4a16_ncu.py
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_w4a16 import make_canonical  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402


def main() -> None:
    for n, k in ((7168, 16384), (24576, 1536), (2112, 7168)):
        q, z, s, g, _ = make_canonical(n, k)
        packed = ops.pack_w4a16(q, z, s, g)
        for m in (1, 16):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            for _ in range(2):
                y = ops.cuda_gemv(x, packed, pdl=False)
                torch.cuda.synchronize()
            print(f"case {n}x{k} M={m}: {tuple(y.shape)}", flush=True)


if __name__ == "__main__":
    main()
