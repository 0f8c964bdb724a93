"""W4A16 register decode kernel: launch configs for the cases the dispatch table sends to it
(``_CUDA_RING_AUTO`` = -1), against its automatic config, the committed dispatch and bf16, all
candidates of a case in one alternated-replay measurement, weights cold (rotated copies).

Cases: 7168x16384 at M = 1, 2, 4, 8, 16; 2112x7168 and 24576x1536 at M = 1, 4, 8, 16 (int4 group 128,
bf16 activations; ``--layer`` asym-bf16 (default) or sym-fp16, bench_w4a16.LAYER_KINDS). Candidates: bf16 ``F.linear`` first (the first candidate of an alternation
round reads slow), a second copy of "reg auto" ("reg auto#2") to show that position effect,
"auto" (the committed dispatch), "reg auto" (``ring=-1``, the launcher's config), its PDL-off
variant, and every (R, U, W, pipe) of ``REG_CONFIGS`` that is compiled.
Prints one line per candidate, ``BEST case: config us vs reg auto`` and a ``SET`` line with the
``_CUDA_REG_AUTO`` table (per shape class and tiles 0 = M 1, 1 = M 2..8, 2 = M 9..16: the config
with the lowest summed time where it beats "reg auto" by > 2 %).
``--xs``: the x-staged kernel (pipe 3, csrc/w4a16_xs.cuh) instead: every compiled code x ``XS_WARPS`` x
fold 0 / 1 ("xs R U W F"), on the shapes of ``--shapes`` (default 24576x1536) at ``--ms`` (default 9 12
16), against the committed dispatch ("auto") and its register config; BEST lines as above.
    python benchmarks/bench_w4reg.py --out DIR [--reps 15] [--ms 16] [--xs [--shapes NxK ...]]
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

CASES = {(7168, 16384): [1, 2, 4, 8, 16], (2112, 7168): [1, 4, 8, 16], (24576, 1536): [1, 4, 8, 16]}
# (row tiles, superblocks per chunk, warps, pipe) per token-tile count, from the compiled codes
# (w4a16_gemv.cuh kRegCodes: NT 1 R1U2, R1U4, R2U2, R4U1, R1U2 pipe, R1U1 pipe, R4U1 pipe; NT 2 R1U2,
# R2U1, R1U1 pipe, R2U1 pipe, R4U1); a warp count over the code's limit is refused and skipped.
# pipe 2 = the pipe 0 instance with chunks dealt round-robin over the warps; a 5th element 1 = the
# zero-point fold (kRegFoldCodes only)
REG_CONFIGS = {1: [(1, 2, 2, 0), (1, 2, 4, 0), (1, 2, 8, 0), (1, 2, 16, 0), (1, 4, 2, 0), (1, 4, 4, 0), (1, 4, 8, 0),
                   (2, 2, 4, 0), (2, 2, 8, 0), (4, 1, 4, 0), (4, 1, 8, 0), (1, 2, 4, 1), (1, 1, 4, 1), (1, 1, 8, 1),
                   (1, 1, 16, 1), (4, 1, 4, 1),
                   (1, 2, 2, 2), (1, 2, 4, 2), (1, 2, 8, 2), (1, 2, 16, 2), (1, 4, 4, 2), (1, 4, 8, 2), (4, 1, 4, 2),
                   (4, 1, 8, 2), (1, 2, 4, 0, 1), (1, 2, 4, 2, 1), (1, 2, 16, 0, 1), (1, 2, 16, 2, 1),
                   (4, 1, 2, 2), (4, 1, 3, 2), (4, 1, 6, 2), (2, 2, 2, 2), (2, 2, 4, 2), (2, 2, 6, 2), (4, 1, 4, 2, 1),
                   (1, 2, 12, 2), (1, 2, 14, 2), (1, 2, 14, 2, 1)],
               2: [(2, 1, 2, 0), (2, 1, 4, 0), (2, 1, 8, 0), (1, 2, 4, 0), (1, 2, 8, 0), (1, 1, 4, 1), (1, 1, 8, 1),
                   (2, 1, 4, 1), (2, 1, 8, 1), (4, 1, 4, 0), (4, 1, 8, 0),
                   (2, 1, 2, 2), (2, 1, 4, 2), (4, 1, 8, 2), (2, 1, 2, 0, 1), (2, 1, 2, 2, 1)]}


XS_WARPS = (4, 6, 8, 12)


def xs_configs(zeros: bool) -> list[tuple[int, ...]]:
    """(R, U, W, 3, fold) for every compiled x-staged code and XS_WARPS (fold 1 only with zero points; a
    warp count past the code's cap is refused and skipped)."""
    out = []
    for code in cuda_ext.load().w4a16_xs_configs():
        r, u, pipe = code // 1000, code // 100 % 10, code % 10
        for w in XS_WARPS:
            for f in ((0, 1) if zeros else (0,)):
                out.append((r, u, w, pipe, f))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--layer", choices=sorted(LAYER_KINDS), default="asym-bf16", help="bench_w4a16.LAYER_KINDS")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--ms", type=int, nargs="+", default=None, help="only these M of CASES")
    ap.add_argument("--xs", action="store_true", help="the x-staged kernel's configs (pipe 3)")
    ap.add_argument("--shapes", nargs="+", default=["24576x1536"], help="--xs: NxK shapes")
    args = ap.parse_args()
    if args.xs:
        return main_xs(args)
    cuda_ext.load()
    rows: list[dict] = []
    sums: dict[tuple[str, int], dict[str, float]] = {}
    lines: list[str] = []
    for (n, k), ms in CASES.items():
        ms = [m for m in ms if args.ms is None or m in args.ms]
        if not ms:
            continue
        cls = ops._cuda_shape_class(n, k)
        packs, wb, w16, ref_w = cold_layers(n, k, with_reference=True, layer=args.layer)
        nbuf, nb16 = len(packs), len(w16)
        nall = max(nbuf, nb16)
        for m in ms:
            case = f"M={m} {n}x{k}"
            nt = 1 if m <= 8 else 2
            tiles = 0 if m == 1 else nt
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            want = xs[0].float() @ ref_w.t()
            fns = {"bf16 F.linear": lambda i: F.linear(xs[i % 4], w16[i % nb16]),
                   "reg auto#2": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], ring=-1),
                   "auto": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf]),
                   "reg auto": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], ring=-1),
                   "reg auto nopdl": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], ring=-1, pdl=False)}
            for cfg in REG_CONFIGS[nt]:
                fns["reg R{} U{} W{} P{}".format(*cfg) + (" F1" if len(cfg) > 4 and cfg[4] else "")] = (
                    lambda i, c=cfg: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], config=c))

            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"{case:>18}  ")
            res = bench_graphs_interleaved(ok, n_buffers=nall, reps=args.reps, target_replay_us=400.0)
            record_gbps_rows(res, rows, case, wb, m=m, n=n, k=k, weight_bytes=wb)
            regs = {nm: r["median_us"] for nm, r in res.items() if nm.startswith("reg R")}
            base = res["reg auto"]["median_us"]
            if regs:
                b = min(regs, key=regs.get)
                lines.append(f"BEST {case:>18}: {b:<18} {regs[b]:7.2f} us | reg auto {base:7.2f} (x{base / regs[b]:.3f})"
                             f" | reg auto#2 {res['reg auto#2']['median_us']:7.2f} | auto {res['auto']['median_us']:7.2f}"
                             f" | nopdl {res['reg auto nopdl']['median_us']:7.2f} | bf16 {res['bf16 F.linear']['median_us']:7.2f}")
            d = sums.setdefault((cls, tiles), {})
            for nm, us in list(regs.items()) + [("reg auto", base), ("auto", res["auto"]["median_us"])]:
                d[nm] = d.get(nm, 0.0) + us
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    print()
    for ln in lines:
        print(ln)
    table = {}
    for key, d in sums.items():
        regs = {nm: us for nm, us in d.items() if nm.startswith("reg R")}
        if not regs:
            continue
        b = min(regs, key=regs.get)
        print(f"CLASS {key}: {b} {regs[b]:.2f} us summed vs reg auto {d['reg auto']:.2f}, auto (the table) {d['auto']:.2f}"
              f" (ring table entry {ops._CUDA_RING_AUTO.get(key)})")
        if regs[b] < min(d["reg auto"], d["auto"]) / 1.02:
            table[key] = tuple(int(v[1:]) for v in b.split()[1:])
            if ops._CUDA_RING_AUTO.get(key, 0) != -1:
                print(f"RING {key}: set _CUDA_RING_AUTO[{key}] = -1 for this register config")
    print(f"SET qlinear/ops/w4a16.py: _CUDA_REG_AUTO = {table!r}")
    write_results("w4reg", rows, {**env_info(), "layer": args.layer}, args.out, metric="median_us")


def main_xs(args) -> None:
    cuda_ext.load()
    rows: list[dict] = []
    lines: list[str] = []
    for shape in args.shapes:
        n, k = (int(v) for v in shape.split("x"))
        packs, wb, w16, ref_w = cold_layers(n, k, with_reference=True, layer=args.layer)
        nbuf, nb16 = len(packs), len(w16)
        for m in args.ms or [9, 12, 16]:
            case = f"M={m} {n}x{k}"
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            want = xs[0].float() @ ref_w.t()
            reg = ops._cuda_auto_reg(xs[0], packs[0])
            fns = {"bf16 F.linear": lambda i: F.linear(xs[i % 4], w16[i % nb16]),
                   "auto#2": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf]),
                   "auto": lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf])}
            if reg is not None:
                fns[f"reg {reg}"] = lambda i: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], config=reg)
            for cfg in xs_configs(packs[0].zeros is not None):
                fns["xs R{} U{} W{} P{} F{}".format(*cfg)] = (
                    lambda i, c=cfg: ops.cuda_gemv(xs[i % 4], packs[i % nbuf], config=c))
            ok = runnable(fns, rel_err_check(want, skip=("bf16 F.linear",)), f"{case:>18}  ")
            res = bench_graphs_interleaved(ok, n_buffers=max(nbuf, nb16), reps=args.reps, target_replay_us=400.0)
            record_gbps_rows(res, rows, case, wb, m=m, n=n, k=k, weight_bytes=wb)
            cand = {nm: r["median_us"] for nm, r in res.items() if nm.startswith("xs ")}
            if cand:
                b = min(cand, key=cand.get)
                a = res["auto"]["median_us"]
                lines.append(f"BEST {case:>18}: {b:<16} {cand[b]:7.2f} us | auto {a:7.2f} (x{a / cand[b]:.3f})"
                             f" | auto#2 {res['auto#2']['median_us']:7.2f}"
                             f" | bf16 {res['bf16 F.linear']['median_us']:7.2f}")
        del packs, w16, ref_w
        torch.cuda.empty_cache()
    print()
    for ln in lines:
        print(ln)
    write_results("w4xs", rows, {**env_info(), "layer": args.layer}, args.out, metric="median_us")


if __name__ == "__main__":
    main()
