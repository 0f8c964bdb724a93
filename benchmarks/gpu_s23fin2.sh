#!/usr/bin/env bash
# Session 23 final run 2 (after the 192-row table entries): the split-K GEMM and layer GPU tests, then
# the issue-5 acceptance benchmark (bench_linear --format w4a16: whole layer, GPTQ symmetric layer,
# cold weights, against bf16 F.linear and tinygemm in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s23fin2.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23fin2
gpu_pytest w4_tests ${GT_LIMIT:-150} tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_gpu.py
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
