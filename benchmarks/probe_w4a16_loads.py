"""Which loads of the W4A16 register decode kernel cost the time at M = 1: the micro-benchmark
modes of csrc/probe/w4a16_probe.cu (built by the caller, ``--probe-lib``) for one config, all in
one alternated-replay measurement with cold weights: mode 0 the full kernel, 1 its loads only (x,
weights, scales, zero points), 3 without x, 4 the weight words alone, 2 loads + dequantize; beside
plain 16-byte register loads of the same packed weight (``read ch64 nl8``: 64 contiguous bytes
per row per instruction batch, the register kernel's pattern) and the dispatch's own call. If mode 4
reads like the plain loads and mode 1 does not, the x / scale loads are the difference.
--m16: short rows (24576x1536) at M = 16 instead, the register kernel with chunks dealt round-robin
(the dispatch's pipe 2): R2 U1 W2 (the dispatch's config) and R4 U1 W4. Mode 1 against mode 3 is
the x fragments' cost at two token tiles (x bytes per CTA twice its weight bytes at R = 2).
    python benchmarks/probe_w4a16_loads.py --probe-lib PATH --out DIR [--m16]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graphs_interleaved, env_info, write_results  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402
from bench_w4a16_cuda import load_probe  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

MODES = {0: "full", 1: "loads", 2: "loads+dequant", 3: "loads no x", 4: "weights only"}
# (shape, register code R U NT PF, warps): the M = 1 dispatch's config of each shape class, pipe 0
CASES = [((7168, 16384), 1210, 4), ((24576, 1536), 4110, 4)]
# --m16: (shape, code R U NT PF, warps), pipe 2
CASES16 = [((24576, 1536), 2120, 2), ((24576, 1536), 4120, 4)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--probe-lib", required=True)
    ap.add_argument("--m16", action="store_true")
    args = ap.parse_args()
    cuda_ext.load()
    probe = load_probe(args.probe_lib)
    if probe is None:
        raise SystemExit(f"probe library not found: {args.probe_lib}")

    def check(rc):
        if rc != 0:
            raise RuntimeError(f"probe launch returned cuda error {rc}")

    rows = []
    m = 16 if args.m16 else 1
    for (n, k), code, warps in (CASES16 if args.m16 else CASES):
        packs, wb, _, _ = cold_layers(n, k)
        nb = len(packs)
        g = packs[0].group_size
        wpr = packs[0].qweight.shape[1]
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        o = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        sink = torch.zeros(4, device="cuda", dtype=torch.int32)
        stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
        fns = {"dispatch": lambda i: ops.cuda_gemv(x, packs[i % nb])}
        for ch, nl in ((64, 8), (128, 16)):
            fns[f"read ch{ch} nl{nl}"] = lambda i, ch=ch, nl=nl: check(probe.w4probe_read(
                ch, nl, packs[i % nb].qweight.data_ptr(), n, wpr, sink.data_ptr(), stream()))
        for mode, tag in MODES.items():
            if args.m16:
                fns[f"reg {code} W{warps} {tag}"] = lambda i, md=mode: check(probe.w4probe_reg16(
                    md, code, warps, 1, o.data_ptr(), x.data_ptr(), packs[i % nb].qweight.data_ptr(),
                    packs[i % nb].scales.data_ptr(), packs[i % nb].zeros.data_ptr(), m, n, k, g, 0, stream()))
            else:
                fns[f"reg {code} W{warps} {tag}"] = lambda i, md=mode: check(probe.w4probe_reg(
                    md, code, warps, o.data_ptr(), x.data_ptr(), packs[i % nb].qweight.data_ptr(),
                    packs[i % nb].scales.data_ptr(), packs[i % nb].zeros.data_ptr(), 1, n, k, g, 0, stream()))
        res = bench_graphs_interleaved(fns, n_buffers=nb, reps=15, target_replay_us=400.0)
        case = f"M={m} {n}x{k}"
        for name, r in res.items():
            us = r["median_us"]
            print(f"LOADS {case:>16} {name:<28} {us:8.2f} us {wb / us / 1e3:7.0f} GB/s", flush=True)
            rows.append(dict(case=case, impl=name, n=n, k=k, weight_bytes=wb, median_us=us, p20_us=r["p20_us"],
                             p80_us=r["p80_us"]))
        del packs
        torch.cuda.empty_cache()
    write_results("w4a16_loads", rows, env_info(), args.out, metric="median_us")


if __name__ == "__main__":
    main()
