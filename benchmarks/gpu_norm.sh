#!/usr/bin/env bash
# RMSNorm (issue 3) on the GPU machine, one command:
#   1. a cold build of the CUDA extension (fresh QLINEAR_BUILD_DIR), timed against the 30 s budget;
#   2. pytest tests/gpu/test_rms_norm_gpu.py (the issue's grid, both backends);
#   3. benchmarks/bench_rms_norm.py writing rms_norm.json / .png into "$OUT";
#   then a short summary. NORM_SWEEP=1 adds a CUDA configuration sweep (rms_norm_sweep.json);
#   NORM_NO_COMPILE=1 skips the torch.compile anchor (saves its compile time); NORM_TUNE=1 adds
#   the compact launch-configuration sweep (rms_norm_tune.json, < 100 s), also runnable alone:
#   python benchmarks/bench_rms_norm.py --focus tune --out "$OUT"
# Usage:  OUT=/some/dir bash benchmarks/gpu_norm.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
gpu_build norm
echo "{\"first_build_s\": $build_s, \"rc\": $build_rc}" >"$OUT/norm_build_time.json"

echo "== 2. GPU tests"
timeout 240 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py \
    --junitxml="$OUT/norm_gpu_junit.xml" >"$OUT/norm_gpu_pytest.txt" 2>&1
test_rc=$?
tail -n 25 "$OUT/norm_gpu_pytest.txt"

echo "== 3. benchmark"
bench_args=(--out "$OUT")
[ "${NORM_NO_COMPILE:-0}" = "1" ] && bench_args+=(--no-compile)
timeout 240 python benchmarks/bench_rms_norm.py "${bench_args[@]}" 2>&1 | tee "$OUT/norm_bench.txt"
bench_rc=${PIPESTATUS[0]}
if [ "${NORM_TUNE:-0}" = "1" ]; then
    timeout 150 python benchmarks/bench_rms_norm.py --focus tune --out "$OUT" 2>&1 | tee "$OUT/norm_tune.txt"
fi
if [ "${NORM_SWEEP:-0}" = "1" ]; then
    timeout 240 python benchmarks/bench_rms_norm.py --sweep --quick --no-compile --out "$OUT" \
        >"$OUT/norm_sweep.txt" 2>&1
    sed -n '/^best CUDA configuration/,$p' "$OUT/norm_sweep.txt"
fi

echo
echo "================ RMSNorm summary ================"
echo "first build      : ${build_s} s (rc=$build_rc, budget 30 s)"
echo "gpu tests        : $(grep -E '(passed|failed|error)' "$OUT/norm_gpu_pytest.txt" | tail -n 1) (rc=$test_rc)"
echo "benchmark        : rc=$bench_rc"
sed -n '/^case /,/^copy ceiling/p' "$OUT/norm_bench.txt"
echo "total wall       : $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
