#!/usr/bin/env bash
# FP8 block decode kernel with the shared-memory cp.async ring (issue 4, backend "cuda", the G digit
# of the config code, csrc/fp8_gemv.cuh): build, the kernel's GPU tests (register path + ring; one
# line per failure at the end), then benchmarks/bench_fp8_cuda.py --family ring: per shape x M
# (2112x7168, 24576x1536, 7168x16384, 1536x7168, 576x7168 x M 1 4 8 12 16) auto, triton, the
# committed table, the previous register winners and every ring candidate, graph replays
# alternated, cold weights. Prints BEST per case and SET lines (proposed FP8_CUDA_MAX_M /
# FP8_CUDA_CONFIG).      OUT=/some/dir bash benchmarks/gpu_fp8ring.sh   # <= ~170 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8ring
timeout 75 python -m pytest -v -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py \
    --junitxml="$OUT/fp8ring_junit.xml" > "$OUT/fp8ring_tests.log" 2>&1
tests_rc=$?
grep -E "^(FAILED|ERROR)|^E  .*(rel err|wrong|differs|died|Error|refused)" "$OUT/fp8ring_tests.log" | cut -c1-300 | head -n 40
tail -n 3 "$OUT/fp8ring_tests.log"
left=$(( 165 - ($(date +%s) - t_all) ))
[ "$left" -lt 30 ] && left=30
timeout "$left" python benchmarks/bench_fp8_cuda.py --family ring --name fp8_ring --reps 12 --replay-us 500 \
    --out "$OUT" > "$OUT/fp8ring_bench.log" 2>&1
bench_rc=$?
grep -E "BEST|merged|SET|ceiling|Error|error" "$OUT/fp8ring_bench.log" | head -n 80
echo "(all measurements: $OUT/fp8ring_bench.log, $(grep -c ' us (floor' "$OUT/fp8ring_bench.log") lines)"
echo "build rc=$build_rc (${build_s} s) tests rc=$tests_rc bench rc=$bench_rc total $(( $(date +%s) - t_all )) s"
gpu_cleanup
exit $(( build_rc != 0 || tests_rc != 0 || bench_rc != 0 ))
