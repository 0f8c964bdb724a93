#!/usr/bin/env bash
# RMSNorm gaps, round 2 (issue 3: 16x7168 latency, contiguous 32768x7168, kv_c 32768x512 stride 2112
# out of place; q_c, fused add, 4096x7168 and kv_c 4096 as no-regression checks) on the GPU
# machine, <= ~145 s in all:
#   1. build of the CUDA extension (cold unless the caller's QLINEAR_BUILD_DIR holds it), timed;
#   2. GPU tests of what changed (weight before the PDL wait, persistent kernel, the shared
#      reduction every CUDA kernel uses, Triton eviction-hint configs, AUTO_BACKEND_RULES), <= 45 s;
#   3. benchmarks/bench_rms_norm.py --focus gaps2: torch.compile / F.rms_norm anchors, the public
#      API ("api" = committed dispatch), CUDA knob and Triton config variants; JSON in
#      "$OUT/rms_norm_gaps2.json", one line per measurement, a summary with the table lines to set.
# Usage:  OUT=/some/dir bash benchmarks/gpu_rmsnorm.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
gpu_build rmsnorm
grep -iE "spill" "$OUT/rmsnorm_build.log" | grep -v " 0 bytes spill" | head -n 5

echo "== 2. GPU tests (changed kernels and dispatch)"
t0=$(date +%s)
timeout 45 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py \
    -k "prefetch_before_wait or persistent or triton_configs or auto_backend or pdl_chain or knob_rules or (test_grid and cuda and 4096 and not 8199) or (forced_cuda_configs and 1536) or default_backend or torch_compile" \
    --junitxml="$OUT/rmsnorm_gpu_junit.xml" >"$OUT/rmsnorm_gpu_pytest.txt" 2>&1
test_rc=$?
grep -E "^(FAILED|ERROR)" "$OUT/rmsnorm_gpu_pytest.txt" | head -n 20
echo "gpu tests: $(tail -n 1 "$OUT/rmsnorm_gpu_pytest.txt") (rc=$test_rc, $(( $(date +%s) - t0 )) s)"

echo "== 3. gaps2 benchmark"
timeout 85 python benchmarks/bench_rms_norm.py --focus gaps2 --budget-s "${RMSNORM_BUDGET_S:-65}" --out "$OUT" \
    2>&1 | tee "$OUT/rmsnorm_gaps2.txt"
bench_rc=${PIPESTATUS[0]}

echo "total wall: $(( $(date +%s) - t_all )) s (build rc=$build_rc, tests rc=$test_rc, bench rc=$bench_rc)"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
