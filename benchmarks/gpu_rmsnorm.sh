#!/usr/bin/env bash
# RMSNorm gaps, round 3 (issue 3: every case at or above its anchor; fused add 32768x7168 >= 4100,
# contiguous 32768x7168 >= torch.compile, kv_c 32768/4096 x512 stride 2112 out of place >= compile,
# 16x7168 <= 1.8 us; q_c and 4096x7168 as checks) on the GPU machine, <= ~150 s in all:
#   1. build of the CUDA extension (cold unless the caller's QLINEAR_BUILD_DIR holds it), timed;
#   2. GPU tests of what changed (one-row-per-block kernel with 448 / 896 threads, the selectable
#      shuffle reduction, the constant-H Triton rows kernel and 1-warp configs, the committed
#      rules), <= 45 s;
#   3. benchmarks/bench_rms_norm.py --focus gaps3: torch.compile / F.rms_norm anchors, the public
#      API ("api -> what the committed dispatch runs"), CUDA knob and Triton config variants, each
#      timed in 3 interleaved passes (median of the pass medians, [min-max] of the passes shown);
#      JSON in "$OUT/rms_norm_gaps3.json", inductor's generated kernels in "$OUT/inductor_*.py",
#      a summary with the rule lines to set.
# Usage:  OUT=/some/dir bash benchmarks/gpu_rmsnorm.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
gpu_build rmsnorm
grep -iE "spill" "$OUT/rmsnorm_build.log" | grep -v " 0 bytes spill" | head -n 5

echo "== 2. GPU tests (changed kernels and dispatch)"
t0=$(date +%s)
timeout 45 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py \
    -k "row_kernel or static_rows or committed_rules or auto_backend or knob_rules or pdl_chain or default_backend or (forced_cuda_configs and 1536)" \
    --junitxml="$OUT/rmsnorm_gpu_junit.xml" >"$OUT/rmsnorm_gpu_pytest.txt" 2>&1
test_rc=$?
grep -E "^(FAILED|ERROR)" "$OUT/rmsnorm_gpu_pytest.txt" | head -n 20
echo "gpu tests: $(tail -n 1 "$OUT/rmsnorm_gpu_pytest.txt") (rc=$test_rc, $(( $(date +%s) - t0 )) s)"

echo "== 3. gaps3 benchmark (interleaved passes)"
timeout 90 python benchmarks/bench_rms_norm.py --focus gaps3 --rounds "${RMSNORM_ROUNDS:-3}" \
    --budget-s "${RMSNORM_BUDGET_S:-70}" --out "$OUT" 2>&1 | tee "$OUT/rmsnorm_gaps3.txt"
bench_rc=${PIPESTATUS[0]}

echo "total wall: $(( $(date +%s) - t_all )) s (build rc=$build_rc, tests rc=$test_rc, bench rc=$bench_rc)"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
