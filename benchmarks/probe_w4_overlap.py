"""Large-M W4A16: can the dequantize hide behind cuBLAS? (issue 5: M >= 1024 within 1.15x of bf16)

    python benchmarks/probe_w4_overlap.py [--out DIR] [--ms 1024 4096] [--shapes few short many]

Symmetric GPTQ layers (group 128, fp16 scales, the acceptance layer), bf16 x, cold packed weights
(copies rotated past L2), CUDA graphs, ``--passes`` interleaved passes (median). Per shape and M:

- ``bf16``: ``F.linear`` on a static bf16 weight (rotated copies), the anchor;
- ``auto``: ``w4a16_linear`` with the automatic backend (what the layer runs today);
- ``dq+lin``: dequantize the whole weight, then ``F.linear`` (the ``dequant_cublas`` backend);
- ``n-serial C``: C row chunks, each dequantized into one reused chunk buffer (small enough to stay
  in L2) and multiplied into its column slice of the output, one stream;
- ``n-stream C``: the same with the dequantize on a side stream into two alternating buffers, so
  chunk i + 1 dequantizes while chunk i multiplies (``P``: the side stream at high priority);
- ``k-serial C`` / ``k-stream C``: C column chunks accumulated in fp32 (``mm`` / ``addmm`` with
  ``out_dtype``), then one cast to bf16.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graph, env_info, write_results  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import w4a16_triton as wt  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = {"few": (2112, 7168), "short": (24576, 1536), "many": (7168, 16384)}


def cuts(total: int, c: int, align: int) -> list[int]:
    step = -(-total // c // align) * align
    return list(range(0, total, step)) + [total]


def make_cases(packs, w16, n: int, k: int):
    cp, cw = len(packs), len(w16)
    cases = {
        "bf16": lambda i, x: F.linear(x, w16[i % cw]),
        "auto": lambda i, x: ops.w4a16_linear(x, packs[i % cp]),
        "dq+lin": lambda i, x: F.linear(x, wt.w4a16_dequantize(packs[i % cp], x.dtype)),
    }
    bufs: dict = {}

    def buffers(key, shape, count):
        key = (key, count)
        if key not in bufs:
            bufs[key] = [torch.empty(shape, device="cuda", dtype=torch.bfloat16) for _ in range(count)]
        return bufs[key]

    def n_serial(i, x, c):
        p, r = packs[i % cp], cuts(n, c, 64)
        buf = buffers(("n", c), (r[1], k), 1)[0]
        out = torch.empty((x.shape[0], n), device=x.device, dtype=x.dtype)
        for a, b in zip(r[:-1], r[1:]):
            w = wt.w4a16_dequantize(p, x.dtype, rows=(a, b), out=buf[: b - a])
            torch.mm(x, w.t(), out=out[:, a:b])
        return out

    sides: dict = {}

    def n_stream(i, x, c, prio):
        p, r = packs[i % cp], cuts(n, c, 64)
        two = buffers(("n", c), (r[1], k), 2)
        main = torch.cuda.current_stream()
        side = sides.setdefault(prio, torch.cuda.Stream(priority=prio))
        out = torch.empty((x.shape[0], n), device=x.device, dtype=x.dtype)
        side.wait_stream(main)
        done = []
        for j, (a, b) in enumerate(zip(r[:-1], r[1:])):
            with torch.cuda.stream(side):
                if j >= 2:
                    side.wait_event(done[j - 2])  # the GEMM that read this buffer has finished
                w = wt.w4a16_dequantize(p, x.dtype, rows=(a, b), out=two[j % 2][: b - a])
                ready = torch.cuda.Event()
                ready.record(side)
            main.wait_event(ready)
            torch.mm(x, w.t(), out=out[:, a:b])
            ev = torch.cuda.Event()
            ev.record(main)
            done.append(ev)
        main.wait_stream(side)
        return out

    def k_serial(i, x, c):
        p, r = packs[i % cp], cuts(k, c, 128)
        buf = buffers(("k", c), (n, r[1]), 1)[0]
        acc = None
        for a, b in zip(r[:-1], r[1:]):
            w = wt.w4a16_dequantize(p, x.dtype, cols=(a, b), out=buf[:, : b - a])
            acc = (torch.mm(x[:, a:b], w.t(), out_dtype=torch.float32) if acc is None
                   else torch.addmm(acc, x[:, a:b], w.t(), out_dtype=torch.float32))
        return acc.to(x.dtype)

    def k_stream(i, x, c):
        p, r = packs[i % cp], cuts(k, c, 128)
        two = buffers(("k", c), (n, r[1]), 2)
        main = torch.cuda.current_stream()
        side = sides.setdefault(0, torch.cuda.Stream(priority=0))
        side.wait_stream(main)
        acc, done = None, []
        for j, (a, b) in enumerate(zip(r[:-1], r[1:])):
            with torch.cuda.stream(side):
                if j >= 2:
                    side.wait_event(done[j - 2])
                w = wt.w4a16_dequantize(p, x.dtype, cols=(a, b), out=two[j % 2][:, : b - a])
                ready = torch.cuda.Event()
                ready.record(side)
            main.wait_event(ready)
            acc = (torch.mm(x[:, a:b], w.t(), out_dtype=torch.float32) if acc is None
                   else torch.addmm(acc, x[:, a:b], w.t(), out_dtype=torch.float32))
            ev = torch.cuda.Event()
            ev.record(main)
            done.append(ev)
        main.wait_stream(side)
        return acc.to(x.dtype)

    for c in (2, 4, 8):
        cases[f"n-serial {c}"] = lambda i, x, c=c: n_serial(i, x, c)
        cases[f"n-stream {c}"] = lambda i, x, c=c: n_stream(i, x, c, 0)
    cases["n-stream 4 P"] = lambda i, x: n_stream(i, x, 4, -1)
    for c in (2, 4):
        cases[f"k-serial {c}"] = lambda i, x, c=c: k_serial(i, x, c)
        cases[f"k-stream {c}"] = lambda i, x, c=c: k_stream(i, x, c)
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for shape in args.shapes:
        n, k = SHAPES[shape]
        packs, _wb, w16, _ = cold_layers(n, k, max_buffers=4, layer="sym-fp16")
        cases = make_cases(packs, w16, n, k)
        for m in args.ms:
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
            # correctness first: every variant against dq+lin on the same operands (a wrong chunk
            # offset or a missing stream dependency shows here)
            want = cases["dq+lin"](0, xs[0]).float()
            bad = {}
            for name, fn in cases.items():
                if name == "bf16":
                    continue
                try:
                    got = fn(0, xs[0]).float()
                    torch.cuda.synchronize()
                    err = ((got - want).norm() / want.norm()).item()
                    if err > 1e-2:
                        bad[name] = f"rel err {err:.2e}"
                except Exception as exc:  # noqa: BLE001 -- an unsupported variant is recorded, not fatal
                    bad[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
            for name, why in bad.items():
                print(f"W4O {shape} M={m} {name}: SKIP {why}", flush=True)
            res = {name: [] for name in cases if name not in bad}
            nbuf = max(len(packs), 2)
            for _ in range(args.passes):
                for name in res:
                    fn = cases[name]
                    res[name].append(bench_graph(lambda i, fn=fn: fn(i, xs[i % 2]), n_buffers=nbuf)["median_us"])
            base = statistics.median(res["bf16"])
            for name, v in res.items():
                us = statistics.median(v)
                rows.append(dict(case=f"{shape} {n}x{k} M={m}", impl=name, us=us, passes=v, vs_bf16=us / base))
                print(f"W4O {shape:5s} M={m:5d} {name:14s} {us:8.1f} us  x{us / base:5.3f}  "
                      f"passes {' '.join(f'{t:.1f}' for t in v)}", flush=True)
            for name, why in bad.items():
                rows.append(dict(case=f"{shape} {n}x{k} M={m}", impl=name, us=None, skipped=why))
        del packs, w16, cases
        torch.cuda.empty_cache()
    write_results("probe_w4_overlap", rows, env_info(), args.out, metric="us")


if __name__ == "__main__":
    main()
