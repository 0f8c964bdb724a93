"""Accuracy of the FP8 block linear with a ragged last K block (K % 128 != 0, the Triton path) on
fresh random draws: session 9 run 4 saw one draw of tests/gpu/test_fp8_cuda_gemv.py's K = 192 case at
rel err 1.18e-2 (tolerance 1e-2). For each draw: the codes and scales of per_token_group_quant_fp8
against the reference quantizer (bit for bit), and the GEMM's relative error against
fp8_block_linear_ref, plus the error of the reference itself rounded to bf16 (the floor any bf16
output has). One line per (K, M): worst / median errors and the draws with mismatched codes.

    python benchmarks/probe_fp8_ragged.py [--draws 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=200)
    args = ap.parse_args()
    for k in (192, 320, 7168):
        for m in (1, 3, 16):
            errs, floors, own, bad_codes, bad_cpu, nflip = [], [], [], 0, 0, 0
            for seed in range(args.draws):
                gen = torch.Generator(device="cuda").manual_seed(seed)
                w = (torch.randn(256, k, device="cuda", generator=gen) * 8).to(torch.float8_e4m3fn)
                s = torch.rand(2, (k + 127) // 128, device="cuda", generator=gen) * 1e-2
                x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
                q, sc = ops.per_token_group_quant_fp8(x, 128)
                q0, sc0 = ref.per_token_group_quant_fp8_ref(x, 128)
                if not (torch.equal(q.view(torch.uint8), q0.view(torch.uint8)) and torch.equal(sc, sc0)):
                    bad_codes += 1
                q1, sc1 = ref.per_token_group_quant_fp8_ref(x.cpu(), 128)
                flips = int((q.cpu().view(torch.uint8) != q1.view(torch.uint8)).sum())
                nflip += flips
                bad_cpu += bool(flips) or not torch.equal(sc.cpu(), sc1)
                exact = ref.fp8_block_gemm_ref(q0, sc0, w, s, (128, 128), torch.float32)
                # = fp8_block_linear_ref(x, ...): the same quantization and GEMM, rounded to x's dtype
                want = exact.to(x.dtype).float()
                mine = ref.fp8_block_gemm_ref(q, sc, w, s, (128, 128), torch.float32)  # the kernel's own codes
                y = ops.fp8_block_linear(x, w, s, backend="triton").float()
                errs.append(((y - want).norm() / want.norm()).item())
                own.append(((y - mine).norm() / mine.norm()).item())
                floors.append(((exact.to(torch.bfloat16).float() - exact.float()).norm() / exact.float().norm()).item())
            worst = max(range(len(errs)), key=lambda i: errs[i])
            print(f"RAGGED K={k} M={m}: rel err max {errs[worst]:.3e} (draw {worst}, its bf16 floor {floors[worst]:.3e}) "
                  f"median {statistics.median(errs):.3e}; bf16 floor max {max(floors):.3e}; "
                  f"draws with codes != reference on GPU: {bad_codes}/{args.draws}, != CPU reference: {bad_cpu} "
                  f"({nflip} codes); vs a reference from the quantizer's own codes: max {max(own):.3e}", flush=True)


if __name__ == "__main__":
    main()
