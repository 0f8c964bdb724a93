#!/usr/bin/env bash
# Session 14, the code as it lands (product code of 2099c34): PART=tests runs every GPU test file;
# PART=linear refreshes the two acceptance files (bench_linear --format fp8-block / w4a16, whole layer,
# cold weights, against bf16 F.linear and the per-format anchors in the same run).
#   OUT=/some/dir PART=tests bash benchmarks/gpu_s14final.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14final
if [ "${PART:-tests}" = tests ]; then
  gpu_pytest gpu_tests ${GT_LIMIT:-420} -rs tests/gpu
  grep -E "passed|failed|error" "$OUT/gpu_tests.txt" | tail -n 3
else
  timeout ${FP8_LIMIT:-220} python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 30
  timeout ${W4_LIMIT:-300} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 30
fi
gpu_cleanup
