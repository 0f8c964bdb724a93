"""CUDA W4A16 decode kernels (backend "cuda"): a micro-benchmark ladder that finds the memory
limiter, then the real kernels vs the Triton default, tinygemm and bf16.

Ladder (M = 1, bf16, the three shapes; ``csrc/probe/w4a16_probe.cu`` built by the caller into
``--probe-lib``): ``read chC nlL`` = plain register loads, C contiguous bytes per row per
warp-instruction batch (64 = round 1's pattern), L 16-byte loads in flight per lane; ``ring CODE``
/ ``reg CODE Ww`` (register kernel, code R U NT PF, W warps) ``m1`` = loads only, ``m2`` = + dequant
and x reads (no mma), ``full`` = the real kernel: m1 - read = load-path loss, m2 - m1 = dequant,
full - m2 = mma + reduction. Then for M in {1, 4, 16} on 2112x7168, 24576x1536, 7168x16384
(asymmetric int4, group 128, bf16 scales): "cuda auto" (the launcher's choice), ring codes,
register-kernel configs (R, U, W, pipe), the Triton path, tinygemm (``_weight_int4pack_mm``) and
bf16 ``F.linear``. CUDA-graph replay with the weights rotated past L2. One line per measurement:
case  impl  us  GB/s(weight bytes)  fraction-of-copy-ceiling; then BEST lines per case (best ring /
best register config), the dispatch constants to set and an AUTO line per case (which kernel the
launcher should pick). JSON: ``<out>/w4a16_cuda.json``.
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
TARGET_M1 = {(2112, 7168): 6.0, (24576, 1536): 9.0, (7168, 16384): 20.0}  # layer targets (issue 5)
# register kernel (R, U, W, pipe) swept per NT (compiled codes: w4a16_reg_configs())
REG_CONFIGS = {1: [(1, 2, 16, 0), (1, 2, 8, 0), (2, 2, 8, 0), (4, 1, 8, 0), (4, 1, 4, 0), (1, 1, 16, 1), (1, 2, 8, 1),
                   (4, 1, 8, 1)],
               2: [(2, 1, 4, 0), (2, 1, 8, 0), (1, 2, 8, 0), (2, 1, 8, 1), (1, 1, 8, 1)]}
RING_CODES = {1: [1424, 1824, 4143, 4124], 2: [2224, 4124, 1414]}  # round 2's best ones
LADDER_RING = [1424, 1824, 4143]
LADDER_REG = [(1210, 16), (4110, 8), (1111, 16), (1211, 8), (4111, 8)]
READS = [(64, 8), (64, 16), (128, 16), (256, 16), (512, 16)]


def load_probe(path):
    if not path or not Path(path).is_file():
        return None
    lib = ctypes.CDLL(path)
    lib.w4probe_read.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                 ctypes.c_void_p, ctypes.c_void_p]
    lib.w4probe_ring.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 4 + [
        ctypes.c_int, ctypes.c_void_p]
    lib.w4probe_reg.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 5 + [
        ctypes.c_int64] * 4 + [ctypes.c_int, ctypes.c_void_p]
    lib.w4probe_reg16.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 4 + [
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

    summary, wins, autos = [], {}, []
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
            stages = ((1, "m1 loads"), (2, "m2 +dequant"), (0, "full"))
            for code in LADDER_RING:
                for mode, tag in stages:
                    timed(case, f"ring {code} {tag}",
                          lambda i, c=code, md=mode: check(probe.w4probe_ring(
                              md, c, o1.data_ptr(), x1.data_ptr(), packs[i].qweight.data_ptr(),
                              packs[i].scales.data_ptr(), packs[i].zeros.data_ptr(), 1, n, k, g, 0,
                              torch.cuda.current_stream().cuda_stream)), nbuf, wb, stage=f"ring m{mode}",
                          ring=code, **base0)
            for code, warps in LADDER_REG:
                for mode, tag in stages:
                    timed(case, f"reg {code} W{warps} {tag}",
                          lambda i, c=code, wp=warps, md=mode: check(probe.w4probe_reg(
                              md, c, wp, o1.data_ptr(), x1.data_ptr(), packs[i].qweight.data_ptr(),
                              packs[i].scales.data_ptr(), packs[i].zeros.data_ptr(), 1, n, k, g, 0,
                              torch.cuda.current_stream().cuda_stream)), nbuf, wb, stage=f"reg m{mode}",
                          reg=code, warps=warps, **base0)
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
            ring_rows = []
            for code in RING_CODES[nt]:
                ring_rows.append(timed(case, f"cuda ring {code}",
                                       lambda i, c=code: ops.cuda_gemv(xs[i % 4], packs[i], ring=c), nbuf, wb,
                                       ring=code, **base))
            cuda_rows += ring_rows
            if m == 1:
                cuda_rows.append(timed(case, "cuda auto nopdl",
                                       lambda i: ops.cuda_gemv(xs[i % 4], packs[i], pdl=False, ring=0), nbuf, wb,
                                       **base))
            reg = [timed(case, "reg auto", lambda i: ops.cuda_gemv(xs[i % 4], packs[i], ring=-1), nbuf, wb,
                         config="auto", **base)]
            for cfg in REG_CONFIGS[nt]:
                reg.append(timed(case, "reg R{} U{} W{} P{}".format(*cfg),
                                 lambda i, c=cfg: ops.cuda_gemv(xs[i % 4], packs[i], config=c), nbuf, wb,
                                 config=list(cfg), **base))
            tr = timed(case, "triton default", lambda i: kern.w4a16_gemm(xs[i % 4], packs[i]), nbuf, wb, **base)
            tg = (timed(case, "tinygemm int4pack_mm", lambda i: tgs[i % len(tgs)](xs[i % 4]), len(tgs), wb, **base)
                  if tgs else {})
            timed(case, "bf16 F.linear", lambda i: F.linear(xs[i % 4], w16[i % nb16]), nb16, wb, **base)
            cuda_rows += reg
            ok = [r for r in cuda_rows if "median_us" in r]
            okr = [r for r in reg if "median_us" in r]
            okg = [r for r in ring_rows if "median_us" in r]
            nan = float("nan")
            if ok:
                b = min(ok, key=lambda r: r["median_us"])
                br = min(okr, key=lambda r: r["median_us"]) if okr else {}
                bg = min(okg, key=lambda r: r["median_us"]) if okg else {}
                tgt = TARGET_M1.get((n, k)) if m == 1 else None
                tgv = tg.get("median_us", nan)
                summary.append(
                    f"BEST {case:>18}: {b['impl']:<18} {b['median_us']:6.2f} us (auto {auto.get('median_us', nan):6.2f})"
                    f" | reg {br.get('impl', '-')[4:]} {br.get('median_us', nan):6.2f}"
                    f" | ring {bg.get('impl', '-')[10:]} {bg.get('median_us', nan):6.2f}"
                    f" | triton {tr.get('median_us', nan):6.2f} | tinygemm {tgv:6.2f}"
                    f" {'WIN' if b['median_us'] < tgv else 'lose'}"
                    + (f" | target {tgt} {'MET' if b['median_us'] <= tgt else 'missed'}" if tgt else ""))
                autos.append(f"AUTO {case:>18}: {'reg ' + str(br.get('config')) if br.get('median_us', 1e9) <= bg.get('median_us', 1e9) else 'ring ' + str(bg.get('ring'))}"
                             f"  (launcher auto took {auto.get('median_us', nan):6.2f} us, best {b['median_us']:6.2f})")
                t_auto = auto.get("median_us", nan)
                others = [r.get("median_us", nan) for r in (tr,)]
                d = wins.setdefault(tall, {})
                d[m] = d.get(m, True) and all(t_auto < o for o in others if o == o)
        del packs, w16, tgs
        torch.cuda.empty_cache()
    print()
    for line in summary:
        print(line)
    for line in autos:
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
          f"AUTO lines: the kernel to pick per case in w4_gemv_resolve / auto_ring, w4a16_gemv_launch.cu)")
    meta = dict(env_info(), copy_ceiling_gbps=ceiling, wall_s=time.time() - t0)
    write_results("w4a16_cuda", rows, meta, args.out)
    print(f"bench wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
