"""RMSNorm benchmark (issue 3): qlinear's CUDA and Triton backends against torch ``F.rms_norm``,
``torch.compile`` of the fp32 reference, and Liger / FlashInfer when they are importable.

Cases (bf16, from the issue's table, at 32768 and 4096 tokens, plus 16-token latency):
contiguous x7168, strided q_c x1536 and kv_c x512 (row stride 2112, normalized in place as a
model does), fused add x7168, fused add with a strided q_c x1536. Reports median / p20 / p80
microseconds (CUDA-graph replay, inputs rotated when they would fit in L2), GB/s (bytes that
must move: read x [+ residual], write out [+ residual], the weight once) and % of a
device-to-device copy measured in the same run. Writes ``rms_norm.json`` and ``rms_norm.png``
to ``--out`` (default benchmarks/results/).

    python benchmarks/bench_rms_norm.py [--out DIR] [--quick] [--no-compile] [--hot-l2]
    python benchmarks/bench_rms_norm.py --sweep --quick --no-compile --out DIR   # tune the CUDA plan
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results  # noqa: E402

from qlinear.ops.norm import fused_add_rms_norm, rms_norm  # noqa: E402
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref  # noqa: E402

EPS = 1e-6
DTYPE = torch.bfloat16
FUSED_ROW = 2112  # DeepSeek MLA fused projection width: q_c = [:, :1536], kv_c = [:, 1536:2048]

# issue targets on H200 (GB/s, or us for the latency case)
TARGETS = {
    "contig 32768x7168": ("gbps", 3950.0),
    "q_c 32768x1536 s2112": ("gbps", 3800.0),
    "kv_c 32768x512 s2112": ("gbps", 3000.0),
    "fused 32768x7168": ("gbps", 4100.0),
    "latency 16x7168": ("us", 1.8),
    "latency 16x7168 hot-L2": ("us", 1.8),
}


@dataclass
class Case:
    name: str
    tokens: int
    hidden: int
    col: int | None  # column offset inside a [T, 2112] buffer; None: contiguous x
    fused: bool

    @property
    def bytes_moved(self) -> int:
        n = self.tokens * self.hidden * 2
        return (4 * n if self.fused else 2 * n) + self.hidden * 2


def make_cases(quick: bool) -> list[Case]:
    cases = []
    for t in (32768,) if quick else (32768, 4096):
        cases += [
            Case(f"contig {t}x7168", t, 7168, None, False),
            Case(f"q_c {t}x1536 s2112", t, 1536, 0, False),
            Case(f"kv_c {t}x512 s2112", t, 512, 1536, False),
            Case(f"fused {t}x7168", t, 7168, None, True),
            Case(f"fused q_c {t}x1536 s2112", t, 1536, 0, True),
        ]
    cases.append(Case("latency 16x7168", 16, 7168, None, False))
    cases.append(Case("latency 16x7168 hot-L2", 16, 7168, None, False))
    return cases


def make_inputs(case: Case, n: int) -> list[dict[str, torch.Tensor]]:
    sets = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for _ in range(n):
        if case.col is None:
            x = torch.randn(case.tokens, case.hidden, device="cuda", dtype=DTYPE, generator=g)
        else:
            buf = torch.randn(case.tokens, FUSED_ROW, device="cuda", dtype=DTYPE, generator=g)
            x = buf[:, case.col : case.col + case.hidden]
            assert not x.is_contiguous()
        d = {"x": x, "out": torch.empty(case.tokens, case.hidden, device="cuda", dtype=DTYPE)}
        if case.fused:
            d["r"] = torch.randn(case.tokens, case.hidden, device="cuda", dtype=DTYPE, generator=g)
        sets.append(d)
    return sets


def implementations(case: Case, use_compile: bool) -> dict[str, object]:
    """name -> fn(inputs_dict) for this case; anchors that are not installed are left out."""
    w = torch.randn(case.hidden, device="cuda", dtype=DTYPE) * 0.1 + 1
    impls: dict[str, object] = {}
    inplace = case.col is not None  # the model normalizes the q / kv slices in place
    for backend in ("cuda", "triton"):
        if case.fused:
            impls[f"qlinear-{backend}"] = lambda d, b=backend: fused_add_rms_norm(d["x"], d["r"], w, EPS, backend=b)
        else:
            impls[f"qlinear-{backend}"] = lambda d, b=backend: rms_norm(
                d["x"], w, EPS, out=d["x"] if inplace else d["out"], backend=b)
    if not case.fused:
        impls["torch F.rms_norm"] = lambda d: F.rms_norm(d["x"], (case.hidden,), w, EPS)
    if use_compile:
        if case.fused:
            def fused_ref(x, r):
                out, new_r = fused_add_rms_norm_ref(x, r, w, EPS)
                r.copy_(new_r)
                x.copy_(out)

            c = torch.compile(fused_ref, dynamic=False)
            impls["torch.compile(ref)"] = lambda d: c(d["x"], d["r"])
        else:
            c = torch.compile(lambda x: rms_norm_ref(x, w, EPS), dynamic=False)
            impls["torch.compile(ref)"] = lambda d: c(d["x"])
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction

        if not case.fused:
            impls["liger"] = lambda d: LigerRMSNormFunction.apply(d["x"], w, EPS)
    except ImportError:
        pass
    try:
        import flashinfer.norm as fi

        if case.fused:
            impls["flashinfer"] = lambda d: fi.fused_add_rmsnorm(d["x"], d["r"], w, EPS)
        else:
            impls["flashinfer"] = lambda d: fi.rmsnorm(d["x"], w, EPS, out=d["out"])
    except ImportError:
        pass
    impls["_weight"] = w
    return impls


def check(case: Case, name: str, fn, inputs: dict[str, torch.Tensor], w: torch.Tensor) -> str:
    """Run once on copies and compare with the reference (loose bf16 tolerance)."""
    d = {k: v.clone() for k, v in inputs.items()}
    if case.col is not None:  # keep the strided layout
        buf = torch.empty(case.tokens, FUSED_ROW, device="cuda", dtype=DTYPE)
        buf[:, case.col : case.col + case.hidden] = inputs["x"]
        d["x"] = buf[:, case.col : case.col + case.hidden]
    x0 = d["x"].clone()
    try:
        res = fn(d)
        if case.fused:
            out_ref, r_ref = fused_add_rms_norm_ref(x0, inputs["r"], w, EPS)
            torch.testing.assert_close(d["r"], r_ref, rtol=2e-2, atol=2e-2)
            got = d["x"]
        else:
            out_ref = rms_norm_ref(x0, w, EPS)
            got = res if isinstance(res, torch.Tensor) else d["out"]
        torch.testing.assert_close(got.float(), out_ref.float(), rtol=2e-2, atol=2e-2)
        return "ok"
    except Exception as exc:  # report, keep benchmarking the others
        return f"FAIL: {type(exc).__name__}: {str(exc)[:200]}"


def sweep_configs(case: Case) -> list[tuple[int, int, int]]:
    vw = 8
    nvec = case.hidden // vw
    configs = []
    for nv in (1, 2, 4, 8):
        tpr = 1
        while tpr * nv < nvec:
            tpr *= 2
        for t in (tpr, tpr * 2):
            if t <= 1024:
                for rpb in {1, max(1, 256 // t), max(1, 128 // t)}:
                    if rpb * t <= 1024:
                        configs.append((nv, t, rpb))
    configs.append((-1, 0, 0))  # generic kernel, auto threads
    return sorted(set(configs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="output folder (default benchmarks/results)")
    ap.add_argument("--quick", action="store_true", help="32768-token cases and latency only")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile of the reference")
    ap.add_argument("--sweep", action="store_true",
                    help="only time CUDA kernel configurations (writes rms_norm_sweep.json)")
    ap.add_argument("--hot-l2", action="store_true", help="do not rotate inputs (L2-resident small cases)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to benchmark")
        return 0
    t_start = time.time()
    torch._dynamo.config.cache_size_limit = 64

    from qlinear.kernels import cuda_ext

    t0 = time.time()
    cuda_ok = cuda_ext.is_available()
    build_s = time.time() - t0
    print(f"cuda extension: {'ok' if cuda_ok else cuda_ext.failure_reason()} ({build_s:.1f} s to load/build)")

    ceiling = copy_ceiling_gbps()
    meta = dict(env_info(), copy_ceiling_gbps=ceiling, dtype=str(DTYPE), eps=EPS,
                cuda_ext_load_s=build_s, timing="CUDA-graph replay, median of 30 replays")
    print(f"copy ceiling: {ceiling:.0f} GB/s on {meta['gpu']}")
    rows: list[dict] = []
    for case in make_cases(args.quick):
        hot = args.hot_l2 or case.name.endswith("hot-L2")
        n_buf = 1 if hot else buffers_to_defeat_l2(case.bytes_moved)
        sets = make_inputs(case, n_buf)
        impls = implementations(case, not args.no_compile)
        w = impls.pop("_weight")
        if not cuda_ok:
            impls.pop("qlinear-cuda")
        if args.sweep:
            impls = {}
        for name, fn in impls.items():
            status = check(case, name, fn, sets[0], w) if name.startswith("qlinear") else "anchor"
            try:
                t = bench_graph(lambda i, fn=fn: fn(sets[i]), n_buffers=n_buf)
            except Exception as exc:
                print(f"  {case.name:28s} {name:20s} failed: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            gbps = case.bytes_moved / (t["median_us"] * 1e-6) / 1e9
            rows.append(dict(case=case.name, tokens=case.tokens, hidden=case.hidden,
                             row_stride=FUSED_ROW if case.col is not None else case.hidden, fused=case.fused,
                             impl=name, gbps=gbps, pct_ceiling=100 * gbps / ceiling, n_buffers=n_buf,
                             check=status, **t))
            print(f"  {case.name:28s} {name:20s} {t['median_us']:9.2f} us {gbps:7.0f} GB/s "
                  f"{100 * gbps / ceiling:5.1f}%  {status}")
        if args.sweep and cuda_ok:
            ops = cuda_ext.load()
            for nv, tpr, rpb in sweep_configs(case):
                def fn(i, nv=nv, tpr=tpr, rpb=rpb):
                    d = sets[i]
                    if case.fused:
                        ops.fused_add_rms_norm(d["x"][None], d["r"][None], w, EPS, nv, tpr, rpb)
                    else:
                        o = d["x"] if case.col is not None else d["out"]
                        ops.rms_norm(o[None], d["x"][None], w, EPS, nv, tpr, rpb)
                t = bench_graph(fn, n_buffers=n_buf, reps=15)
                gbps = case.bytes_moved / (t["median_us"] * 1e-6) / 1e9
                rows.append(dict(case=case.name, impl=f"sweep nv={nv} tpr={tpr} rpb={rpb}", gbps=gbps,
                                 pct_ceiling=100 * gbps / ceiling, sweep=True, **t))
        del sets
        torch.cuda.empty_cache()

    meta["wall_s"] = time.time() - t_start
    json_path, png_path = write_results("rms_norm_sweep" if args.sweep else "rms_norm", rows, meta, args.out)
    print_summary(rows, ceiling)
    print(f"wrote {json_path}" + (f" and {png_path}" if png_path else "") + f" in {meta['wall_s']:.0f} s")
    return 0


def print_summary(rows: list[dict], ceiling: float) -> None:
    main_rows = [r for r in rows if not r.get("sweep")]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    print(f"\n{'case':28s} {'cuda':>14s} {'triton':>14s} {'best anchor':>28s} {'target':>10s}  verdict")
    for c in cases:
        rs = {r["impl"]: r for r in main_rows if r["case"] == c}
        if not rs:
            continue
        latency = c.startswith("latency")

        def fmt(r):
            if r is None:
                return "-"
            return f"{r['median_us']:.2f}us" if latency else f"{r['gbps']:.0f}GB/s"

        anchors = [r for n, r in rs.items() if not n.startswith("qlinear")]
        best = min(anchors, key=lambda r: r["median_us"]) if anchors else None
        ours = [r for n, r in rs.items() if n.startswith("qlinear")]
        mine = min(ours, key=lambda r: r["median_us"]) if ours else None
        target = TARGETS.get(c)
        verdict = []
        if mine and best:
            verdict.append("beats anchors" if mine["median_us"] <= best["median_us"] else "SLOWER than anchor")
        if mine and target:
            kind, val = target
            ok = mine["median_us"] <= val if kind == "us" else mine["gbps"] >= val
            verdict.append(("meets" if ok else "MISSES") + f" target {val:g}{'us' if kind == 'us' else 'GB/s'}")
        best_txt = f"{best['impl']} {fmt(best)}" if best else "-"
        print(f"{c:28s} {fmt(rs.get('qlinear-cuda')):>14s} {fmt(rs.get('qlinear-triton')):>14s} "
              f"{best_txt:>28s} {str(target[1]) if target else '':>10s}  {', '.join(verdict)}")
    sweep = [r for r in rows if r.get("sweep")]
    if sweep:
        print("\nbest CUDA configuration per case (sweep):")
        for c in cases:
            cand = [r for r in sweep if r["case"] == c]
            if cand:
                b = min(cand, key=lambda r: r["median_us"])
                print(f"  {c:28s} {b['impl']:32s} {b['median_us']:8.2f} us {b['gbps']:7.0f} GB/s")
    print(f"copy ceiling {ceiling:.0f} GB/s")


if __name__ == "__main__":
    sys.exit(main())
