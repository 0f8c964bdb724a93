#!/usr/bin/env bash
# Issue 7, the FP8 MLA tail in ONE launch: rms_norm_slices(qkv, (0, 1536, 2048), (w_q, w_kv),
# quant_fp8=(True, False)) -> (q e4m3 + group scales, kv_c bf16), on the GPU machine (<= 90 s):
#   1. incremental build of the CUDA extension (csrc/norm_slices_quant*), timed;
#   2. pytest tests/gpu/test_mla_norm_quant_gpu.py;
#   3. CUDA-graph timing, qkv [M, 2112] bf16 rotated past L2, M in {1, 16, 128, 1024, 4096, 32768}:
#      "one" = the one-launch kernel (raw op, forced at every M; PDL on), "one-nopdl" = same without
#      PDL, "two" = rms_norm_quant_fp8(qkv[:, :1536]) + rms_norm(qkv[:, 1536:2048]) (the previous
#      fused tail, two launches), "public" = rms_norm_slices(quant_fp8=...) as dispatched
#      (SLICES_QUANT_ONE_LAUNCH_MAX_ROWS). JSON: "$OUT/mlanorm.json";
#   4. python benchmarks/bench_mla.py --formats fp8-block (end to end, fused vs unfused).
# Usage:  OUT=/some/dir bash benchmarks/gpu_mlanorm.sh
source "$(dirname "$0")/_gpu_build.sh"
gpu_build mlanorm

echo "== 2. GPU tests"
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_mla_norm_quant_gpu.py >"$OUT/mlanorm_pytest.txt" 2>&1
test_rc=$?
tail -n 12 "$OUT/mlanorm_pytest.txt"

echo "== 3. one-launch vs two-launch tail"
timeout 60 python - "$OUT" "$build_s" <<'PYEOF' 2>&1 | tee "$OUT/mlanorm_bench.txt"
import sys, time
import torch
sys.path.insert(0, "benchmarks")
from _timing import bench_graph, buffers_to_defeat_l2, env_info, write_results
from qlinear.kernels import cuda_ext
from qlinear.ops import norm as norm_ops
from qlinear.ops import rms_norm, rms_norm_quant_fp8, rms_norm_slices
from qlinear._utils import FP8_E4M3

out_dir, build_s = sys.argv[1], float(sys.argv[2])
t0 = time.time()
ext = cuda_ext.load()
W, Q, KV, EPS = 2112, 1536, 512, 1e-6
B = [0, Q, Q + KV]
g = torch.Generator(device="cuda").manual_seed(0)
w_q = (1 + 0.1 * torch.randn(Q, device="cuda", generator=g)).to(torch.bfloat16)
w_kv = (1 + 0.1 * torch.randn(KV, device="cuda", generator=g)).to(torch.bfloat16)
rows = []
print(f"public op: one launch below {norm_ops.SLICES_QUANT_ONE_LAUNCH_MAX_ROWS} rows")
for M in (1, 16, 128, 1024, 4096, 32768):
    moved = M * (Q + KV) * 2 + M * (Q + 12 * 4 + KV * 2)  # bytes read + written
    n = buffers_to_defeat_l2(M * W * 2 + moved, max_buffers=64)
    xs = [torch.randn(M, W, device="cuda", generator=g).to(torch.bfloat16) for _ in range(n)]
    q = torch.empty(M, Q, dtype=FP8_E4M3, device="cuda")
    s = torch.empty(M, 12, device="cuda")
    kv = torch.empty(M, KV, dtype=torch.bfloat16, device="cuda")
    impls = {
        "one": lambda i: ext.rms_norm_slices_quant([q, kv], [s, None], xs[i], B, [w_q, w_kv], EPS, 1e-10, 128, 0, 1),
        "one-nopdl": lambda i: ext.rms_norm_slices_quant([q, kv], [s, None], xs[i], B, [w_q, w_kv], EPS, 1e-10, 128, 0, 0),
        "two": lambda i: (rms_norm_quant_fp8(xs[i][:, :Q], w_q, EPS, 128), rms_norm(xs[i][:, Q:Q + KV], w_kv, EPS)),
        "public": lambda i: rms_norm_slices(xs[i], B, (w_q, w_kv), EPS, quant_fp8=(True, False)),
    }
    if M >= 1024:
        impls["one-w8"] = lambda i: ext.rms_norm_slices_quant([q, kv], [s, None], xs[i], B, [w_q, w_kv], EPS, 1e-10, 128, 8, 1)
    us = {}
    for name, fn in impls.items():
        t = bench_graph(fn, n_buffers=n)
        us[name] = t["median_us"]
        rows.append(dict(case=f"M={M}", m=M, impl=name, us=t["median_us"], p20_us=t["p20_us"], p80_us=t["p80_us"],
                         gbps=moved / (t["median_us"] * 1e-6) / 1e9, method=t["method"]))
    extra = f"  one-w8 {us['one-w8']:7.2f}" if "one-w8" in us else ""
    print(f"M={M:6d}: one-launch {us['one']:7.2f} us (no PDL {us['one-nopdl']:7.2f})  two-launch {us['two']:7.2f} us  "
          f"public {us['public']:7.2f} us  two/one {us['two'] / us['one']:5.2f}x{extra}", flush=True)
    del xs
    torch.cuda.empty_cache()
meta = env_info()
meta.update(build_s=build_s, shape="qkv [M, 2112] bf16; q 1536 -> e4m3 + scales, kv 512 -> bf16",
            timing="CUDA graph replay, median of 30", wall_s=time.time() - t0)
print("json:", write_results("mlanorm", rows, meta, out_dir, metric="us", label="impl", group="case")[0])
PYEOF
bench_rc=${PIPESTATUS[0]}

echo "== 4. bench_mla.py --formats fp8-block"
timeout 120 python benchmarks/bench_mla.py --formats fp8-block --out "$OUT" 2>&1 | tee "$OUT/mlanorm_mla.txt"
mla_rc=${PIPESTATUS[0]}

echo
echo "================ MLA FP8 tail summary ================"
echo "build       : ${build_s} s (rc=$build_rc)"
echo "gpu tests   : $(grep -E '(passed|failed|error)' "$OUT/mlanorm_pytest.txt" | tail -n 1) (rc=$test_rc)"
echo "benchmark   : rc=$bench_rc, bench_mla rc=$mla_rc"
echo "total wall  : $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ] && [ "$mla_rc" -eq 0 ]
