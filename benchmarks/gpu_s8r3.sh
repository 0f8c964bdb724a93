#!/usr/bin/env bash
# Session 8, run 3: the FP8 CUDA tests and bench_linear --format fp8-block after the 2112x7168 / 576x7168
# table change (the issue-4 acceptance file), Nsight Compute of the W4A16 decode kernels, and
# bench_linear --format w4a16-asym at M = 1 / 4 / 16 (zero points: the table's measured case).
#   OUT=/some/dir bash benchmarks/gpu_s8r3.sh   # ~400 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s8r3
gpu_pytest fp8_tests 90 -x tests/gpu/test_fp8_cuda_gemv.py
timeout 200 python benchmarks/bench_linear.py --format fp8-block --ms 1 4 16 128 1024 4096 --out "$OUT" 2>&1 | tee "$OUT/linear_fp8.log" | grep -E "qlinear|rror"
gpu_ncu w4ncu 150 "reg_gemv|ring_gemv|bulk_gemv|mma_gemv" benchmarks/probe_w4a16_ncu.py
timeout 100 python benchmarks/bench_linear.py --format w4a16-asym --ms 1 4 16 --out "$OUT" 2>&1 | tee "$OUT/linear_w4asym.log" | grep -E "qlinear|rror"
gpu_cleanup
