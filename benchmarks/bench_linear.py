"""Whole-layer forward of a quantized MergedReplicatedLinear on the shapes of issue 4 / 5.

    python benchmarks/bench_linear.py --format fp8-block [--out DIR] [--quick]
    python benchmarks/bench_linear.py --format w4a16          # symmetric GPTQ; w4a16-asym: zero points

Times ``layer(x)`` (activation quantization and every launch included, CUDA-graph replay) for
M in {1, 2, 4, 16, 64, 128, 1024, 4096} on N x K in {2112 x 7168, 24576 x 1536, 7168 x 16384},
against, in the same run: bf16 ``F.linear`` (cuBLAS), and per format the anchor named in its
issue (fp8-block: ``torch._scaled_mm`` blockwise with the same activation quantization, through
``fp8_block_linear(backend="scaled_mm")``; w4a16: torch's tinygemm ``_weight_int4pack_mm`` when
``benchmarks/bench_w4a16.py`` provides it). For N x K = 2112 x 7168 it also times the two
separate layers (1536 and 576 rows) that the merged one replaces.
Writes ``linear_<format>.json`` + ``.png`` (µs per call) to ``--out`` (default benchmarks/results).

``--weights cold`` (the default) rotates every timed operand through enough copies of its weights
that consecutive calls touch >= 3x the L2 size, as a decode step does (each layer's weights are
read once per token, and a model's weights do not fit in L2). ``--weights hot`` reuses one copy, so
weights up to ~L2 size stay resident: that is a kernel's best case, not a decode step.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _layers import build_layer  # noqa: E402
from _timing import (  # noqa: E402
    bench_graphs_interleaved, bench_rotated, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, rotated, runnable,
    write_results,
)

MS = [1, 2, 4, 16, 64, 128, 1024, 4096]
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
SPLIT = {(2112, 7168): [1536, 576]}


def weight_bytes(fmt: str, n: int, k: int) -> int:
    return {"bf16": 2 * n * k, "fp8-block": n * k, "w4a16": n * k // 2, "w4a16-asym": n * k // 2}[fmt]


def rotated_inputs(m: int, k: int) -> list[torch.Tensor]:
    """bf16 ``[m, k]`` input sets, enough that consecutive calls do not find x in L2."""
    nx = buffers_to_defeat_l2(2 * m * k, max_buffers=8)
    return [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(nx)]


def time_layer(fns, m: int, k: int) -> dict:
    """Time ``fns[i % len(fns)](x_i)``: ``fns`` is one callable or one per weight copy."""
    return bench_rotated(fns, rotated_inputs(m, k))


def time_case(cands: dict, m: int, k: int, how: str) -> dict[str, dict]:
    """Time every candidate of one case (``{name: fns}``, ``fns`` one callable per weight copy) on the
    same rotated inputs. ``how``: "interleaved" alternates single graph replays of all candidates
    (each after an untimed replay of the same graph: :func:`_timing.bench_graphs_interleaved`), so a
    candidate and its anchors see the same clocks; "sequential" times one candidate after the other
    (the method of the acceptance files before session 9). A candidate that raises (an anchor that
    refuses a shape) gets ``{"error": ...}``."""
    xs = rotated_inputs(m, k)
    errors: dict[str, str] = {}
    if how == "sequential":
        out = {}
        for name, fns in cands.items():
            try:
                out[name] = bench_rotated(fns, xs)
            except Exception as exc:  # noqa: BLE001 - recorded in the results
                out[name] = {"error": repr(exc)[:200]}
        return out
    fns = {name: rotated(f, xs) for name, f in cands.items()}
    ok = runnable({name: fn for name, (fn, _) in fns.items()},
                  on_error=lambda name, exc: errors.__setitem__(name, repr(exc)[:200]))
    n_buffers = max(fns[name][1] for name in ok) if ok else 1
    res = bench_graphs_interleaved(ok, n_buffers=n_buffers, reps=30) if ok else {}
    return {name: ({"error": errors[name]} if name in errors else
                   {key: v for key, v in res[name].items() if key != "samples_us"}) for name in cands}


def weight_copies(args, nbytes: int) -> int:
    """How many copies of a weight of ``nbytes`` to rotate through (1 with ``--weights hot``)."""
    return 1 if args.weights == "hot" else buffers_to_defeat_l2(nbytes, max_buffers=24)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", choices=["fp8-block", "w4a16", "w4a16-asym", "bf16"], required=True,
                    help="w4a16: symmetric GPTQ (the acceptance runs); w4a16-asym: GPTQ with zero points")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="fewer M values")
    ap.add_argument("--ms", type=int, nargs="+", default=None, help="these M values only")
    ap.add_argument("--weights", choices=["cold", "hot"], default="cold",
                    help="cold: rotate weight copies past L2 (a decode step); hot: one copy, L2-resident when it fits")
    ap.add_argument("--timing", choices=["interleaved", "sequential"], default="interleaved",
                    help="interleaved: graph replays of a case's candidates alternated (same clocks for all); "
                         "sequential: one candidate after the other")
    ap.add_argument("--pdl-ab", action="store_true",
                    help="for M <= 128 also time the layers with QLINEAR_PDL=off and =early (the default is late)")
    args = ap.parse_args()
    ms = args.ms or ([1, 16, 128, 4096] if args.quick else MS)
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    rows = []
    tinygemm = None
    if args.format.startswith("w4a16"):
        try:
            import bench_w4a16  # the op benchmark knows how to pack for tinygemm

            tinygemm = getattr(bench_w4a16, "make_tinygemm", None)
        except ImportError:
            tinygemm = None
    for n, k in SHAPES:
        nw = weight_copies(args, weight_bytes(args.format, n, k))
        if (n, k) in SPLIT:
            built = [build_layer(args.format, k, SPLIT[(n, k)], device="cuda", split=True) for _ in range(nw)]
            layers = [b[0] for b in built]
            separates = [(lambda x, s=b[1]: (s[0](x), s[1](x))) for b in built]
        else:
            layers = [build_layer(args.format, k, [n], device="cuda") for _ in range(nw)]
            separates = None
        layer = layers[0]
        nb = weight_copies(args, weight_bytes("bf16", n, k))
        w_bf16 = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(nb)]
        bf16_fns = [(lambda x, w=w: F.linear(x, w)) for w in w_bf16]
        tgs = [tinygemm(n, k) for _ in range(nw)] if tinygemm is not None else None
        for m in ms:
            floor_us = weight_bytes(args.format, n, k) / (ceiling * 1e3)
            case = f"M={m} {n}x{k}"
            base = dict(case=case, m=m, n=n, k=k, weight_floor_us=floor_us, weight_copies=nw, weights=args.weights)
            path = layer.backend(torch.empty(m, k, device="cuda", dtype=torch.bfloat16))
            # every timed operand of the case, in the order of the result rows
            cands = {f"qlinear {args.format}": layers, "bf16 F.linear": bf16_fns}
            if args.format == "fp8-block":
                from qlinear.ops.fp8 import fp8_block_linear

                cands["torch._scaled_mm blockwise (+quant)"] = [
                    (lambda x, l=l: fp8_block_linear(x, l.weight, l.weight_scale_inv, (128, 128), backend="scaled_mm"))
                    for l in layers]
            if tgs is not None:
                cands["tinygemm _weight_int4pack_mm"] = tgs
            if separates is not None and m <= 4096:
                cands[f"two separate layers {SPLIT[(n, k)]}"] = separates
            for impl, res in time_case(cands, m, k, args.timing).items():
                rows.append({**base, "impl": impl, **({"backend": path} if impl.startswith("qlinear") else {}), **res})
            for mode in (("off", "early") if args.pdl_ab and m <= 128 else ()):
                os.environ["QLINEAR_PDL"] = mode
                try:
                    rows.append({**base, "impl": f"qlinear {args.format} (PDL {mode})", **time_layer(layers, m, k)})
                    if separates is not None:
                        r = time_layer(separates, m, k)
                        rows.append({**base, "impl": f"two separate layers {SPLIT[(n, k)]} (PDL {mode})", **r})
                finally:
                    os.environ.pop("QLINEAR_PDL", None)
            flops = 2 * m * n * k
            for r in rows:
                if r["case"] == case and "median_us" in r:
                    r["tflops"] = flops / (r["median_us"] * 1e6)
            print(" | ".join(f"{r['impl']}: {r.get('median_us', float('nan')):.1f}us" for r in rows if r["case"] == case),
                  f"| {case} backend={path}", flush=True)
        del layer, layers, separates, w_bf16, bf16_fns, tgs
        torch.cuda.empty_cache()
    meta = {**env_info(), "copy_ceiling_gbps": ceiling, "format": args.format,
            "timing": ("CUDA graph replays of a case's candidates alternated, each after an untimed one, median of 30; "
                       if args.timing == "interleaved" else "CUDA graph replay, median of 30 replays; ")
                      + "inputs rotated past L2",
            "weights": args.weights + (" (weight copies rotated: every call reads its weights from HBM)" if args.weights == "cold" else
                                       " (one weight copy: L2-resident where it fits)")}
    for r in rows:
        r["us"] = r.get("median_us")
    write_results(f"linear_{args.format}" + ("_hot" if args.weights == "hot" else ""), rows, meta, args.out, metric="us")


if __name__ == "__main__":
    main()
