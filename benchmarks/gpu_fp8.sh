#!/usr/bin/env bash
# FP8 ops on the GPU machine: the GPU tests, then the op-level benchmark; everything lands in $OUT.
#   OUT=/some/dir bash benchmarks/gpu_fp8.sh
#   OUT=/some/dir FP8_BENCH_ARGS="--focus small-m" bash benchmarks/gpu_fp8.sh   # small-M sweep only
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/fp8_gpu_info.csv" 2>&1 || true
python -m pytest tests/gpu/test_fp8_gpu.py -q --junitxml="$OUT/fp8_gpu_tests.xml" -p no:cacheprovider \
    2>&1 | tail -n 40 | tee "$OUT/fp8_gpu_tests.txt"
tests_rc=${PIPESTATUS[0]}
python benchmarks/bench_fp8.py --out "$OUT" ${FP8_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_fp8.log" | tail -n 60
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
