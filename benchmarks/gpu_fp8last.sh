#!/usr/bin/env bash
# Issue 4 acceptance after the 24576x1536 swap-AB entry: FP8 CUDA and swap-AB GPU tests (CPU-side
# reference), then bench_linear --format fp8-block (interleaved timing).
#   OUT=/some/dir bash benchmarks/gpu_fp8last.sh   # ~120 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8last
gpu_pytest fp8_cuda_tests 120 tests/gpu/test_fp8_cuda_gemv.py
gpu_pytest fp8_swapab_tests 90 tests/gpu/test_fp8_swapab_gpu.py
timeout 200 python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 24
gpu_cleanup
