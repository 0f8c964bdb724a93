#!/usr/bin/env bash
# Session 19 run 7: the GEMM GPU tests after the tail split's revert, then where the wgmma W4A16 GEMM
# (spread reduction, vector epilogue, PDL) now stands against the dispatch outside its M ranges:
# 2112x7168 at M = 33 .. 64 (Triton there) and 256 / 512 (dequantize + cuBLAS), 24576x1536 at M = 1024.
#   OUT=/some/dir bash benchmarks/gpu_s19few.sh   # ~120 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe few 150 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 33 48 64 256 512 --shapes 2112x7168 \
    --wg-configs 64,0,4 128,0,4
gpu_cleanup
