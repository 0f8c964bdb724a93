#!/usr/bin/env bash
# Session 19 run 1: the wgmma W4A16 GEMM's spread K-split reduction (reduce = 2: every CTA of a tile
# sums 1 / S of it after all S partials are stored; a cooperative launch) against the last-arrival
# sum (reduce = 1), at the M = 128 points of issue 5 and a few neighbours. Then the GEMM GPU tests.
#   OUT=/some/dir bash benchmarks/gpu_s19red.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe few 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 128 96 --shapes 2112x7168 \
    --wg-configs 128,7,4,1 128,7,4,2 128,6,4,2 128,4,4,2 64,3,8,1 64,3,8,2 64,4,8,1
gpu_probe many 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 64 128 --shapes 7168x16384 \
    --wg-configs 128,2,4,1 128,2,4,2 64,2,8,1 64,2,8,2
gpu_cleanup
