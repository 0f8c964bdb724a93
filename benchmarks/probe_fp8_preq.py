"""Where the pre-quantized FP8 decode path (Q = 1) loses on 2112x7168 at M = 16 (issue 4): the GEMV on
codes quantized once outside the timed graph ("gemv only", PDL on / off, several configs), the whole
path (Triton quantizer launched with QLINEAR_PDL late / early / off, then the GEMV with PDL on / off),
the in-kernel path (11116) and the auto dispatch, on 2112x7168 and 1536x7168 with cold weights,
alternated graph replays. One line per case: ``PREQ M=16 NxK name us``.

    python benchmarks/probe_fp8_preq.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, env_info, rel_err_check, runnable, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--m", type=int, default=16)
    args = ap.parse_args()
    C = cuda_ext.load()
    torch.manual_seed(0)
    rows = []
    m = args.m
    for n, k in ((2112, 7168), (1536, 7168)):
        copies = buffers_to_defeat_l2(n * k, max_buffers=24)
        ws = [(torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn) for _ in range(copies)]
        ss = [torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8 for _ in range(copies)]
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        q, s = ops.per_token_group_quant_fp8(x, 128)
        wsp = ops._cuda_workspace(x.device)
        want = ref.fp8_block_linear_ref(x, ws[0], ss[0], (128, 128)).float()

        def gemv_only(code, pdl):
            return lambda i: C.fp8_block_gemv_preq(q, s, ws[i % copies], ss[i % copies], None, wsp, x.dtype, code, pdl)

        def path(code, qmode, pdl):
            """quantizer (QLINEAR_PDL=qmode at launch) + the GEMV on its codes (pdl)"""
            def fn(i):
                saved = os.environ.get("QLINEAR_PDL")
                os.environ["QLINEAR_PDL"] = qmode
                try:
                    return ops.fp8_block_gemv_cuda(x, ws[i % copies], ss[i % copies], None, config=code, pdl=pdl)
                finally:
                    if saved is None:
                        del os.environ["QLINEAR_PDL"]
                    else:
                        os.environ["QLINEAR_PDL"] = saved
            return fn

        fns = {f"gemv only {c} pdl": gemv_only(c, True) for c in (1011116, 1011216, 1011312, 1012108, 1022108, 1021108)}
        fns["gemv only 1011116 nopdl"] = gemv_only(1011116, False)
        fns["quantizer only"] = lambda i: ops.per_token_group_quant_fp8(x, 128)
        for code in (1011116, 1012108):
            for qmode, pdl in (("late", True), ("early", True), ("off", True), ("late", False), ("off", False)):
                fns[f"q {qmode} + gemv {code} {'pdl' if pdl else 'nopdl'}"] = path(code, qmode, pdl)
        fns["in-kernel 11116"] = lambda i: ops.fp8_block_gemv_cuda(x, ws[i % copies], ss[i % copies], None, config=11116)
        fns["auto"] = lambda i: ops.fp8_block_linear(x, ws[i % copies], ss[i % copies])

        fns = runnable(fns, rel_err_check(want), f"PREQ M={m} {n}x{k} ")
        res = bench_graphs_interleaved(fns, n_buffers=copies, reps=15, target_replay_us=1000.0)
        for name, t in res.items():
            print(f"PREQ M={m} {n}x{k} {name:<34s} {t['median_us']:6.2f} us", flush=True)
            rows.append(dict(case=f"M={m} {n}x{k}", impl=name, us=t["median_us"], p20_us=t["p20_us"], p80_us=t["p80_us"]))
        del ws, ss
        torch.cuda.empty_cache()
    write_results("fp8_preq_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
