"""The per-token-group FP8 quantizers alone: the CUDA one (csrc/group_quant.cuh, a few threads-per-CTA
values, and the public op's automatic choice) against Triton's (qlinear.kernels.fp8_triton), group 128, bf16 x rotated past L2, alternated
graph replays (GPU time, with GB/s of x read + codes and scales written), and the host time of one eager
call of the public op on each backend (median of 5 passes of 300 calls, x already on the GPU). One line per
case: ``GQ M=.. K=.. name us [GB/s]`` and ``GQHOST M=.. K=.. backend us``.

    python benchmarks/probe_group_quant.py [--out DIR] [--ms 1,16,128,1024,4096,16384] [--ks 7168,1536]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import buffers_to_defeat_l2, env_info, time_case_rows, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402


def host_us(fn, calls: int = 300, passes: int = 5) -> float:
    """Median over passes of the mean wall time of ``calls`` eager calls (the GPU drained before each pass)."""
    per = []
    for _ in range(passes):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(per)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", default="1,16,128,1024,4096,16384")
    ap.add_argument("--ks", default="7168,1536")
    ap.add_argument("--threads", default="64,128,256,512")
    args = ap.parse_args()
    cuda_ext.load()
    torch.manual_seed(0)
    rows: list[dict] = []
    threads = [int(t) for t in args.threads.split(",") if t]
    for k in [int(v) for v in args.ks.split(",")]:
        for m in [int(v) for v in args.ms.split(",")]:
            nbytes = m * k * 2
            xs = [torch.randn(m, k, device="cuda").to(torch.bfloat16)
                  for _ in range(buffers_to_defeat_l2(nbytes, max_buffers=16))]
            n = len(xs)
            fns = {"triton": lambda i: ops.per_token_group_quant_fp8(xs[i % n], 128, backend="triton")}
            for t in threads:
                fns[f"cuda {t}"] = (lambda tt: lambda i: ops.quant_fp8_cuda(xs[i % n], 128, threads=tt))(t)
            # the public op's automatic choice (PDL as Triton's launches have it at this M)
            fns["auto"] = lambda i: ops.per_token_group_quant_fp8(xs[i % n], 128)
            want = ops.per_token_group_quant_fp8(xs[0], 128, backend="triton")
            for name, fn in fns.items():  # the same codes and scales, or no timing
                q, s = fn(0)
                assert torch.equal(q.view(torch.uint8), want[0].view(torch.uint8)) and torch.equal(s, want[1]), name
            case = f"M={m} K={k}"
            res = time_case_rows(fns, n, "GQ", case, rows, width=12)
            moved = nbytes + m * k + m * (k // 128) * 4
            for name, t in res.items():
                gbps = moved / (t["median_us"] * 1e-6) / 1e9
                print(f"GQ {case} {name:<12s} {gbps:8.1f} GB/s", flush=True)
                rows[-len(res) + list(res).index(name)]["gbps"] = gbps
            x = xs[0]
            for be in ("triton", "cuda"):
                us = host_us(lambda: ops.per_token_group_quant_fp8(x, 128, backend=be))
                print(f"GQHOST {case} {be:<8s} {us:7.2f} us", flush=True)
                rows.append(dict(case=case, impl=f"host {be}", us=us))
            del xs
            torch.cuda.empty_cache()
    write_results("group_quant_probe", rows, {**env_info(), "x": "bf16, rotated past L2; host: one x"}, args.out,
                  metric="us")


if __name__ == "__main__":
    main()
