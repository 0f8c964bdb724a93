"""Block-scaled FP8 linear fed by the norm before it: RMSNorm then ``fp8_block_linear`` (the layer
quantizes x itself, one more launch) against ``rms_norm_quant_fp8`` then ``fp8_block_linear_quantized``
(the norm writes codes and scales, the GEMM reads them), on the issue-4 shapes at decode M, bf16, cold
weights (copies rotated past L2), all candidates of a case in one alternated-replay measurement. Also each
GEMM alone on x / on codes made once outside the graph. Checks every output against the fp32 reference of
the codes each chain produced. Writes fp8_prequant.json + .png.

    python benchmarks/bench_fp8_prequant.py [--out DIR] [--ms 1 16] [--shapes 2112x7168 ...]
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import cold_fp8_block_weights, env_info, rel_err_check, runnable, time_case_rows, write_results  # noqa: E402

from qlinear.kernels import fp8_triton  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.ops import rms_norm  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--shapes", nargs="+", default=["2112x7168", "24576x1536", "7168x16384"])
    ap.add_argument("--nq-backends", nargs="*", default=[],
                    choices=["cuda", "triton", "triton-first", "triton-early", "triton-late"],
                    help="also the chain with rms_norm_quant_fp8 on each of these backends (triton-<trigger>: the "
                         "Triton kernel launched with PDL and that trigger), and each norm alone")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for shape in args.shapes:
        n, k = (int(v) for v in shape.split("x"))
        ws, ss = cold_fp8_block_weights(n, k)
        copies = len(ws)
        gamma = (1 + 0.1 * torch.randn(k, device="cuda")).to(torch.bfloat16)
        for m in args.ms:
            h = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            q, s = ops.rms_norm_quant_fp8(h, gamma, 1e-6, 128)
            x = rms_norm(h, gamma, 1e-6)
            # each chain against the fp32 GEMM of its own codes: the fused norm quantizes the fp32 normalized
            # values, the float path the bf16-rounded x, so their codes differ by a rounding here and there
            want_q = ref.fp8_block_gemm_ref(q, s, ws[0], ss[0], (128, 128), torch.float32)
            want_x = ref.fp8_block_linear_ref(x.cpu(), ws[0].cpu(), ss[0].cpu(), (128, 128)).float().cuda()
            check_q, check_x = rel_err_check(want_q), rel_err_check(want_x)
            fns = {
                "norm + linear": lambda i: ops.fp8_block_linear(rms_norm(h, gamma, 1e-6), ws[i % copies], ss[i % copies]),
                "norm-quant + linear on codes": lambda i: ops.fp8_block_linear_quantized(
                    *ops.rms_norm_quant_fp8(h, gamma, 1e-6, 128), ws[i % copies], ss[i % copies]),
                "linear alone (quantizes x)": lambda i: ops.fp8_block_linear(x, ws[i % copies], ss[i % copies]),
                "linear alone on codes": lambda i: ops.fp8_block_linear_quantized(q, s, ws[i % copies], ss[i % copies]),
            }
            # each norm-quant backend in the chain, and each norm alone (--backends)
            for be in args.nq_backends:
                if be.startswith("triton-"):  # the Triton kernel launched with PDL and that trigger
                    nq = functools.partial(fp8_triton.rms_norm_quant_fp8, pdl_trigger=be.split("-")[1])
                else:
                    nq = functools.partial(ops.rms_norm_quant_fp8, backend=be)
                fns[f"norm-quant {be} + linear on codes"] = lambda i, nq=nq: ops.fp8_block_linear_quantized(
                    *nq(h, gamma, 1e-6, 128), ws[i % copies], ss[i % copies])
                fns[f"norm-quant {be} alone"] = lambda i, nq=nq: nq(h, gamma, 1e-6, 128)
            if args.nq_backends:
                fns["norm alone"] = lambda i: rms_norm(h, gamma, 1e-6)
            case = f"M={m} {n}x{k}"
            backends = (ops.fp8_block_backend(x, ws[0], (128, 128), ss[0]),
                        ops.fp8_block_quantized_backend(q, s, ws[0], (128, 128), ss[0]))
            print(f"PREQ {case} backends: linear {backends[0]}, on codes {backends[1]}", flush=True)
            def check(name, y):
                if "linear" in name:  # the norms alone are timed only (their GPU tests check them)
                    (check_q if "codes" in name else check_x)(name, y)

            fns = runnable(fns, check, f"PREQ {case} ")
            res = time_case_rows(fns, copies, "PREQ", case, rows, width=30)
            for row in rows[-len(res):]:
                row.update(m=m, n=n, k=k, backend=backends[1] if "codes" in row["impl"] else backends[0])
        del ws, ss
        torch.cuda.empty_cache()
    write_results("fp8_prequant", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
