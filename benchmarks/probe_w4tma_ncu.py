"""W4A16 TMA ring codes for Nsight Compute (benchmarks/gpu_s22b.sh, gpu_s24c.sh): 7168x16384 (``--shape``),
the symmetric fp16-scale group-128 layer, M = 1 (``--m``), each code of ``--codes`` launched twice (warm-up, then
the profiled launch), then the register kernel (ring -1, the dispatch's choice there).

    ncu ... python benchmarks/probe_w4tma_ncu.py --codes 22844 22848
"""

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_w4a16 import make_canonical  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--codes", type=int, nargs="+", required=True)
    ap.add_argument("--m", type=int, default=1)
    ap.add_argument("--shape", default="7168x16384", help="NxK")
    args = ap.parse_args()
    n, k = (int(v) for v in args.shape.split("x"))
    q, _, s, g, _ = make_canonical(n, k, scale_dtype=torch.float16)
    packed = ops.pack_w4a16(q, None, s, g)
    x = torch.randn(args.m, k, device="cuda", dtype=torch.bfloat16)
    for code in args.codes + [-1]:
        for _ in range(2):
            y = ops.cuda_gemv(x, packed, pdl=False, ring=code) if code != -1 else ops.cuda_gemv(x, packed, pdl=False)
            torch.cuda.synchronize()
        print(f"code {code}: {tuple(y.shape)}", flush=True)


if __name__ == "__main__":
    main()
