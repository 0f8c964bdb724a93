"""Whether identical FP8 decode calls time differently from one CUDA graph to the next (issue 4's 2112x7168 M = 16
cell): the same layer call (``fp8_block_linear``, auto dispatch) captured into several graphs in one process, cold
weights, x rotated, replays alternated, and the addresses of the codes, scales and output each graph's calls got
(the only operands that differ between the graphs). Optionally in-kernel-quantization codes at the same M
(--kernel-codes). One line per graph: ``SPREAD M=16 2112x7168 <name> <us> q=<addr> s=<addr> y=<addr>``.

    python benchmarks/probe_fp8_graph_spread.py [--out DIR] [--m 16] [--graphs 8] [--kernel-codes ...]
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
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--shape", default="2112x7168")
    ap.add_argument("--graphs", type=int, default=8)
    ap.add_argument("--kernel-codes", default="", help="in-kernel-quantization codes to time as well (whole op)")
    args = ap.parse_args()
    cuda_ext.load()
    torch.manual_seed(0)
    m = args.m
    n, k = (int(v) for v in args.shape.split("x"))
    ws, ss = cold_fp8_block_weights(n, k)
    copies = len(ws)
    xs = [torch.randn(m, k, device="cuda").to(torch.bfloat16) for _ in range(8)]
    want = ref.fp8_block_linear_ref(xs[0], ws[0], ss[0], (128, 128)).float()

    seen: dict[str, set] = {}
    current = [""]
    quant = ops.quant_fp8_cuda

    def recording_quant(*a, **kw):
        q, s = quant(*a, **kw)
        if not torch.cuda.is_current_stream_capturing():  # the sizing calls outside the graphs
            return q, s
        seen.setdefault(current[0], set()).add(("q", q.data_ptr()))
        seen[current[0]].add(("s", s.data_ptr()))
        return q, s

    ops.quant_fp8_cuda = recording_quant

    def auto(name):
        def fn(i):
            current[0] = name
            y = ops.fp8_block_linear(xs[i % 8], ws[i % copies], ss[i % copies])
            if torch.cuda.is_current_stream_capturing():
                seen.setdefault(name, set()).add(("y", y.data_ptr()))
            return y
        return fn

    fns = {f"auto #{g}": auto(f"auto #{g}") for g in range(args.graphs)}
    for code in [int(c) for c in args.kernel_codes.split(",") if c]:
        fns[f"in-kernel {code}"] = (lambda c: lambda i: ops.fp8_block_gemv_cuda(
            xs[i % 8], ws[i % copies], ss[i % copies], None, config=c, pdl=True))(code)
    fns = runnable(fns, rel_err_check(want), f"SPREAD M={m} {n}x{k} ")
    seen.clear()
    rows: list[dict] = []
    res = time_case_rows(fns, max(copies, 8), "SPREAD", f"M={m} {n}x{k}", rows, width=20)
    for name in res:
        addrs = sorted(seen.get(name, set()))
        text = " ".join(f"{kind}={ptr:#x}" for kind, ptr in addrs)
        print(f"SPREAD ADDR {name:<20s} {text}", flush=True)
        for row in rows:
            if row["impl"] == name:
                row["addresses"] = {kind: [hex(p) for kk, p in addrs if kk == kind] for kind in ("q", "s", "y")}
    write_results("fp8_graph_spread", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out,
                  metric="us")


if __name__ == "__main__":
    main()
