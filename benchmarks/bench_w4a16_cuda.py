"""CUDA tensor-core W4A16 decode kernel (backend "cuda") vs the Triton default, tinygemm and bf16.

For M in {1, 4, 8, 16} on 2112x7168, 24576x1536, 7168x16384 (asymmetric int4, group 128, bf16
scales): "cuda auto" (the launcher's config), a few (row tiles, chunk, warps) configs, "cuda auto
nopdl" at M = 1, the Triton path (``w4a16_triton.w4a16_gemm``, its default config), torch's tinygemm
(``_weight_int4pack_mm``) and bf16 ``F.linear``. CUDA-graph replay with the weights rotated past L2.
One line per measurement:  case  impl  us  GB/s(weight bytes)  fraction-of-copy-ceiling
then per case the best CUDA row vs triton / tinygemm and the issue-5 M = 1 targets. JSON:
``<out>/w4a16_cuda.json``.
    python benchmarks/bench_w4a16_cuda.py --out DIR [--budget-s 70]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402
from bench_w4a16 import make_canonical, make_tinygemm, rotated, weight_bytes  # noqa: E402

from qlinear.kernels import w4a16_triton as kern  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
MS = [1, 4, 8, 16]
TARGET_M1 = {(2112, 7168): 6.0, (24576, 1536): 9.0, (7168, 16384): 20.0}
CONFIGS_NT1 = [(1, 2, 16), (1, 4, 8), (2, 2, 8), (4, 1, 8), (4, 1, 4)]
CONFIGS_NT2 = [(1, 2, 8), (2, 1, 8), (2, 1, 4)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--budget-s", type=float, default=70.0)
    args = ap.parse_args()
    t0 = time.time()
    ceiling = copy_ceiling_gbps(1 << 28)
    print(f"copy ceiling {ceiling:.0f} GB/s", flush=True)
    rows: list[dict] = []

    def timed(case, impl, fn, nbuf, wb, **extra):
        row = dict(case=case, impl=impl, **extra)
        if time.time() - t0 > args.budget_s:
            row["error"] = "skipped: time budget"
            rows.append(row)
            return row
        try:
            row.update(bench_graph(fn, n_buffers=nbuf, reps=15, target_replay_us=1000.0))
            row["gbps"] = wb / (row["median_us"] * 1e-6) / 1e9
            row["frac_of_copy"] = row["gbps"] / ceiling
            print(f"{case:>18}  {impl:<26} {row['median_us']:8.2f} us {row['gbps']:7.0f} GB/s "
                  f"{row['frac_of_copy']:5.2f}", flush=True)
        except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            print(f"{case:>18}  {impl:<26} ERROR {row['error'][:120]}", flush=True)
            torch.cuda.synchronize()
        rows.append(row)
        return row

    summary = []
    for n, k in SHAPES:
        q, z, s, g, _ = make_canonical(n, k)
        packed = ops.pack_w4a16(q, z, s, g)
        del q, z, s
        wb = weight_bytes(packed)
        nbuf = buffers_to_defeat_l2(wb, max_buffers=64)
        packs = rotated(packed, nbuf)
        nb16 = buffers_to_defeat_l2(2 * n * k, 16)
        w16 = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(nb16)]
        try:
            tgs = [make_tinygemm(n, k) for _ in range(min(nbuf, 8))]
        except Exception as exc:  # noqa: BLE001
            print(f"tinygemm unavailable: {exc}", flush=True)
            tgs = []
        for m in MS:
            case = f"M={m} {n}x{k}"
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            base = dict(m=m, n=n, k=k, weight_bytes=wb, floor_us=wb / (ceiling * 1e3))
            cuda_rows = [timed(case, "cuda auto", lambda i: ops.cuda_gemv(xs[i % 4], packs[i]), nbuf, wb, **base)]
            if m == 1:
                cuda_rows.append(timed(case, "cuda auto nopdl",
                                       lambda i: ops.cuda_gemv(xs[i % 4], packs[i], pdl=False), nbuf, wb, **base))
            for cfg in (CONFIGS_NT1 if m <= 8 else CONFIGS_NT2):
                cuda_rows.append(timed(case, "cuda R{} U{} W{}".format(*cfg),
                                       lambda i, c=cfg: ops.cuda_gemv(xs[i % 4], packs[i], config=c), nbuf, wb,
                                       config=list(cfg), **base))
            tr = timed(case, "triton default", lambda i: kern.w4a16_gemm(xs[i % 4], packs[i]), nbuf, wb, **base)
            tg = (timed(case, "tinygemm int4pack_mm", lambda i: tgs[i % len(tgs)](xs[i % 4]), len(tgs), wb, **base)
                  if tgs else {})
            timed(case, "bf16 F.linear", lambda i: F.linear(xs[i % 4], w16[i % nb16]), nb16, wb, **base)
            ok = [r for r in cuda_rows if "median_us" in r]
            if ok:
                b = min(ok, key=lambda r: r["median_us"])
                tgt = TARGET_M1.get((n, k)) if m == 1 else None
                line = (f"BEST {case:>18}: {b['impl']:<18} {b['median_us']:7.2f} us | triton "
                        f"{tr.get('median_us', float('nan')):7.2f} | tinygemm {tg.get('median_us', float('nan')):7.2f}"
                        + (f" | target {tgt} us {'MET' if b['median_us'] <= tgt else 'missed'}" if tgt else ""))
                summary.append(line)
        del packs, w16, tgs
        torch.cuda.empty_cache()
    print()
    for line in summary:
        print(line)
    meta = dict(env_info(), copy_ceiling_gbps=ceiling, wall_s=time.time() - t0)
    write_results("w4a16_cuda", rows, meta, args.out)
    print(f"bench wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
