"""Is the pre-quantized FP8 decode GEMV (fp8_gemv.cuh, Q = 1) on 2112x7168 at M = 16 bound by x's traffic
through L2 or by the weight stream? (issue 4's last miss.) Every one of the 132 CTAs reads all of x's codes
and scales: at M = 16 that is 15 MB through L2 per call, as much as the weights from HBM.

Per code, on codes quantized outside the timed graph (x rotated over --rotate-x copies, weights cold unless
named "hot"):
- ``gemv C``: the GEMV as the dispatch runs it;
- ``gemv C x0``: every token row aliased to row 0 (stride 0), so the 8 token lanes of a load share one address:
  the same instructions, 1/M of x's L2 sectors (a diagnostic: its output is not checked);
- ``gemv C hot`` / ``gemv C hot x0``: one weight copy, L2-resident (diagnostic);
- ``pair C``: the Triton quantizer (PDL trigger early) + the GEMV, as ``fp8_block_gemv_cuda`` launches them.
One line per case: ``XT M=16 NxK name us``.

    python benchmarks/probe_fp8_xtraffic.py [--out DIR] [--ms 16] [--codes 11011114,1022108]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import cold_fp8_block_weights, env_info, rel_err_check, runnable, time_case_rows, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", default="16", help="comma-separated M values")
    ap.add_argument("--shape", default="2112x7168")
    ap.add_argument("--codes", default="11011114")
    ap.add_argument("--pair-codes", default="11011114")
    ap.add_argument("--diag-codes", default="11011114", help="codes also timed with x0 / hot weights")
    ap.add_argument("--rotate-x", type=int, default=8)
    args = ap.parse_args()
    C = cuda_ext.load()
    torch.manual_seed(0)
    n, k = (int(v) for v in args.shape.split("x"))
    ws, ss = cold_fp8_block_weights(n, k)
    copies = len(ws)
    rows: list[dict] = []
    for m in [int(v) for v in args.ms.split(",") if v]:
        xs = [torch.randn(m, k, device="cuda").to(torch.bfloat16) for _ in range(max(1, args.rotate_x))]
        nx = len(xs)
        qs = [ops.per_token_group_quant_fp8(x, 128) for x in xs]
        q0s = [(q[:1].expand(m, k), s[:1].expand(m, s.shape[1])) for q, s in qs]
        wsp = ops._cuda_workspace(xs[0].device)
        want = ref.fp8_block_linear_ref(xs[0], ws[0], ss[0], (128, 128)).float()

        def gemv(code, x0=False, hot=False):
            src = q0s if x0 else qs

            def fn(i):
                q, s = src[i % nx]
                j = 0 if hot else i % copies
                return C.fp8_block_gemv_preq(q, s, ws[j], ss[j], None, wsp, torch.bfloat16, code, True)
            return fn

        def pair(code):
            def fn(i):
                y = ops.fp8_block_gemv_cuda(xs[i % nx], ws[i % copies], ss[i % copies], None, config=code, pdl=True,
                                            quant_pdl="early")
                if y is None:  # refused: timing the no-op would read as a fast kernel
                    raise RuntimeError(f"config {code} refused")
                return y
            return fn

        fns = {f"gemv {c}": gemv(c) for c in [int(v) for v in args.codes.split(",") if v]}
        diag = []
        for c in [int(v) for v in args.diag_codes.split(",") if v]:
            for name, kw in ((f"gemv {c} x0", dict(x0=True)), (f"gemv {c} hot", dict(hot=True)),
                             (f"gemv {c} hot x0", dict(x0=True, hot=True))):
                fns[name] = gemv(c, **kw)
                diag.append(name)
        fns.update({f"pair {c}": pair(c) for c in [int(v) for v in args.pair_codes.split(",") if v]})
        fns = runnable(fns, rel_err_check(want, skip=tuple(diag)), f"XT M={m} {n}x{k} ")
        time_case_rows(fns, max(copies, nx), "XT", f"M={m} {n}x{k}", rows, width=26)
    write_results("fp8_xtraffic_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2) unless hot"},
                  args.out, metric="us")


if __name__ == "__main__":
    main()
