#!/usr/bin/env bash
# RMSNorm gaps, round 4 (issue 3: contiguous 32768x7168 >= torch.compile, fused add 32768x7168
# >= 4100, kv_c / q_c / latency / 4096x7168 with the round-3 rules applied) on the GPU machine,
# <= ~120 s in all:
#   1. build of the CUDA extension (cold unless the caller's QLINEAR_BUILD_DIR holds it), timed;
#   2. GPU tests of what changed (the CUDA two-pass loop kernel = hints bit 32, the Triton
#      two-pass loop kernel = 5th config field R, the committed rules), <= 40 s;
#   3. benchmarks/bench_rms_norm.py --focus gaps3: torch.compile / F.rms_norm anchors, the public
#      API ("api -> what the committed dispatch runs"), CUDA knob and Triton config variants incl.
#      the loop kernels (Triton R {1024, 2048, 4096} x warps {4, 8, 16}; CUDA (vecs, threads, ..,
#      32)), 3 interleaved passes (median of the pass medians, [min-max] of the passes shown);
#      JSON in "$OUT/rms_norm_gaps3.json", a summary with the rule lines to set.
# Usage:  OUT=/some/dir bash benchmarks/gpu_rmsnorm.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
gpu_build rmsnorm
grep -iE "spill" "$OUT/rmsnorm_build.log" | grep -v " 0 bytes spill" | head -n 5

echo "== 2. GPU tests (changed kernels and dispatch)"
t0=$(date +%s)
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py \
    -k "loop_kernel or committed_rules or auto_backend or knob_rules or default_backend" \
    --junitxml="$OUT/rmsnorm_gpu_junit.xml" >"$OUT/rmsnorm_gpu_pytest.txt" 2>&1
test_rc=$?
grep -E "^(FAILED|ERROR)" "$OUT/rmsnorm_gpu_pytest.txt" | head -n 20
echo "gpu tests: $(tail -n 1 "$OUT/rmsnorm_gpu_pytest.txt") (rc=$test_rc, $(( $(date +%s) - t0 )) s)"

echo "== 3. gaps3 benchmark (interleaved passes)"
timeout 75 python benchmarks/bench_rms_norm.py --focus gaps3 --rounds "${RMSNORM_ROUNDS:-3}" \
    --budget-s "${RMSNORM_BUDGET_S:-55}" --out "$OUT" 2>&1 | tee "$OUT/rmsnorm_gaps3.txt"
bench_rc=${PIPESTATUS[0]}

echo "total wall: $(( $(date +%s) - t_all )) s (build rc=$build_rc, tests rc=$test_rc, bench rc=$bench_rc)"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
