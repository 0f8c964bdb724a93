"""Host time of eager calls: what a framework that runs a layer outside a CUDA graph pays on the CPU per call.

For each case, ``--calls`` calls are enqueued back to back after a synchronize; ``host_us`` is the CPU time of
the loop per call (the GPU works behind it: the launch queue holds them), ``eager_us`` the time per call until
the GPU is done too (after a synchronize; it is ``max(host, device)`` per call once the loop is long enough).
Medians over ``--reps`` rounds, the cases alternated within a round (same clocks for all). Cases, for M in
``--ms`` rows of x (bf16, the MLA 2112x7168 merged projection and the q_c RMSNorm):

* ``F.linear`` of a bf16 [2112, 7168] weight (the anchor), the unquantized merged layer, the W4A16 layer
  (GPTQ sym and asym), the FP8 block layer;
* ``rms_norm`` of the strided q_c slice [M, 1536] of a [M, 2112] tensor, ``F.rms_norm`` of the same slice;

each with grad mode on (plain eager) and under ``torch.inference_mode()`` (how vLLM runs its models).
``--profile`` also writes ``profile_<case>.txt``: cProfile's top functions of 300 eager calls of the layers at
the first M. Writes ``host.json`` / ``host.png`` to ``--out``.

    python benchmarks/bench_host.py --out DIR [--ms 1 16] [--calls 100] [--reps 21] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from _layers import build_layer
from _timing import env_info, write_results

from qlinear.ops import rms_norm

N_OUT, K = [1536, 576], 7168


def cases(m: int) -> dict:
    """name -> zero-argument callable for M rows."""
    x = torch.randn(m, K, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(sum(N_OUT), K, dtype=torch.bfloat16, device="cuda") * 0.02
    fused = torch.randn(m, sum(N_OUT), dtype=torch.bfloat16, device="cuda")
    q_c = fused[:, :1536]
    nw = torch.rand(1536, dtype=torch.bfloat16, device="cuda") + 0.5
    out = {"F.linear bf16": lambda: F.linear(x, w)}
    for fmt in ("bf16", "w4a16", "w4a16-asym", "fp8-block"):
        layer = build_layer(fmt, K, N_OUT, device="cuda")
        out[f"layer {fmt}"] = (lambda lay: lambda: lay(x))(layer)
    out["rms_norm q_c"] = lambda: rms_norm(q_c, nw, 1e-6)
    out["F.rms_norm q_c"] = lambda: F.rms_norm(q_c, (1536,), nw, 1e-6)
    return out


def time_round(fns: dict, calls: int, inference: bool) -> dict[str, tuple[float, float]]:
    res = {}
    for name, fn in fns.items():
        with torch.inference_mode() if inference else contextlib.nullcontext():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
        res[name] = ((t1 - t0) / calls * 1e6, (t2 - t0) / calls * 1e6)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for m in args.ms:
        fns = cases(m)
        for inference in (False, True):
            mode = "inference_mode" if inference else "grad"
            for _ in range(3):  # warm-up: builds, autotuning, first-call caches
                time_round(fns, args.calls, inference)
            samples: dict[str, list[tuple[float, float]]] = {n: [] for n in fns}
            for _ in range(args.reps):
                for name, v in time_round(fns, args.calls, inference).items():
                    samples[name].append(v)
            for name, vals in samples.items():
                host = statistics.median(v[0] for v in vals)
                eager = statistics.median(v[1] for v in vals)
                rows.append(dict(case=f"M={m} {mode}", impl=name, m=m, mode=mode, host_us=host, eager_us=eager))
                print(f"M={m:<4d} {mode:<15s} {name:<18s} host {host:7.2f} us/call   eager {eager:7.2f} us/call",
                      flush=True)
        if args.profile and m == args.ms[0]:
            for name in [n for n in fns if n.startswith("layer ")]:
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(300):
                    fns[name]()
                prof.disable()
                torch.cuda.synchronize()
                s = io.StringIO()
                pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30)
                (out_dir / f"profile_{name.split()[1]}.txt").write_text(s.getvalue())
    meta = dict(env_info(), calls=args.calls, reps=args.reps, what=__doc__.splitlines()[0],
                shape=f"{sum(N_OUT)}x{K} (merged {N_OUT})")
    write_results("host", rows, meta, out_dir, metric="host_us")


if __name__ == "__main__":
    main()
