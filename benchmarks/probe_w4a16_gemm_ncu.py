"""The W4A16 CUDA GEMM (csrc/w4a16_gemm.cuh) for Nsight Compute (benchmarks/gpu_s8final.sh): each case runs
twice (warm-up, then the profiled launch), in this order: 2112x7168 M = 128 with (4 warps, 32 tokens,
auto split, 6 stages) and with (8, 128, auto, 4); 7168x16384 M = 32 with the automatic config.
``--wgmma``: the wgmma GEMM (csrc/w4a16_wgmma.cuh) instead: 2112x7168 M = 128 (128 tokens, 1 split,
5 stages) and (64, auto, 8); 7168x16384 M = 1024 (128, 1, 5). ``--wgmma-splits``: 2112x7168 M = 128
with (128 tokens, 1 / 2 / 4 / 7 splits, 4 stages). ``--wgmma-spread``: 2112x7168 M = 128 with (128, 7, 4) and
the spread / last-arrival reduction, (128, 1, 4); 24576x1536 M = 128 automatic. ``--wgmma-large``:
M = 1024 on 2112x7168 (256 tokens, 1 split: 68 CTAs, one wave) and 24576x1536 (automatic).
``--wgmma-r64``: 2112x7168 M = 1024 with 64-row CTAs (256 tokens, 1 split: 132 CTAs) and 24576x1536
M = 1024 with 64 / 128 rows (256 tokens, 1 split). ``--wgmma-auto``: the dispatch's wgmma configs where
issue 5 misses: 2112x7168 at M = 1024 (64 rows, 256 tokens) and M = 128 (128 rows, 128 tokens, 7
splits), 24576x1536 at M = 1024 (128 rows, 256 tokens).

    ncu ... python benchmarks/probe_w4a16_gemm_ncu.py [--wgmma | --wgmma-splits | --wgmma-spread | --wgmma-large | --wgmma-r64
                                                      | --wgmma-auto]
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_w4a16 import make_canonical  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402


def main() -> None:
    cases = [((2112, 7168), 128, (4, 32, 0, 6)), ((2112, 7168), 128, (8, 128, 0, 4)), ((7168, 16384), 32, None)]
    run = ops.cuda_gemm
    if "--wgmma-auto" in sys.argv:
        cases = [((2112, 7168), 1024, (256, 0, 3, 0, 64)), ((2112, 7168), 128, None), ((24576, 1536), 1024, None)]
        run = ops.cuda_wgmma
    elif "--wgmma-r64" in sys.argv:
        cases = [((2112, 7168), 1024, (256, 1, 3, 0, 64)), ((24576, 1536), 1024, (256, 1, 3, 0, 64)),
                 ((24576, 1536), 1024, (256, 1, 3, 0, 128))]
        run = ops.cuda_wgmma
    elif "--wgmma-large" in sys.argv:
        cases = [((2112, 7168), 1024, (256, 1, 3)), ((24576, 1536), 1024, None)]
        run = ops.cuda_wgmma
    elif "--wgmma-spread" in sys.argv:
        cases = [((2112, 7168), 128, (128, 7, 4, 2)), ((2112, 7168), 128, (128, 7, 4, 1)),
                 ((2112, 7168), 128, (128, 1, 4)), ((24576, 1536), 128, None)]
        run = ops.cuda_wgmma
    elif "--wgmma-splits" in sys.argv:
        # the 128-token config on 2112x7168 at M = 128 with 1 / 2 / 4 / 7 K splits (7: the automatic one)
        cases = [((2112, 7168), 128, (128, s, 4)) for s in (1, 2, 4, 7)]
        run = ops.cuda_wgmma
    elif "--wgmma" in sys.argv:
        cases = [((2112, 7168), 128, (128, 1, 5)), ((2112, 7168), 128, (64, 0, 8)), ((7168, 16384), 1024, (128, 1, 5))]
        run = ops.cuda_wgmma
    for (n, k), m, cfg in cases:
        q, z, s, g, _ = make_canonical(n, k)
        packed = ops.pack_w4a16(q, z, s, g)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        for _ in range(2):
            y = run(x, packed, None, cfg)
            torch.cuda.synchronize()
        print(f"case {n}x{k} M={m} config={cfg}: {tuple(y.shape)}", flush=True)


if __name__ == "__main__":
    main()
