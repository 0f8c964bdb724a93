"""The FP8 Triton GEMMs of 7168x16384 for Nsight Compute (benchmarks/gpu_s18ncu.sh): the split-K
(16, 64, 6, 4, 3) and swap-AB (16, 128, 5, 4, 4) kernels alone, on codes quantized outside, at
M = 1 and 16. Each case runs twice (warm-up, then the profiled launch), cases in this order:
split M = 1, split M = 16, swap M = 1, swap M = 16.

    ncu ... python benchmarks/probe_fp8_ncu_wide.py
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import cold_fp8_block_weights  # noqa: E402

from qlinear.kernels import fp8_triton as ft  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    (w,), (s,) = cold_fp8_block_weights(7168, 16384, max_buffers=1)  # ncu flushes the caches itself
    k = w.shape[1]
    configs = {"split": ft.GemmConfig(16, 64, 6, 4, 3), "swap": ft.GemmConfig(16, 128, 5, 4, 4, swap_ab=True)}
    for name, cfg in configs.items():
        for m in (1, 16):
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            q, qs = ft.per_token_group_quant_fp8(x, 128, column_major_scales=True)
            for _ in range(2):
                y = ft.fp8_block_gemm(q, qs, w, s, (128, 128), torch.bfloat16, config=cfg)
                torch.cuda.synchronize()
            print(f"case {name} M={m}: {tuple(y.shape)}", flush=True)


if __name__ == "__main__":
    main()
