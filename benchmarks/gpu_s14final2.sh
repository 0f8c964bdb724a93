#!/usr/bin/env bash
# Session 14, after the W4A16 dispatch change (many-row layers: wgmma GEMM from M = 33, the mma.sync
# GEMM up to M = 32): the W4A16 GEMM / public-op GPU tests, then the issue-5 acceptance benchmark
# (bench_linear --format w4a16) at every M.
#   OUT=/some/dir bash benchmarks/gpu_s14final2.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14final2
gpu_pytest w4_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_wgmma_gpu.py \
    tests/gpu/test_w4a16_gpu.py
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 30
timeout ${W4_LIMIT:-100} python benchmarks/bench_linear.py --format w4a16 --ms 32 33 48 --out "$OUT/mid" 2>&1 | tail -n 9
gpu_cleanup
