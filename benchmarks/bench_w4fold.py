"""W4A16 register decode kernel with and without the zero-point fold (csrc/w4a16_gemv.cuh FOLD), all
candidates of a case in one alternated-replay measurement, weights cold (rotated copies).

Cases: 2112x7168, 24576x1536, 7168x16384 at M = 1, 4, 16 (asymmetric int4, group 128, bf16).
Candidates: bf16 ``F.linear`` first (the first slot of an alternation round reads slow; an anchor
only), "auto" (``cuda_gemv(x, packed)``: the committed dispatch, ring or register), "reg f0" / "reg
f1" = the register kernel at the config the dispatch uses for it (``_CUDA_REG_AUTO``'s entry
without its fold element, else the launcher's default, its warps read back from the launch) with
fold 0 / 1, and fold 1 at neighbouring configs (half / double the warps, the other fold-compiled
row-tile codes of the token-tile count at the same warps).
Prints one line per candidate (us, GB/s of the int4 weight bytes = qweight only), then per case
``FOLD case: best fold config us | reg f0 us (speed-up) | auto us``.
    python benchmarks/bench_w4fold.py --out DIR [--reps 15]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graphs_interleaved, env_info, record_gbps_rows, rel_err_check, runnable, write_results  # noqa: E402,E501
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
MS = [1, 4, 16]
# fold-compiled (row tiles, chunk, pipe) per token-tile count (w4a16_gemv.cuh kRegFoldCodes)
FOLD_CODES = {1: [(1, 2, 0), (4, 1, 0)], 2: [(2, 1, 0), (2, 1, 1), (1, 1, 1)]}


def base_config(lib, x, packed) -> tuple[int, int, int, int]:
    """(R, U, W, pipe) the dispatch gives the register kernel here: _CUDA_REG_AUTO's entry (its fold
    element dropped: both folds are measured), else the
    launcher's default (w4_gemv_resolve: R1 U2 for <= 2 row tiles per SM at M <= 8, else R4 U1;
    R2 U1 at M > 8), whose warps the launch returns (-warps)."""
    cfg = ops._cuda_auto_reg(x, packed)
    if cfg is not None:
        return (tuple(cfg) + (0,))[:4]
    m, n = x.shape[0], packed.n
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    if m > 8:
        r, u = 2, 1
    else:
        r, u = (1, 2) if (n + 15) // 16 <= 2 * sms else (4, 1)
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    used = lib.w4a16_gemv(out, x, packed.qweight, packed.scales, packed.zeros, None, packed.group_size, r, u, 0, 1,
                          -1, 0, 0)
    return (r, u, -int(used), 0)


def neighbours(cfg, nt):
    r, u, w, p = cfg
    out = [(r, u, max(1, w // 2), p), (r, u, 2 * w, p)]
    out += [(r2, u2, w, p2) for r2, u2, p2 in FOLD_CODES[nt] if (r2, u2, p2) != (r, u, p)]
    return [c for c in dict.fromkeys(out) if c != cfg]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    lib = cuda_ext.load()
    rows: list[dict] = []
    lines: list[str] = []
    for n, k in SHAPES:
        packs, _, w16, ref_w = cold_layers(n, k, with_reference=True)
        wq = packs[0].qweight.numel() * packs[0].qweight.element_size()
        nbuf, nb16 = len(packs), len(w16)
        for m in MS:
            case = f"M={m} {n}x{k}"
            nt = 1 if m <= 8 else 2
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            want = xs[0].float() @ ref_w.t()
            base = base_config(lib, xs[0], packs[0])
            fns = {"bf16 F.linear": lambda i: F.linear(xs[i % 4], w16[i % nb16]),
                   "auto": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf])}
            for fold in (0, 1):
                fns[f"reg f{fold}"] = lambda i, c=base + (fold,): ops.cuda_gemv(xs[i % 4], packs[i % nbuf], config=c)
            for cfg in neighbours(base, nt):
                fns["R{} U{} W{} P{} f1".format(*cfg)] = (
                    lambda i, c=cfg + (1,): ops.cuda_gemv(xs[i % 4], packs[i % nbuf], config=c))

            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"{case:>18}  ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16), reps=args.reps, target_replay_us=400.0)
            print(f"{case:>18}  reg config (R U W pipe) = {base}", flush=True)
            record_gbps_rows(res, rows, case, wq, m=m, n=n, k=k, int4_bytes=wq, base_config=base)
            us = {nm: r["median_us"] for nm, r in res.items()}
            folded = {nm: v for nm, v in us.items() if nm.endswith(" f1")}
            if folded and "reg f0" in us:
                b = min(folded, key=folded.get)
                f0 = us["reg f0"]
                lines.append(f"FOLD {case:>18}: {b:<20} {folded[b]:7.2f} us | reg f0 {f0:7.2f} (x{f0 / folded[b]:.3f})"
                             f" | f1 {us.get('reg f1', float('nan')):7.2f}"
                             f" | auto {us.get('auto', float('nan')):7.2f} | bf16 {us.get('bf16 F.linear', float('nan')):7.2f}")
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    print()
    for ln in lines:
        print(ln)
    write_results("w4fold", rows, env_info(), args.out, metric="median_us")


if __name__ == "__main__":
    main()
