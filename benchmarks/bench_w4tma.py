"""W4A16 TMA ring decode kernel (csrc/w4a16_tma.cuh, ring codes >= 20000) against the committed
dispatch ("auto") and bf16 ``F.linear``, all candidates of a case in one alternated-replay
measurement, weights cold (rotated copies); GB/s of the int4 weight bytes.

Cases: the three benchmark shapes at M = 1, 4, 8, 16 (``--ms`` / ``--shapes`` narrow them), group
128, the symmetric fp16-scale layer of the acceptance runs (``--layer``). Prints one line per
candidate and, per case, ``BEST case: code us | auto us``.
    python benchmarks/bench_w4tma.py --out DIR [--reps 15]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graphs_interleaved, env_info, record_gbps_rows, rel_err_check, runnable, write_results  # noqa: E402,E501
from bench_w4a16 import LAYER_KINDS, cold_layers  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = {"many": (7168, 16384), "few": (2112, 7168), "short": (24576, 1536)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--layer", choices=sorted(LAYER_KINDS), default="sym-fp16")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--codes", type=int, nargs="+", default=None,
                    help="only these ring codes (default: every TMA code; other compiled ring codes may be named)")
    ap.add_argument("--diag", action="store_true", help="also the diagnostic codes (8xxxx: no math)")
    ap.add_argument("--reg", action="store_true",
                    help="also the register kernel with the dispatch table's register config (ring -1)")
    args = ap.parse_args()
    lib = cuda_ext.load()
    rows: list[dict] = []
    for cls in args.shapes:
        n, k = SHAPES[cls]
        packs, wb, w16, ref_w = cold_layers(n, k, with_reference=True, layer=args.layer)
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms:
            case = f"M={m} {n}x{k}"
            nt = 1 if m <= 8 else 2
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            want = xs[0].float() @ ref_w.t()
            fns = {"bf16 F.linear": lambda i: F.linear(xs[i % 4], w16[i % nb16]),
                   "auto#2": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf]),
                   "auto": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf])}
            if args.reg:
                # the register kernel with the config _CUDA_REG_AUTO gives this call (None: the launcher's)
                cfg = ops._cuda_auto_reg(xs[0], packs[0])
                fns["reg"] = lambda i, c=cfg: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], config=c, ring=-1)
            for code in lib.w4a16_ring_configs(nt):
                diagnostic = code % 100000 // 10000 == 8
                if (code in args.codes if args.codes else code >= 20000) and (not diagnostic or args.diag):
                    name = f"tma {code}" if code >= 20000 else f"ring {code}"
                    fns[name] = lambda i, c=code: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], ring=c)
            diag = tuple(nm for nm in fns if nm.startswith("tma 8"))
            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",) + diag), f"{case:>18}  ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16), reps=args.reps, target_replay_us=400.0)
            record_gbps_rows(res, rows, case, wb, width=16, m=m, n=n, k=k, weight_bytes=wb)
            ranked = sorted((r["median_us"], nm) for nm, r in res.items() if nm.startswith("tma") and nm not in diag)
            if ranked:
                auto = res["auto"]["median_us"]
                print(f"BEST {case:>18}: {ranked[0][1]:<10} {ranked[0][0]:7.2f} us | auto {auto:7.2f} "
                      f"(x{auto / ranked[0][0]:.3f}) | bf16 {res['bf16 F.linear']['median_us']:7.2f}", flush=True)
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    write_results("w4tma", rows, {**env_info(), "layer": args.layer}, args.out, metric="median_us")


if __name__ == "__main__":
    main()
