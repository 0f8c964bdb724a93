"""Kernels of the FP8 block decode on 2112x7168 for Nsight Compute (benchmarks/gpu_fp8ncu.sh):
each case runs twice (warm-up, then the profiled launch), cases in this order:
  cuda 11116 at M = 1, 8, 16; Triton (the auto backend at M = 16); pre-quantized 1011116 at M = 16.
With ``--preq-ms 12,16 --code 11011114``: instead, that pre-quantized code alone at each M (x quantized
once before, so only the GEMV kernel runs twice per case).

    ncu ... python benchmarks/probe_fp8_ncu.py [--preq-ms ... --code ...]
"""

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qlinear.ops import fp8 as ops  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preq-ms", default="", help="comma-separated M: time only the pre-quantized GEMV at these M")
    ap.add_argument("--code", type=int, default=11011114, help="its launch code (Q = 1)")
    args = ap.parse_args()
    torch.manual_seed(0)
    n, k = 2112, 7168
    w = (torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn)
    s = torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8
    cases = [(1, "cuda", 11116), (8, "cuda", 11116), (16, "cuda", 11116), (16, "triton", None),
             (16, "cuda", 1011116)]
    if args.preq_ms:
        C = ops._cuda_ops()
        ws = ops._cuda_workspace(torch.device("cuda"))
        for m in [int(v) for v in args.preq_ms.split(",")]:
            q, sx = ops.per_token_group_quant_fp8(torch.randn(m, k, device="cuda").to(torch.bfloat16), 128)
            for _ in range(2):
                y = C.fp8_block_gemv_preq(q, sx, w, s, None, ws, torch.bfloat16, args.code, False)
                torch.cuda.synchronize()
            print(f"case M={m} preq {args.code}: {tuple(y.shape)}", flush=True)
        return
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
