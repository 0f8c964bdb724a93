"""Issue 5: the "wg" W4A16 kernel (register-A wgmma chain, backend ``"triton_wg"``) at M = 64 ..
1024 against bf16 ``F.linear`` and the current qlinear auto path, in one run, COLD weights.

Per (shape, M): bf16 F.linear, qlinear auto (which backend it took), triton_wg's default config,
then a config sweep of the "wg" kernel (block_n / block_m / superblocks per iteration / warps /
stages, split-K auto, plus explicit split-K 1 / 2 / 4 on the small 2112x7168 grid). Weights (and
the bf16 weights of the baseline) rotate over enough copies that consecutive calls touch >= 3x
L2. Each "wg" config is checked once per shape against the fp32 dequantized reference (rel err).
Every Triton launch is compiled up front on a thread pool; the sweep stops at ``--budget`` s.

Prints one line per point, then per (shape, M) a BEST line (fastest "wg" config, its ratio to
bf16 and to the current path) and a ``_WG_CONFIGS`` suggestion; JSON to ``<out>/bench_w4a16wg.json``.
Finally dumps, for every compiled "wg" kernel, whether its PTX has wgmma with A in registers and
pipelined (cp.async) x loads, registers and spills.

    python benchmarks/bench_w4a16wg.py --out "$OUT"
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402
from w4a16wg_asm import summarize  # noqa: E402

from qlinear.kernels import w4a16_triton as kern  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402
from qlinear.reference import w4a16 as ref  # noqa: E402

SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]  # (N, K)
MS = [64, 128, 256, 1024]
GROUP = 128
C = kern.W4A16Config
# Priority order: the budget cuts the tail. split_k 0 = auto.
SWEEP = [
    C("wg", 64, 128, num_warps=4, num_stages=3),
    C("wg", 128, 128, num_warps=8, num_stages=3),
    C("wg", 64, 64, num_warps=4, num_stages=4),
    C("wg", 64, 128, num_warps=4, num_stages=4),
    C("wg", 128, 64, num_warps=8, num_stages=4),
    C("wg", 128, 128, num_warps=8, num_stages=4),
    C("wg", 64, 128, num_warps=8, num_stages=3),
    C("wg", 64, 128, sb_per_iter=2, num_warps=4, num_stages=3),
    C("wg", 64, 64, num_warps=4, num_stages=3),
]
EXTRA_SPLITS = {(2112, 7168): (1, 2, 4)}  # on the first three configs, M <= 256


def _label(rc) -> str:
    return f"wg bn{rc.block_n} bm{rc.block_m} sb{rc.sb_per_iter} sk{rc.split_k} w{rc.num_warps} s{rc.num_stages}"


def _cfg_str(c) -> str:
    return (f'W4A16Config("wg", block_n={c.block_n}, block_m={c.block_m}, sb_per_iter={c.sb_per_iter}, '
            f"split_k={c.split_k}, num_warps={c.num_warps}, num_stages={c.num_stages})")


def _layer(n, k, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randint(0, 16, (n, k), device="cuda", generator=g, dtype=torch.int32)
    z = torch.randint(0, 16, (n, k // GROUP), device="cuda", generator=g, dtype=torch.int32)
    s = (torch.rand(n, k // GROUP, device="cuda", generator=g) * 0.02 + 1e-3).to(torch.bfloat16)
    packed = ops.pack_w4a16(q, z, s, GROUP)
    return packed, ref.dequantize_canonical(q, z, s, GROUP)


def _copies(packed, count):
    out = [packed]
    for _ in range(count - 1):
        out.append(ops.W4A16Weights.from_tensors({k: v.clone() for k, v in packed.tensors().items()}))
    return out


def _nbytes(p) -> int:
    return sum(t.numel() * t.element_size() for t in (p.qweight, p.scales, p.zeros) if t is not None)


def _precompile(jobs) -> str:
    """Compile every distinct (config, split) launch on a thread pool before timing (ptxas runs
    as a subprocess, so threads overlap); on any failure kernels compile lazily instead."""
    import triton

    name = "_w4a16_wg_kernel"
    real = getattr(kern, name)

    class _Warm:  # fn[grid](*args) compiles without launching
        def __getitem__(self, grid):
            return lambda *a, **kw: real.warmup(*a, grid=grid, **kw)

    t0 = time.time()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            with triton.AsyncCompileMode(pool, ignore_errors=True):
                setattr(kern, name, _Warm())
                try:
                    for packed, x, rc in jobs:
                        try:
                            kern.w4a16_gemm(x, packed, None, rc)
                        except Exception:  # noqa: BLE001 - the timed call reports it
                            pass
                finally:
                    setattr(kern, name, real)
        return f"precompiled {len(jobs)} launches in {time.time() - t0:.1f} s"
    except Exception as exc:  # noqa: BLE001
        setattr(kern, name, real)
        return f"precompile skipped ({type(exc).__name__}: {str(exc)[:120]}); compiling lazily"


def _asm_report() -> list[dict]:
    """Every compiled "wg" kernel of this process: wgmma / A operand / cp.async / regs / spills."""
    out = []
    for entry in kern._w4a16_wg_kernel.device_caches.values():
        cache = entry[0] if isinstance(entry, tuple) else {}
        for ck in list(cache.values()):
            try:
                summ = summarize(ck.asm["ttgir"], ck.asm["ptx"])
                md = ck.metadata
                summ.update(num_warps=md.num_warps, num_stages=md.num_stages,
                            regs=getattr(ck, "n_regs", None), spills=getattr(ck, "n_spills", None))
                out.append(summ)
            except Exception as exc:  # noqa: BLE001
                out.append({"error": f"{type(exc).__name__}: {exc}"[:200]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    ap.add_argument("--budget", type=float, default=95.0, help="seconds for the timed sweep")
    ap.add_argument("--ms", type=int, nargs="*", default=MS)
    args = ap.parse_args()
    t_start = time.time()
    ceiling = copy_ceiling_gbps(1 << 28)
    print(f"copy ceiling {ceiling:.0f} GB/s (read+write); weights cold (>= 3x L2 per rotation)")

    layers = {}
    for n, k in SHAPES:
        packed, w = _layer(n, k)
        nbuf = buffers_to_defeat_l2(_nbytes(packed), max_buffers=24)
        wb = w.to(torch.bfloat16)
        nbuf_bf = buffers_to_defeat_l2(wb.numel() * 2, max_buffers=24)
        layers[(n, k)] = dict(packs=_copies(packed, nbuf), w=w, bf=[wb] + [wb.clone() for _ in range(nbuf_bf - 1)])

    def configs_for(shape, m):
        out = []
        for i, c in enumerate(SWEEP):
            if c.block_m > 64 and m <= 64 and c.block_n == 128 and c.num_stages == 4:
                continue  # half-empty tiles; keep the list short
            out.append(c)
            if i < 3 and m <= 256:
                out += [C("wg", c.block_n, c.block_m, c.sb_per_iter, sk, c.num_warps, c.num_stages)
                        for sk in EXTRA_SPLITS.get(shape, ())]
        return out

    jobs, seen = [], set()
    xs = {}
    for shape in SHAPES:
        for m in args.ms:
            xs[(shape, m)] = torch.randn(m, shape[1], device="cuda", dtype=torch.bfloat16)
            packed = layers[shape]["packs"][0]
            for c in configs_for(shape, m) + [kern.wg_config(m)]:
                rc = kern.resolve_config(m, packed, c, xs[(shape, m)].device)
                if rc not in seen:
                    seen.add(rc)
                    jobs.append((packed, xs[(shape, m)], rc))
    print(_precompile(jobs), flush=True)

    rows, best, checked = [], {}, set()

    def point(shape, m, impl, fn, nbuf, **extra):
        try:
            res = bench_graph(fn, n_buffers=nbuf)
        except Exception as exc:  # noqa: BLE001
            print(f"{shape[0]}x{shape[1]} M={m:5d} {impl:44s} FAILED {type(exc).__name__}: {str(exc)[:150]}")
            rows.append(dict(case=f"{shape[0]}x{shape[1]} M={m}", impl=impl, error=str(exc)[:300], **extra))
            return None
        n, k = shape
        tflops = 2 * m * n * k / res["median_us"] / 1e6
        row = dict(case=f"{n}x{k} M={m}", n=n, k=k, m=m, impl=impl, median_us=round(res["median_us"], 2),
                   p20_us=round(res["p20_us"], 2), p80_us=round(res["p80_us"], 2), tflops=round(tflops, 1),
                   nbuf=nbuf, **extra)
        rows.append(row)
        tail = " ".join(f"{a}={b}" for a, b in extra.items() if a not in ("config",))
        print(f"{n}x{k} M={m:5d} {impl:44s} {res['median_us']:9.2f} us  {tflops:6.1f} TFLOP/s  {tail}", flush=True)
        return row

    over = False
    for shape in SHAPES:
        L = layers[shape]
        n, k = shape
        for m in args.ms:
            x = xs[(shape, m)]
            base = {}
            base["bf16"] = point(shape, m, "bf16 F.linear", lambda i: F.linear(x, L["bf"][i]), len(L["bf"]))
            auto = ops.w4a16_backend(x, L["packs"][0])
            base["auto"] = point(shape, m, f"qlinear auto ({auto})",
                                 lambda i: ops.w4a16_linear(x, L["packs"][i]), len(L["packs"]), backend=auto)
            base["wg_default"] = point(shape, m, "qlinear triton_wg (wg_config)",
                                       lambda i: ops.w4a16_linear(x, L["packs"][i], backend="triton_wg"),
                                       len(L["packs"]))
            for c in configs_for(shape, m):
                if time.time() - t_start > args.budget:
                    over = True
                    break
                rc = kern.resolve_config(m, L["packs"][0], c, x.device)
                err = None
                if (shape, rc) not in checked:
                    checked.add((shape, rc))
                    y = kern.w4a16_gemm(x, L["packs"][0], None, rc)
                    want = x.float() @ L["w"].T
                    err = round(((y.float() - want).norm() / want.norm()).item(), 5)
                r = point(shape, m, _label(rc), lambda i, rc=rc: kern.w4a16_gemm(x, L["packs"][i], None, rc),
                          len(L["packs"]), rel_err=err, config=_cfg_str(rc))
                if err is not None and err > 1e-2:
                    print(f"   ^ WRONG RESULT rel_err={err}")
                    continue
                if r and ((shape, m) not in best or r["median_us"] < best[(shape, m)]["median_us"]):
                    best[(shape, m)] = dict(r, bf16=base["bf16"], auto=base["auto"])

    print(f"\nBEST per (shape, M){' (sweep cut by --budget)' if over else ''}:")
    for (shape, m), r in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        bf = r["bf16"]["median_us"] if r.get("bf16") else float("nan")
        au = r["auto"]["median_us"] if r.get("auto") else float("nan")
        print(f"BEST {shape[0]}x{shape[1]} M={m:5d} {r['impl']:40s} {r['median_us']:8.2f} us | bf16 {bf:8.2f} "
              f"(x{r['median_us'] / bf:4.2f}) | current {r['auto']['impl'] if r.get('auto') else '?'} {au:8.2f} "
              f"(x{r['median_us'] / au:4.2f})  {r['config']}")
    for m in args.ms:
        wins = [(s, best[(s, m)]) for s in SHAPES if (s, m) in best]
        if wins:
            beats = sum(1 for _, r in wins if r.get("auto") and r["median_us"] < r["auto"]["median_us"])
            print(f"SUMMARY M={m}: wg beats the current path on {beats}/{len(wins)} shapes; beats bf16 on "
                  f"{sum(1 for _, r in wins if r.get('bf16') and r['median_us'] <= r['bf16']['median_us'])}/{len(wins)}")

    asm = _asm_report()
    for a in asm:
        ok = a.get("wgmma_ptx", 0) > 0 and a.get("a_from_registers", 0) > 0 and a.get("cp_async_x", 0) > 0
        print(f"ASM wg kernel w{a.get('num_warps')} s{a.get('num_stages')} {a.get('mma_layout', '')[-40:]}: "
              f"{'wgmma+regA+cp.async-x' if ok else 'NOT wgmma-regA-pipelined'} wgmma={a.get('wgmma_ptx')} "
              f"mma.sync={a.get('mma_sync_ptx')} regA={a.get('a_from_registers')} cp.async x/w="
              f"{a.get('cp_async_x')}/{a.get('cp_async_w')} waits={a.get('wgmma_wait_pendings')} "
              f"regs={a.get('regs')} spills={a.get('spills')} {a.get('error', '')}")
    meta = {"env": env_info(), "copy_ceiling_gbps": ceiling, "group_size": GROUP, "weights": "cold",
            "asm": asm, "best": {f"{s[0]}x{s[1]} M={m}": r["config"] for (s, m), r in best.items()},
            "wall_s": round(time.time() - t_start, 1)}
    path, _ = write_results("bench_w4a16wg", rows, meta, args.out, metric="median_us")
    print(f"wrote {path} ({time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
