"""The one-launch FP8 block decode kernel (backend "cuda", issue 4) against the committed auto path,
whole op ``fp8_block_linear(x, w, wsi, backend=...)`` with COLD weights (copies rotated past L2).

    python benchmarks/bench_fp8_cuda.py [--out DIR] [--ms 1 4 8 12 16] [--quick] [--family register|ring|all]

Per (M, shape): the committed auto dispatch ("auto"), the Triton path forced ("triton"), "cuda"
with the committed FP8_CUDA_CONFIG entry ("cuda:table[code]") and with each candidate code
G*10000000 + Q*1000000 + S*10000 + R*1000 + PF*100 + W (csrc/fp8_gemv_launch.h; Q = 1: x quantized by
per_token_group_quant_fp8 first, the GEMM launched with PDL reads the codes; PF = 2, 3: deeper register
prefetch; G = 2..9: the shared-memory cp.async ring of G stages per warp); graph replays of all
candidates of a case alternated. ``--family``: "register" (the PF candidates, the default), "ring"
(ring candidates plus the previous sweep's register winners as anchors) or "all". One line per
measurement: ``FP8CUDA M=.. NxK impl us (floor us, GB/s)``, floor = weight bytes at the measured
copy ceiling (the copy kernel's read+write rate; a read-only stream is bounded by about the same
rate). Then ``BEST`` per case (best "cuda" code, best register / ring and best pre-quantized, vs auto
and triton), the merged 2112-row / (1536 + 576) ratio of the best times, ``SET`` lines (per shape
and M the code to put in FP8_CUDA_CONFIG when it beats both auto and triton by >= 2 %, else
"triton") and ``SET FP8_CUDA_MAX_M`` / ``SET FP8_CUDA_CONFIG``: the two tables as Python literals
(cuda from M = 1 up to the first swept M where it does not win).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384), (1536, 7168), (576, 7168)]


def candidates(m: int, n: int, k: int, quick: bool) -> list[int]:
    """Launch codes to sweep at M = m (configs that lost by > 20 % in fp8cuda_r1 are gone): one /
    two / four row tiles per CTA by M bucket, PF = 1 vs deeper prefetch (PF 2, 3), K split over
    CTAs where the shape has few tiles; pre-quantized x (Q = 1) from M = 4."""
    tiles = -(-n // 16)
    inkernel = [11116, 11216, 11312, 21108, 21208]
    if tiles < 264:  # few tiles: split K over CTAs
        inkernel += [41108, 41208, 81104]
    if m > 4:
        inkernel += [12108, 12208]
    if m > 8:
        inkernel += [14008, 24004, 42108]
    preq = []
    if m >= 4:
        preq = [1011116, 1011216, 1011312, 1021108, 1021208]
        if tiles < 264:
            preq += [1041108, 1041208]
    if quick:
        inkernel, preq = inkernel[:3], preq[:2]
    return inkernel + preq


SMS = 132  # H200


def _code(g: int, q: int, s: int, r: int, w: int) -> int:
    return g * 10000000 + q * 1000000 + s * 10000 + r * 1000 + w


def ring_candidates(m: int, n: int, k: int) -> list[int]:
    """Ring codes for M = m: per R (1, 2; 4 from M = 5, where sharing x's quantization over 4 row
    tiles pays) and W warps per CTA, the smallest K split S that gives every SM a CTA and >= 8
    resident warps per SM worth of work, each warp >= 2 k-blocks; G = enough stages for 3 and for 6
    k-blocks in flight (capped by the warp's block count). Pre-quantized x (Q = 1) at the smaller G
    from M = 9. Codes the launcher refuses (warp cap, shared memory) are dropped by the caller."""
    tiles, kb = -(-n // 16), k // 128
    out: list[int] = []
    for r in (1, 2, 4):
        if r == 4 and m <= 4:
            continue
        tg = -(-tiles // r)
        for w in (1, 2, 4, 8, 14):
            for s in (1, 2, 4, 8, 16, 32):
                bpw = -(-(-(-kb // s)) // w)
                if bpw < 2:
                    break
                if tg * s >= SMS and tg * s * w >= 8 * SMS:
                    gs = sorted({min(bpw, 3) + 1, min(bpw, 6) + 1})
                    out += [_code(g, 0, s, r, w) for g in gs]
                    if m > 8:
                        out.append(_code(gs[0], 1, s, r, w))
                    break
    return out


# register-path winners of the session-5 sweeps (fp8cuda_r1 / r2), anchors for the ring sweep
REGISTER_ANCHORS = [11116, 41108, 1011116, 1041108]
REGISTER_ANCHORS_TWO_TILES = [14008, 24004, 42108]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 4, 8, 12, 16])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--family", choices=("register", "ring", "all"), default="register")
    ap.add_argument("--name", default="fp8_cuda", help="results file name (JSON)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--replay-us", type=float, default=1000.0)
    args = ap.parse_args()
    if not cuda_ext.is_available():
        print(f"FP8CUDA extension unavailable: {cuda_ext.failure_reason()}")
        sys.exit(1)
    C = cuda_ext.load()
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    print(f"FP8CUDA copy ceiling {ceiling:.0f} GB/s (read+write)", flush=True)
    rows, best, base = [], {}, {}
    saved = ops.FP8_CUDA_CONFIG
    for n, k in SHAPES:
        copies = buffers_to_defeat_l2(n * k, max_buffers=24)
        ws = [(torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn) for _ in range(copies)]
        ss = [torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8 for _ in range(copies)]
        floor_us = n * k / (ceiling * 1e9) * 1e6
        for m in args.ms:
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            ref = ops.fp8_block_linear(x, ws[0], ss[0], backend="triton").float()

            def make(backend, code=None):
                def fn(i):
                    if code is not None:
                        ops.FP8_CUDA_CONFIG = code
                    try:
                        return ops.fp8_block_linear(x, ws[i % copies], ss[i % copies], backend=backend)
                    finally:
                        ops.FP8_CUDA_CONFIG = saved
                return fn

            wsp = ops._cuda_workspace(x.device)
            q, s = ops.per_token_group_quant_fp8(x, 128)
            fns = {"auto": make(None), "triton": make("triton")}
            table = ops._cuda_config(m, n, k)
            fns[f"cuda:table[{C.fp8_block_gemv_resolve(x, ws[0], ss[0], wsp, table)}]"] = make("cuda")
            codes = []
            if args.family in ("register", "all"):
                codes += candidates(m, n, k, args.quick)
            if args.family in ("ring", "all"):
                codes += [c for c in REGISTER_ANCHORS + (REGISTER_ANCHORS_TWO_TILES if m > 8 else [])
                          if c not in codes]
                codes += ring_candidates(m, n, k)
            for code in dict.fromkeys(codes):
                xa, extra = (q, (s,)) if (code // 1000000) % 10 == 1 else (x, ())
                if C.fp8_block_gemv_supported(xa, ws[0], ss[0], wsp, code, *extra) == 0:
                    fns[f"cuda:{code}"] = make("cuda", code)
            errs = {name: ((fn(0).float() - ref).norm() / ref.norm()).item() for name, fn in fns.items()}
            res = bench_graphs_interleaved(fns, n_buffers=copies, reps=args.reps, target_replay_us=args.replay_us)
            for name, t in res.items():
                us = t["median_us"]
                gbs = n * k / (us * 1e-6) / 1e9
                flag = " ERR" if errs[name] > 1e-2 else ""
                print(f"FP8CUDA M={m:<2d} {n}x{k} {name:<20s} {us:6.2f} us (floor {floor_us:.1f} us, {gbs:.0f} GB/s)"
                      f"{flag}", flush=True)
                rows.append(dict(case=f"M={m} {n}x{k}", impl=name, us=us, p20_us=t["p20_us"], p80_us=t["p80_us"],
                                 floor_us=floor_us, gbs=gbs, rel_err_vs_triton=errs[name]))
                if name.startswith("cuda:") and errs[name] <= 1e-2 and not name.startswith("cuda:table"):
                    c = int(name[5:])
                    kinds = ["any", "preq" if (c // 1000000) % 10 == 1 else "inkernel",
                             "ring" if c >= 10000000 else "register"]
                    for key in ((m, n, k, kind) for kind in kinds):
                        if key not in best or us < best[key][0]:
                            best[key] = (us, name[5:])
            base[(m, n, k)] = (res["auto"]["median_us"], res["triton"]["median_us"])
            b = best.get((m, n, k, "any"))
            if b:
                bi = best.get((m, n, k, "inkernel"), (float("nan"), "-"))
                bp = best.get((m, n, k, "preq"), (float("nan"), "-"))
                bg = best.get((m, n, k, "register"), (float("nan"), "-"))
                br = best.get((m, n, k, "ring"), (float("nan"), "-"))
                au, tr = base[(m, n, k)]
                print(f"FP8CUDA M={m:<2d} {n}x{k} BEST {b[1]} {b[0]:.2f} us = {au / b[0]:.3f}x auto, "
                      f"{tr / b[0]:.3f}x triton (auto {au:.2f}, triton {tr:.2f}; register {bg[1]} {bg[0]:.2f}, "
                      f"ring {br[1]} {br[0]:.2f}; in-kernel {bi[1]} {bi[0]:.2f}, pre-quantized {bp[1]} "
                      f"{bp[0]:.2f}; {n * k / (b[0] * 1e3):.0f} GB/s)", flush=True)
        del ws, ss
        torch.cuda.empty_cache()
    for m in args.ms:
        try:
            merged = min(best[(m, 2112, 7168, "any")][0], *base[(m, 2112, 7168)])
            sep = min(best[(m, 1536, 7168, "any")][0], *base[(m, 1536, 7168)]) + \
                min(best[(m, 576, 7168, "any")][0], *base[(m, 576, 7168)])
        except KeyError:
            continue
        print(f"FP8CUDA M={m:<2d} merged/separate (best of cuda/auto/triton) {merged:.2f} / {sep:.2f} = "
              f"{merged / sep:.3f}", flush=True)
        rows.append(dict(case=f"M={m} merged/separate", impl="best", ratio=merged / sep))
    # what to set: per shape the cuda code per M where it beats auto and triton by >= 2 %
    max_m_table: dict = {}
    config_table: dict = {}
    for n, k in SHAPES:
        picks, wins = [], []
        for m in args.ms:
            b = best.get((m, n, k, "any"))
            if b is None or (m, n, k) not in base:
                continue
            other = min(base[(m, n, k)])
            win = b[0] < 0.98 * other
            # a cuda auto entry that this sweep's codes do not beat still counts as cuda at that code
            picks.append(f"M={m}: {b[1]} {b[0]:.2f} us" if win else f"M={m}: triton/auto {other:.2f} us")
            wins.append((m, int(b[1]) if win else None))
        print(f"FP8CUDA SET {n}x{k}  " + "  |  ".join(picks), flush=True)
        # cuda for M = 1 .. the last swept M before the first that does not win
        entries = []
        for m, code in wins:
            if code is None:
                break
            entries.append((m, code))
        max_m_table[(n, k)] = entries[-1][0] if entries else 0
        config_table[(n, k)] = tuple(entries)
        rows.append(dict(case=f"SET {n}x{k}", impl="proposal", max_m=max_m_table[(n, k)], config=entries))
    max_m_table[None] = 0
    config_table[None] = 0
    print(f"FP8CUDA SET FP8_CUDA_MAX_M = {max_m_table!r}", flush=True)
    print(f"FP8CUDA SET FP8_CUDA_CONFIG = {config_table!r}", flush=True)
    write_results(args.name, rows, {**env_info(), "weights": "cold (copies rotated past L2)",
                                    "copy_ceiling_gbps": ceiling, "family": args.family}, args.out, metric="us")


if __name__ == "__main__":
    main()
