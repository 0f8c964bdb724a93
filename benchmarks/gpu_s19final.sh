#!/usr/bin/env bash
# Session 19, the W4A16 code as it lands: the W4A16 GPU tests (decode kernels, fold, GEMMs, layer
# tests), then the issue-5 acceptance benchmark (bench_linear --format w4a16: whole layer, GPTQ
# symmetric layer, cold weights, against bf16 F.linear and tinygemm in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s19final.sh   # ~330 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest w4_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gpu.py \
    tests/gpu/test_w4a16_gemm_gpu.py
timeout ${W4_LIMIT:-280} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 30
gpu_cleanup
