"""A/B of the FP8 block layer's small-M launch knobs on COLD weights (issue 4).

    python benchmarks/bench_fp8_ab.py [--out DIR] [--ms 1 4 16]

Whole layer forward (quantization launch + GEMM), CUDA graphs, weight copies rotated past L2.
Knobs flipped in one process (module constants read at each launch): the L2 weight prefetch
before the PDL wait (``fp8_triton.PREFETCH_WEIGHTS``), the PDL bound (``_pdl.PDL_MAX_M``) and the
quantizer's rows per program (``fp8_triton.QUANT_ROW_BLOCK``). Session 3 measured the first and
the last slower with L2-resident weights; a prefetch can only pay when the weights come from HBM.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _layers import build_layer  # noqa: E402
from _timing import bench_rotated, buffers_to_defeat_l2, env_info, write_results  # noqa: E402

from qlinear.kernels import _pdl, fp8_triton  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
VARIANTS = {  # name -> (PREFETCH_WEIGHTS, PDL_MAX_M, QUANT_ROW_BLOCK)
    "committed": (fp8_triton.PREFETCH_WEIGHTS, _pdl.PDL_MAX_M, fp8_triton.QUANT_ROW_BLOCK),
    "pdl16": ("off", 16, 1),
    "prefetch": ("pdl", _pdl.PDL_MAX_M, 1),
    "prefetch+pdl16": ("pdl", 16, 1),
    "qrows16": ("off", _pdl.PDL_MAX_M, 16),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 4, 16])
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    saved = VARIANTS["committed"]
    for n, k in SHAPES:
        copies = buffers_to_defeat_l2(n * k, max_buffers=24)
        layers = [build_layer("fp8-block", k, [n], device="cuda") for _ in range(copies)]
        for m in args.ms:
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
            ref = layers[0](xs[0]).float()
            line = []
            for name, (pf, pdl_max, qrows) in VARIANTS.items():
                fp8_triton.PREFETCH_WEIGHTS, _pdl.PDL_MAX_M, fp8_triton.QUANT_ROW_BLOCK = pf, pdl_max, qrows
                try:
                    err = ((layers[0](xs[0]).float() - ref).norm() / ref.norm()).item()
                    t = bench_rotated(layers, xs)
                finally:
                    fp8_triton.PREFETCH_WEIGHTS, _pdl.PDL_MAX_M, fp8_triton.QUANT_ROW_BLOCK = saved
                rows.append(dict(case=f"M={m} {n}x{k}", impl=name, us=t["median_us"], p20_us=t["p20_us"],
                                 p80_us=t["p80_us"], rel_err_vs_committed=err))
                line.append(f"{name} {t['median_us']:.2f}" + (" ERR" if err > 1e-6 else ""))
            print(f"FP8AB M={m:<3d} {n}x{k}: " + " | ".join(line), flush=True)
        del layers
        torch.cuda.empty_cache()
    write_results("fp8_ab", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
