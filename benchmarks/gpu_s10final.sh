#!/usr/bin/env bash
# Session 10's W4A16 check: the W4A16 GPU tests on the new dispatch tables (pipe 2), the CTA-balance
# probe of the register kernel at M = 1, then bench_linear --format w4a16 (the issue-5 acceptance file).
#   OUT=/some/dir bash benchmarks/gpu_s10final.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s10final
gpu_pytest w4_tests 240 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gpu.py
gpu_probe balance 90 "BALANCE|rror" benchmarks/probe_w4a16_balance.py
timeout 300 python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 24
gpu_cleanup
