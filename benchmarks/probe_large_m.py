"""Large-M probe for the W4A16 dequantize + cuBLAS path (issue 5 / issue 7 at M >= 1024).

    python benchmarks/probe_large_m.py [--out DIR]

Times, with CUDA graphs and cold weights (copies rotated past L2):
  * bf16 cuBLAS on the merged 2112-row MLA weight vs the two separate 1536 / 576-row GEMMs, and the
    merged output written as two GEMMs into its column slices (``torch.mm(out=slice)``; checked to
    write in place, not through a copy);
  * the dequantize kernel alone (bf16 out) per shape and launch variant, as GB/s of the bytes it
    must move (int4 + scales in, bf16 out) against a copy ceiling measured in the same run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _layers import build_layer  # noqa: E402
from _timing import bench_rotated, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402


def rotate(fns, m, k, nx=2):
    return bench_rotated(fns, [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(nx)])["median_us"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    rows = []
    k = 7168
    copies = buffers_to_defeat_l2(2 * 2112 * k, max_buffers=8)
    ws = [torch.randn(2112, k, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(copies)]
    for m in (1024, 4096):
        outs = [torch.empty(m, 2112, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]

        def sliced(x, w, o):
            torch.mm(x, w[:1536].t(), out=o[:, :1536])
            torch.mm(x, w[1536:].t(), out=o[:, 1536:])
            return o

        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        ptr = outs[0].data_ptr()
        y = sliced(x, ws[0], outs[0])
        ok = outs[0].data_ptr() == ptr and torch.allclose(y.float(), F.linear(x, ws[0]).float(), rtol=2e-2, atol=2e-2)
        cases = {
            "merged F.linear": [(lambda x, w=w: F.linear(x, w)) for w in ws],
            "separate 1536 + 576": [(lambda x, w=w: (F.linear(x, w[:1536]), F.linear(x, w[1536:]))) for w in ws],
            "merged as 2 mm into slices": [(lambda x, w=w, o=o: sliced(x, w, o)) for w, o in zip(ws, outs)],
            "merged mm out=": [(lambda x, w=w, o=o: torch.mm(x, w.t(), out=o)) for w, o in zip(ws, outs)],
        }
        for name, fns in cases.items():
            us = rotate(fns, m, k)
            tf = 2 * m * 2112 * k / (us * 1e6)
            rows.append(dict(case=f"bf16 M={m} 2112x7168", impl=name, us=us, tflops=tf, inplace_ok=ok))
            print(f"bf16 M={m:5d} 2112x7168  {name:28s} {us:8.1f} us  {tf:6.0f} TFLOP/s  (slices in place: {ok})",
                  flush=True)
    del ws
    torch.cuda.empty_cache()

    from qlinear.kernels import w4a16_triton

    for n, kk in ((2112, 7168), (24576, 1536), (7168, 16384)):
        nbytes = n * kk // 2 + n * kk * 2 + 2 * n * (kk // 128) * 2
        cp = buffers_to_defeat_l2(nbytes, max_buffers=8)
        layers = [build_layer("w4a16", kk, [n], device="cuda") for _ in range(cp)]
        packs = [layer.quant_method.packed(layer) for layer in layers]
        variants = [dict(), dict(block_n=64), dict(block_n=16), dict(sb_per_prog=2), dict(sb_per_prog=4),
                    dict(num_warps=8), dict(version=1)]
        for v in variants:
            try:
                fns = [(lambda _x, p=p: w4a16_triton.w4a16_dequantize(p, torch.bfloat16, **v)) for p in packs]
                us = rotate(fns, 1, 8)
            except Exception as exc:  # a variant the kernel refuses: record it
                print(f"dequantize {n}x{kk} {v}: {exc!r}"[:200], flush=True)
                continue
            gbps = nbytes / (us * 1e3)
            rows.append(dict(case=f"dequantize {n}x{kk}", impl=str(v or "default"), us=us, gbps=gbps,
                             frac_of_copy=gbps / ceiling))
            print(f"dequantize {n:5d}x{kk:<5d} {str(v or 'default'):24s} {us:8.1f} us  {gbps:6.0f} GB/s  "
                  f"{gbps / ceiling:.2f} of copy", flush=True)
        del layers, packs
        torch.cuda.empty_cache()
    write_results("probe_large_m", rows, {**env_info(), "copy_ceiling_gbps": ceiling}, args.out, metric="us")


if __name__ == "__main__":
    main()
