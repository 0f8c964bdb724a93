#!/usr/bin/env bash
# Session 8, final run: bench_linear --format fp8-block (issue-4 acceptance file after the 24576x1536
# M <= 16 config), the W4A16 GEMM GPU tests (with the auto dispatch of cuda_gemm), and Nsight Compute
# of the W4A16 GEMM kernel (benchmarks/probe_w4a16_gemm_ncu.py).   OUT=/some/dir bash benchmarks/gpu_s8final.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s8final
gpu_pytest w4gemm_tests 60 tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_gpu.py -k "gemm or backend_choice"
timeout 200 python benchmarks/bench_linear.py --format fp8-block --ms 1 4 16 128 1024 4096 --out "$OUT" 2>&1 | tee "$OUT/linear_fp8.log" | grep -E "qlinear|rror"
gpu_ncu w4gemm_ncu 120 "w4_gemm_kernel" benchmarks/probe_w4a16_gemm_ncu.py
gpu_cleanup
