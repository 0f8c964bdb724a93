"""Kernels for Nsight Compute on 2112x7168 (benchmarks/gpu_s20ncu.sh, session 20 run 8): the in-kernel
one-token-tile decode kernel at M = 8 (10011116), the pre-quantized GEMV of the M = 9..16 pair at
M = 16 (11011114, codes quantized before), and the Q = 2 cluster kernel at M = 16 (12011116). Each
case runs twice (warm-up, then the launch to read), without PDL.

RECORD ONLY in the main tree: Q = 2 was removed again; this ran on a snapshot of 8456fdd.

    ncu ... python benchmarks/probe_fp8_ncu_cs.py
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    C = cuda_ext.load()
    n, k = 2112, 7168
    w = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
    s = torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8
    ws = ops._cuda_workspace(w.device)
    for m, code in [(8, 10011116), (16, 11011114), (16, 12011116)]:
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        q, xs = ops.per_token_group_quant_fp8(x, 128)
        for _ in range(2):
            if code // 1000000 % 10 == 1:
                y = C.fp8_block_gemv_preq(q, xs, w, s, None, ws, x.dtype, code, False)
            else:
                y = ops.fp8_block_gemv_cuda(x, w, s, None, config=code, pdl=False)
            assert y is not None, code
        torch.cuda.synchronize()
        print(f"M={m} code={code} done", flush=True)


if __name__ == "__main__":
    main()
