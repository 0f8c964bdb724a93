#!/usr/bin/env bash
# Session 19 run 12 (the device budget's last ~250 s): the GEMM GPU tests (the only kernel that changed
# since run 11) and the issue-5 acceptance benchmark (bench_linear --format w4a16).
#   OUT=/some/dir bash benchmarks/gpu_s19final2.sh   # ~90 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-100} tests/gpu/test_w4a16_gemm_gpu.py
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 30
gpu_cleanup
