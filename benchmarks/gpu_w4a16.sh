#!/usr/bin/env bash
# W4A16 / W8A16 ops on the GPU machine: the GPU tests, then the op-level benchmark; all into $OUT.
#   OUT=/some/dir bash benchmarks/gpu_w4a16.sh
# Decode round (a few GPU tests + the < 100 s focused benchmark, ~3 min in all):
#   OUT=/some/dir W4A16_TEST_ARGS="-k 'dequantize_versions or backend_choice or cuda_graph'" \
#     W4A16_BENCH_ARGS="--focus decode" bash benchmarks/gpu_w4a16.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
eval python -m pytest tests/gpu/test_w4a16_gpu.py -q ${W4A16_TEST_ARGS:-} --junitxml="$OUT/w4a16_gpu_tests.xml" -p no:cacheprovider \
    2>&1 | tail -n 40 | tee "$OUT/w4a16_gpu_tests.txt"
tests_rc=${PIPESTATUS[0]}
python benchmarks/bench_w4a16.py --out "$OUT" ${W4A16_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_w4a16.log" | tail -n 60
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
