"""CUDA W4A16 decode kernels (backend "cuda"): a micro-benchmark ladder that finds the memory
limiter, then the real kernels vs the Triton default, tinygemm and bf16.

Ladder (M = 1, bf16, the three shapes; ``csrc/probe/w4a16_probe.cu`` built by the caller into
``--probe-lib``): ``read chC nlL`` = plain register loads, C contiguous bytes per row per
warp-instruction batch (64 = round 1's pattern), L 16-byte loads in flight per lane; ``ring CODE
m1`` = the ring kernel's cp.async stages only, ``m2`` = + dequant and x reads (no mma), ``full`` =
the real ring kernel. Then for M in {1, 4, 16} on 2112x7168, 24576x1536, 7168x16384 (asymmetric
int4, group 128, bf16 scales): "cuda auto" (ring, launcher's shape), every compiled ring code,
round 1's register kernel (auto and its best round-1 config), the Triton path, tinygemm
(``_weight_int4pack_mm``) and bf16 ``F.linear``. CUDA-graph replay with the weights rotated past L2.
One line per measurement:  case  impl  us  GB/s(weight bytes)  fraction-of-copy-ceiling;
then BEST lines per case and the dispatch constants to set. JSON: ``<out>/w4a16_cuda.json``.
    python benchmarks/bench_w4a16_cuda.py --out DIR [--budget-s 60] [--probe-lib PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402
from bench_w4a16 import make_canonical, make_tinygemm, rotated, weight_bytes  # noqa: E402

from qlinear.kernels import cuda_ext  # noqa: E402
from qlinear.kernels import w4a16_triton as kern  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]
MS = [1, 4, 16]
TARGET_M1 = {(2112, 7168): 4.5, (24576, 1536): 7.5, (7168, 16384): 17.0}
REG_CONFIGS = {1: [(1, 2, 16), (4, 1, 8), (4, 1, 4)], 2: [(2, 1, 4), (2, 1, 8)]}  # round 1's best ones
READS = [(64, 8), (64, 16), (128, 16), (256, 16), (512, 16)]


def load_probe(path):
    if not path or not Path(path).is_file():
        return None
    lib = ctypes.CDLL(path)
    lib.w4probe_read.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                 ctypes.c_void_p, ctypes.c_void_p]
    lib.w4probe_ring.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 4 + [
        ctypes.c_int, ctypes.c_void_p]
    return lib


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--budget-s", type=float, default=60.0)
    ap.add_argument("--probe-lib", default=None)
    args = ap.parse_args()
    t0 = time.time()
    ceiling = copy_ceiling_gbps(1 << 28)
    print(f"copy ceiling {ceiling:.0f} GB/s", flush=True)
    lib = cuda_ext.load()
    probe = load_probe(args.probe_lib)
    if probe is None:
        print(f"probe library not found ({args.probe_lib}): no ladder", flush=True)
    rows: list[dict] = []

    def timed(case, impl, fn, nbuf, wb, **extra):
        row = dict(case=case, impl=impl, **extra)
        if time.time() - t0 > args.budget_s:
            row["error"] = "skipped: time budget"
            rows.append(row)
            return row
        try:
            row.update(bench_graph(fn, n_buffers=nbuf, reps=10, target_replay_us=600.0))
            row["gbps"] = wb / (row["median_us"] * 1e-6) / 1e9
            row["frac_of_copy"] = row["gbps"] / ceiling
            print(f"{case:>18}  {impl:<24} {row['median_us']:8.2f} us {row['gbps']:7.0f} GB/s "
                  f"{row['frac_of_copy']:5.2f}", flush=True)
        except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            print(f"{case:>18}  {impl:<24} ERROR {row['error'][:120]}", flush=True)
            torch.cuda.synchronize()
        rows.append(row)
        return row

    def check(rc):
        if rc != 0:
            raise RuntimeError(f"probe launch returned cuda error {rc}")

    summary, wins = [], {}
    for n, k in SHAPES:
        q, z, s, g, _ = make_canonical(n, k)
        packed = ops.pack_w4a16(q, z, s, g)
        del q, z, s
        wb = weight_bytes(packed)
        nbuf = buffers_to_defeat_l2(wb, max_buffers=64)
        packs = rotated(packed, nbuf)
        tall = n >= 8 * k
        base0 = dict(n=n, k=k, weight_bytes=wb, floor_us=wb / (ceiling * 1e3))
        sink = torch.zeros(4, device="cuda", dtype=torch.int32)
        # ---- ladder (M = 1)
        if probe is not None:
            case = f"ladder {n}x{k}"
            wpr = packs[0].qweight.shape[1]
            for ch, nl in READS:
                timed(case, f"read ch{ch} nl{nl}",
                      lambda i, ch=ch, nl=nl: check(probe.w4probe_read(
                          ch, nl, packs[i].qweight.data_ptr(), n, wpr, sink.data_ptr(),
                          torch.cuda.current_stream().cuda_stream)), nbuf, wb, stage="read", **base0)
            x1 = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
            o1 = torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
            for code in lib.w4a16_ring_configs(1):
                for mode, tag in ((1, "m1 loads"), (2, "m2 +dequant"), (0, "full")):
                    timed(case, f"ring {code} {tag}",
                          lambda i, c=code, md=mode: check(probe.w4probe_ring(
                              md, c, o1.data_ptr(), x1.data_ptr(), packs[i].qweight.data_ptr(),
                              packs[i].scales.data_ptr(), packs[i].zeros.data_ptr(), 1, n, k, g, 0,
                              torch.cuda.current_stream().cuda_stream)), nbuf, wb, stage=f"ring m{mode}",
                          ring=code, **base0)
        # ---- real kernels
        nb16 = buffers_to_defeat_l2(2 * n * k, 16)
        w16 = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(nb16)]
        try:
            tgs = [make_tinygemm(n, k) for _ in range(min(nbuf, 8))]
        except Exception as exc:  # noqa: BLE001
            print(f"tinygemm unavailable: {exc}", flush=True)
            tgs = []
        for m in MS:
            case = f"M={m} {n}x{k}"
            nt = 1 if m <= 8 else 2
            xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
            base = dict(m=m, **base0)
            auto = timed(case, "cuda auto", lambda i: ops.cuda_gemv(xs[i % 4], packs[i], ring=0), nbuf, wb, **base)
            cuda_rows = [auto]
            for code in lib.w4a16_ring_configs(nt):
                cuda_rows.append(timed(case, f"cuda ring {code}",
                                       lambda i, c=code: ops.cuda_gemv(xs[i % 4], packs[i], ring=c), nbuf, wb,
                                       ring=code, **base))
            if m == 1:
                cuda_rows.append(timed(case, "cuda auto nopdl",
                                       lambda i: ops.cuda_gemv(xs[i % 4], packs[i], pdl=False, ring=0), nbuf, wb,
                                       **base))
            reg = [timed(case, "reg auto", lambda i: ops.cuda_gemv(xs[i % 4], packs[i], ring=-1), nbuf, wb, **base)]
            for cfg in REG_CONFIGS[nt]:
                reg.append(timed(case, "reg R{} U{} W{}".format(*cfg),
                                 lambda i, c=cfg: ops.cuda_gemv(xs[i % 4], packs[i], config=c), nbuf, wb,
                                 config=list(cfg), **base))
            tr = timed(case, "triton default", lambda i: kern.w4a16_gemm(xs[i % 4], packs[i]), nbuf, wb, **base)
            tg = (timed(case, "tinygemm int4pack_mm", lambda i: tgs[i % len(tgs)](xs[i % 4]), len(tgs), wb, **base)
                  if tgs else {})
            timed(case, "bf16 F.linear", lambda i: F.linear(xs[i % 4], w16[i % nb16]), nb16, wb, **base)
            ok = [r for r in cuda_rows if "median_us" in r]
            okr = [r for r in reg if "median_us" in r]
            nan = float("nan")
            if ok:
                b = min(ok, key=lambda r: r["median_us"])
                br = min(okr, key=lambda r: r["median_us"]) if okr else {}
                tgt = TARGET_M1.get((n, k)) if m == 1 else None
                summary.append(
                    f"BEST {case:>18}: {b['impl']:<15} {b['median_us']:6.2f} us (auto {auto.get('median_us', nan):6.2f})"
                    f" | reg {br.get('median_us', nan):6.2f} | triton {tr.get('median_us', nan):6.2f}"
                    f" | tinygemm {tg.get('median_us', nan):6.2f}"
                    + (f" | target {tgt} {'MET' if b['median_us'] <= tgt else 'missed'}" if tgt else ""))
                t_auto = auto.get("median_us", nan)
                others = [r.get("median_us", nan) for r in (tr,)]
                d = wins.setdefault(tall, {})
                d[m] = d.get(m, True) and all(t_auto < o for o in others if o == o)
        del packs, w16, tgs
        torch.cuda.empty_cache()
    print()
    for line in summary:
        print(line)

    def max_m(d):
        best = 0
        for m in sorted(d):
            if not d[m]:
                break
            best = 16 if m == 16 else m
        # M between measured points follows the smaller measured M's verdict
        return best

    reg_m = max_m(wins.get(False, {}))
    tall_m = max_m(wins.get(True, {}))
    print(f"SET qlinear/ops/w4a16.py: _CUDA_MAX_M = {reg_m}  _CUDA_MAX_M_TALL = {tall_m}  "
          f"(largest measured M in {MS} up to which 'cuda auto' beats triton on every shape of the class; "
          f"compare the 'cuda ring CODE' rows with 'cuda auto' to retune auto_ring() in w4a16_gemv_launch.cu)")
    meta = dict(env_info(), copy_ceiling_gbps=ceiling, wall_s=time.time() - t0)
    write_results("w4a16_cuda", rows, meta, args.out)
    print(f"bench wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
