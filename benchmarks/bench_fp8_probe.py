"""FP8 block layer forward at decode (issue 4): today's path vs the swap-AB kernels, cold weights.

For N x K in {2112 x 7168, 24576 x 1536, 7168 x 16384} and M in {1, 4, 16} times the whole
``fp8_block_linear_triton`` (activation quantization included) with CUDA-graph replay, rotating
``buffers_to_defeat_l2(N * K)`` weight copies (<= 24) so consecutive calls touch >= 3x L2: every
call reads its weights from HBM, as a decode step does. In priority order, until ``--budget-s``:
  1. "today"  (QLINEAR_FP8_SMALL_M=split: quantization kernel + split-K GEMM, GEMM_CONFIGS) and
     "table"  (=swapab: SWAP_AB_CONFIGS / the swap-AB heuristic) at every point;
  2. the merged 2112-row layer vs the two separate ones (1536 + 576 rows, each its own weights,
     the default config for its shape) on both paths;
  3. a sweep of explicit swap-AB configs per shape (fused quantization unless named "swap ...").
Every config's first output is checked against today's (rel. error <= 1e-2) before it is timed.
Prints one line per point, then BEST lines (the config to commit per shape and M) and the
SWAP_AB_CONFIGS entries they imply; writes fp8small.json to --out.

    python benchmarks/bench_fp8_probe.py --out DIR [--budget-s 90]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear._utils import FP8_E4M3, cdiv  # noqa: E402
from qlinear.kernels import fp8_triton as kern  # noqa: E402

MS = (1, 4, 16)
SHAPES = ((2112, 7168), (24576, 1536), (7168, 16384))
SEPARATE = (1536, 576)  # the two layers the merged 2112-row one replaces


def _S(bn, split, warps=4, stages=4, fuse=True, bm=16):
    return kern.GemmConfig(bm, bn, split, warps, stages, swap_ab=True, fuse_quant=fuse)


# Candidates per shape, most likely first (K blocks: 56 / 12 / 128; programs = N tiles x split).
SWEEP = {
    (2112, 7168): [_S(64, 4, 4, 4), _S(64, 8, 4, 4), _S(64, 8, 4, 3), _S(128, 8, 4, 4), _S(32, 4, 4, 6),
                   _S(64, 2, 4, 8), _S(64, 4, 4, 6, fuse=False), _S(64, 4, 4, 6, bm=8), _S(64, 4, 8, 6)],
    (24576, 1536): [_S(128, 2, 4, 4), _S(64, 1, 4, 4), _S(256, 1, 8, 3), _S(256, 2, 8, 3), _S(256, 1, 4, 3),
                    _S(128, 1, 4, 3), _S(128, 1, 4, 4, fuse=False), _S(128, 1, 4, 4, bm=8)],
    (7168, 16384): [_S(128, 4, 4, 4), _S(128, 7, 4, 4), _S(64, 2, 4, 4), _S(64, 4, 4, 4), _S(256, 5, 8, 3),
                    _S(256, 9, 8, 3), _S(128, 5, 4, 6), _S(128, 5, 4, 4, fuse=False)],
}


def _weights(n: int, k: int, copies: int, seed: int = 0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    out = []
    for _ in range(copies):
        w = (torch.randn(n, k, device="cuda", generator=g) * 60).to(FP8_E4M3)
        s = torch.rand(cdiv(n, 128), cdiv(k, 128), device="cuda", generator=g) * 1e-3 + 1e-4
        out.append((w, s))
    return out


class Path_:
    """Sets QLINEAR_FP8_SMALL_M for the duration of a timing (read at each launch, also while
    the graph is captured; replay needs nothing)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        os.environ["QLINEAR_FP8_SMALL_M"] = self.path

    def __exit__(self, *exc):
        os.environ.pop("QLINEAR_FP8_SMALL_M", None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=90.0)
    args = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps(1 << 28)
    rows: list[dict] = []
    data: dict = {}

    def over() -> bool:
        return time.time() - t0 > args.budget_s

    def get(n, k, m):
        """(weight copies, activation copies) for a shape / M, built once."""
        if (n, k) not in data:
            nw = buffers_to_defeat_l2(n * k, max_buffers=24)
            data[(n, k)] = {"w": _weights(n, k, nw, seed=n + k)}
        d = data[(n, k)]
        if m not in d:
            nx = buffers_to_defeat_l2(2 * m * k, max_buffers=8)
            d[m] = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(nx)]
        return d["w"], d[m]

    def point(n, k, m, impl, cfg=None, path="split", check=True):
        ws, xs = get(n, k, m)
        nb = max(len(ws), len(xs))
        fn = lambda i: kern.fp8_block_linear_triton(xs[i % len(xs)], *ws[i % len(ws)], config=cfg)  # noqa: E731
        base = {"shape": f"{n}x{k}", "n": n, "k": k, "m": m, "impl": impl, "path": path,
                "config": None if cfg is None else cfg.__dict__, "weight_copies": len(ws),
                "weight_floor_us": n * k / (ceiling * 1e3)}
        try:
            if check:
                with Path_("split"):
                    want = kern.fp8_block_linear_triton(xs[0], *ws[0]).float()
            with Path_(path):
                if check:
                    got = fn(0).float()
                    rel = ((got - want).norm() / want.norm()).item()
                    if not rel <= 1e-2:
                        raise AssertionError(f"rel err {rel:.3g} vs today's path")
                r = bench_graph(fn, n_buffers=nb)
        except Exception as exc:  # a config that does not compile / fit / agree: record, go on
            msg = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            rows.append({**base, "error": msg})
            print(f"{n:>6}x{k:<6} M={m:<3} {impl:<40} FAIL {msg}", flush=True)
            return None
        info = ""
        ck = kern._LAST_SWAPAB if cfg is not None or path == "swapab" else None
        if ck is not None:  # shared memory shows whether the weight loads were software-pipelined
            meta = getattr(ck, "metadata", None)
            base.update(smem=getattr(meta, "shared", None), regs=getattr(ck, "n_regs", None),
                        spills=getattr(ck, "n_spills", None))
            info = f" smem {base['smem']} regs {base['regs']} spills {base['spills']}"
            kern._LAST_SWAPAB = None
        rows.append({**base, "us": r["median_us"], **r})
        print(f"{n:>6}x{k:<6} M={m:<3} {impl:<40} {r['median_us']:8.2f} us (p20 {r['p20_us']:.2f} p80 "
              f"{r['p80_us']:.2f}) floor {base['weight_floor_us']:.2f}{info} t={time.time() - t0:.0f}s", flush=True)
        return r["median_us"]

    # 1. today's path and the swap-AB table at every point
    for n, k in SHAPES:
        for m in MS:
            point(n, k, m, "today (split, GEMM_CONFIGS)", path="split", check=False)
            point(n, k, m, "table (swapab, SWAP_AB_CONFIGS)", path="swapab")
    # 2. merged vs separate (each path's default configs)
    ratios = []
    for m in MS:
        if over():
            break
        for path in ("split", "swapab"):
            merged = [r["us"] for r in rows if r["n"] == 2112 and r["m"] == m and r.get("path") == path
                      and "us" in r and r["config"] is None]
            sep = [point(n, 7168, m, f"separate {n} rows ({path})", path=path) for n in SEPARATE]
            if merged and None not in sep:
                ratio = merged[0] / sum(sep)
                ratios.append({"m": m, "path": path, "merged_us": merged[0], "separate_us": sum(sep), "ratio": ratio})
                print(f"RATIO M={m:<3} {path:<7} merged {merged[0]:.2f} / separate {sum(sep):.2f} = {ratio:.3f}"
                      f" (target <= 0.6)", flush=True)
    # 3. the sweep, shape by shape, every M of a config before the next config
    stopped = None
    for n, k in SHAPES:
        for cfg in SWEEP[(n, k)]:
            for m in MS:
                if over():
                    stopped = stopped or f"{n}x{k} {cfg.short()} M={m}"
                    break
                point(n, k, m, cfg.short(), cfg=cfg, path="swapab")
    if stopped:
        print(f"budget reached: sweep stopped at {stopped}", flush=True)

    print("---- BEST per shape / M (whole layer, cold weights)")
    entries = {}
    for n, k in SHAPES:
        for m in MS:
            cand = [r for r in rows if r["n"] == n and r["k"] == k and r["m"] == m and "us" in r]
            if not cand:
                continue
            today = next((r["us"] for r in cand if r["impl"].startswith("today")), float("nan"))
            b = min(cand, key=lambda r: r["us"])
            cfg = b["config"] if b["config"] is not None else (
                kern.default_gemm_config(m, n, k).__dict__ if b["path"] == "split" else None)
            print(f"BEST {n}x{k} M={m:<3} {b['impl']:<40} {b['us']:8.2f} us  today {today:.2f} us  "
                  f"floor {b['weight_floor_us']:.2f}  config {cfg}")
            if b["config"] is not None:
                entries.setdefault((n, k), []).append((m, b["config"]))
    print("---- SWAP_AB_CONFIGS entries implied (max_m, config) where a swept swap-AB config won:")
    for (n, k), lst in entries.items():
        body = ", ".join(f"({m}, _G({c['block_m']}, {c['block_n']}, {c['split_k']}, {c['num_warps']}, "
                         f"{c['num_stages']}, swap_ab=True, fuse_quant={c['fuse_quant']}))" for m, c in lst)
        print(f"    ({n}, {k}): ({body}),")
    meta = {**env_info(), "copy_ceiling_gbps": ceiling, "ratios": ratios, "stopped": stopped,
            "timing": "CUDA graph replay, median of 30; weight copies rotated past 3x L2 (cold)"}
    write_results("fp8small", rows, meta, args.out, metric="us")
    print(f"wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
