"""rms_norm_quant_fp8 at decode sizes (M = 1 / 16, K = 1536 / 7168 / 16384, bf16): its "cuda" and "triton"
backends against rms_norm alone and rms_norm + per_token_group_quant_fp8, alternated graph replays.
One line per case: ``NQ M=.. K=.. name us``.

    python benchmarks/probe_norm_quant_decode.py [--out DIR] [--ms 1 16] [--ks 1536 7168 16384]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import env_info, runnable, time_case_rows, write_results  # noqa: E402

from qlinear.ops import per_token_group_quant_fp8, rms_norm, rms_norm_quant_fp8  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--ks", type=int, nargs="+", default=[1536, 7168, 16384])
    args = ap.parse_args()
    rows = []
    for k in args.ks:
        gamma = (1 + 0.1 * torch.randn(k, device="cuda")).to(torch.bfloat16)
        for m in args.ms:
            h = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            fns = {
                "norm-quant cuda": lambda i: rms_norm_quant_fp8(h, gamma, 1e-6, 128, backend="cuda"),
                "norm-quant triton": lambda i: rms_norm_quant_fp8(h, gamma, 1e-6, 128, backend="triton"),
                "rms_norm": lambda i: rms_norm(h, gamma, 1e-6),
                "rms_norm + quant": lambda i: per_token_group_quant_fp8(rms_norm(h, gamma, 1e-6), 128),
            }
            time_case_rows(runnable(fns, None, f"NQ M={m} K={k} "), 1, "NQ", f"M={m} K={k}", rows, width=20)
    write_results("norm_quant_decode", rows, env_info(), args.out, metric="us")


if __name__ == "__main__":
    main()
