#!/usr/bin/env bash
# Session 11's W4A16 check: the GEMM GPU tests (mma.sync and wgmma, with the wgmma auto dispatch), the
# public-op GPU tests (auto dispatch at M in {1 .. 4096} x the issue shapes x sym / asym / act-order),
# then bench_linear --format w4a16 (the issue-5 acceptance file).
#   OUT=/some/dir bash benchmarks/gpu_s11final.sh   # ~300 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s11final
gpu_pytest w4_tests ${W4T_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_gpu.py
timeout ${LIN_LIMIT:-300} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 24
gpu_cleanup
