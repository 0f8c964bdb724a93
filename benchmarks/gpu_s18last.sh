#!/usr/bin/env bash
# Session 18 run 6, the code as it lands: the FP8 Triton GPU tests (k_unroll, the mask helper of
# both GEMM kernels, the fixed auto-backend test), then bench_linear --format fp8-block (the
# issue-4 acceptance file).
#   OUT=/some/dir bash benchmarks/gpu_s18last.sh   # ~300 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s18last
gpu_pytest fp8_tests 230 tests/gpu/test_fp8_swapab_gpu.py tests/gpu/test_fp8_gpu.py
timeout ${FP8_LIMIT:-170} python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
