#!/usr/bin/env bash
# Multi-slice RMSNorm (issue 7: DeepSeek MLA's q_c / kv_c in one launch), on the GPU machine in one
# command (<= 60 s including the build):
#   1. build of the CUDA extension (reuses a caller's QLINEAR_BUILD_DIR, else a fresh one), timed;
#   2. pytest tests/gpu/test_rms_norm_slices_gpu.py;
#   3. timing, CUDA graphs, bf16, x = [M, 2112], slices (0, 1536, 2048), M in {1, 16, 4096}:
#      one rms_norm_slices call vs two rms_norm calls on the same strided slices, public ops
#      (default knobs) and raw ops with PDL on / off and a few launch configurations.
#      Bytes = the two slices read + written (M * 2048 * 2 * 2). JSON: "$OUT/normslices.json".
#   NORMSLICES_MLA=1 also runs benchmarks/bench_mla.py --formats bf16 w4a16 (the end-to-end
#   fused-vs-unfused speedup; takes longer than the 60 s budget).
# Usage:  OUT=/some/dir bash benchmarks/gpu_normslices.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
gpu_build normslices

echo "== 2. GPU tests"
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_slices_gpu.py \
    >"$OUT/normslices_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/normslices_pytest.txt"

echo "== 3. benchmark"
timeout 40 python - "$OUT" "$build_s" <<'PYEOF' 2>&1 | tee "$OUT/normslices_bench.txt"
import sys, time
import torch
sys.path.insert(0, "benchmarks")
from _timing import bench_graph, buffers_to_defeat_l2, copy_ceiling_gbps, env_info, write_results
from qlinear.kernels import cuda_ext
from qlinear.ops import rms_norm, rms_norm_slices

out_dir, build_s = sys.argv[1], float(sys.argv[2])
t_start = time.time()
ext = cuda_ext.load()
W, Q, KV, EPS = 2112, 1536, 512, 1e-6
BOUNDS = (0, Q, Q + KV)
ceiling = copy_ceiling_gbps()
print(f"copy ceiling {ceiling:8.1f} GB/s")
g = torch.Generator(device="cuda").manual_seed(0)
w_q = (1 + 0.1 * torch.randn(Q, device="cuda", generator=g)).to(torch.bfloat16)
w_kv = (1 + 0.1 * torch.randn(KV, device="cuda", generator=g)).to(torch.bfloat16)
PDL_OFF, PDL_ON = (0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 1, 0, 0)  # rms_norm knobs (NormConfig order)
rows = []
for M in (1, 16, 4096):
    nbytes = M * (Q + KV) * 2 * 2
    n = buffers_to_defeat_l2(M * W * 2 + nbytes // 2, max_buffers=64)
    xs = [torch.randn(M, W, device="cuda", generator=g).to(torch.bfloat16) for _ in range(n)]
    x3s = [x.view(1, M, W) for x in xs]
    oq, okv = torch.empty(1, M, Q, device="cuda", dtype=torch.bfloat16), torch.empty(1, M, KV, device="cuda", dtype=torch.bfloat16)

    def raw_slices(knobs):
        return lambda i: ext.rms_norm_slices([oq, okv], x3s[i], list(BOUNDS), [w_q, w_kv], EPS, *knobs)

    def raw_two(knobs):
        def fn(i):
            ext.rms_norm(oq, x3s[i][..., :Q], w_q, EPS, *knobs)
            ext.rms_norm(okv, x3s[i][..., Q:Q + KV], w_kv, EPS, *knobs)
        return fn

    impls = [
        ("slices (public op)", lambda i: rms_norm_slices(xs[i], BOUNDS, (w_q, w_kv), EPS, backend="cuda")),
        ("2x rms_norm (public op)", lambda i: (rms_norm(xs[i][:, :Q], w_q, EPS, backend="cuda"),
                                               rms_norm(xs[i][:, Q:Q + KV], w_kv, EPS, backend="cuda"))),
        ("slices in place (public op)", lambda i: rms_norm_slices(xs[i], BOUNDS, (w_q, w_kv), EPS, inplace=True, backend="cuda")),
        ("slices raw pdl=0", raw_slices((0, 0, 0))),
        ("slices raw pdl=1", raw_slices((0, 0, 1))),
        ("2x rms_norm raw pdl=0", raw_two(PDL_OFF)),
        ("2x rms_norm raw pdl=1", raw_two(PDL_ON)),
        ("slices raw vecs=1", raw_slices((1, 0, 0))),
        ("slices raw vecs=4", raw_slices((4, 0, 0))),
        ("slices raw elementwise", raw_slices((-1, 0, 0))),
    ]
    if M >= 4096:
        impls += [("slices raw block=128", raw_slices((0, 128, 0))), ("slices raw block=512", raw_slices((0, 512, 0)))]
    base = {}
    for name, fn in impls:
        t = bench_graph(fn, n_buffers=n)
        us = t["median_us"]
        base.setdefault("two" if name.startswith("2x") else "slices", us)
        gbps = nbytes / (us * 1e-6) / 1e9
        rows.append(dict(case=f"M={M}", m=M, impl=name, us=us, p20_us=t["p20_us"], p80_us=t["p80_us"], gbps=gbps,
                         frac_copy=gbps / ceiling, method=t["method"]))
        print(f"M={M:5d} {name:30s} {us:8.2f} us (p20 {t['p20_us']:7.2f}, p80 {t['p80_us']:7.2f}) "
              f"{gbps:7.0f} GB/s {gbps / ceiling:5.3f} of copy", flush=True)
    sp = base["two"] / base["slices"]
    rows.append(dict(case=f"M={M}", m=M, impl="speedup public slices vs 2x rms_norm", speedup=sp))
    print(f"M={M:5d} speedup of one slices call over two rms_norm calls (public ops): {sp:5.2f}x")
    del xs, x3s
    torch.cuda.empty_cache()

meta = env_info()
meta.update(copy_ceiling_gbps=ceiling, build_s=build_s, shape="x [M, 2112] bf16, slices (0, 1536, 2048)",
            bytes="both slices read + written, bf16", timing="CUDA graph replay, median of 30",
            wall_s=time.time() - t_start)
print("json:", write_results("normslices", rows, meta, out_dir, metric="us", label="impl", group="case")[0])
PYEOF
bench_rc=${PIPESTATUS[0]}

mla_rc=0
if [ "${NORMSLICES_MLA:-0}" = 1 ]; then
  echo "== 4. MLA pipeline (bench_mla.py, bf16 + w4a16)"
  timeout 300 python benchmarks/bench_mla.py --out "$OUT" --formats bf16 w4a16 2>&1 | tee "$OUT/normslices_mla.txt"
  mla_rc=${PIPESTATUS[0]}
fi

echo
echo "================ rms_norm_slices summary ================"
echo "build       : ${build_s} s (rc=$build_rc)"
echo "gpu tests   : $(grep -E '(passed|failed|error)' "$OUT/normslices_pytest.txt" | tail -n 1) (rc=$test_rc)"
echo "benchmark   : rc=$bench_rc; $(grep -c 'speedup of one' "$OUT/normslices_bench.txt" 2>/dev/null) speedup lines above"
echo "total wall  : $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ] && [ "$mla_rc" -eq 0 ]
