"""Kernels of the FP8 block decode on 2112x7168 for Nsight Compute (benchmarks/gpu_fp8ncu.sh):
each case runs twice (warm-up, then the profiled launch), cases in this order:
  cuda 11116 at M = 1, 8, 16; Triton (the auto backend at M = 16); pre-quantized 1011116 at M = 16.

    ncu ... python benchmarks/probe_fp8_ncu.py
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qlinear.ops import fp8 as ops  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    n, k = 2112, 7168
    w = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
    s = torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8
    cases = [(1, "cuda", 11116), (8, "cuda", 11116), (16, "cuda", 11116), (16, "triton", None),
             (16, "cuda", 1011116)]
    for m, backend, code in cases:
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        for _ in range(2):
            if backend == "cuda":
                y = ops.fp8_block_gemv_cuda(x, w, s, None, config=code, pdl=False)
            else:
                y = ops.fp8_block_linear(x, w, s, backend=backend)
            torch.cuda.synchronize()
        print(f"case M={m} {backend} {code}: {tuple(y.shape)}", flush=True)


if __name__ == "__main__":
    main()
